// Package agenttest has test helpers for code that runs agents: readers
// of an agent's session through its actor (agent.Agent.Snapshot and
// Status) that fail the test on error, and a tool and model for runs cut
// off in the middle of a tool.
package agenttest

import (
	"context"
	"testing"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// Snapshot returns a's snapshot.
func Snapshot(t testing.TB, a *agent.Agent) *agent.Snapshot {
	t.Helper()
	s, err := a.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("snapshot of agent %q: %v", a.ID(), err)
	}
	return s
}

// Status returns a's status.
func Status(t testing.TB, a *agent.Agent) agent.Status {
	t.Helper()
	s, err := a.Status(context.Background())
	if err != nil {
		t.Fatalf("status of agent %q: %v", a.ID(), err)
	}
	return s
}

// Messages returns a's committed history.
func Messages(t testing.TB, a *agent.Agent) []model.Message {
	t.Helper()
	return Snapshot(t, a).Messages
}

// State returns a copy of a's key/value state.
func State(t testing.TB, a *agent.Agent) *agent.State {
	t.Helper()
	return agent.StateOf(Snapshot(t, a).State)
}

// Interrupted reports whether a waits for interrupt responses.
func Interrupted(t testing.TB, a *agent.Agent) bool {
	t.Helper()
	return Status(t, a).Interrupted()
}

// Interrupts returns the interrupts a waits for.
func Interrupts(t testing.TB, a *agent.Agent) []interrupt.Interrupt {
	t.Helper()
	return Status(t, a).Interrupts
}

// Incomplete reports whether a holds cut-off work.
func Incomplete(t testing.TB, a *agent.Agent) bool {
	t.Helper()
	return Status(t, a).Incomplete()
}
