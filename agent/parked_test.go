package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// deferringSession is what a node gives its agent (package agentnode):
// the session manager, with the agent's durable saves parked for the
// orchestrator's commit (SPEC M10).
type deferringSession struct {
	*persistence.SessionManager
	sess atomic.Pointer[persistence.AgentSession]
}

func (d *deferringSession) OpenAgent(ctx context.Context, id string) (*persistence.AgentSession, *persistence.AgentRecord, error) {
	s, rec, err := d.SessionManager.OpenAgent(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	s.DeferDurable()
	d.sess.Store(s)
	return s, rec, nil
}

// SPEC R4, M10: an agent whose invocation's save is parked for its
// orchestrator's commit holds what is in no store yet, so its idle
// timeout does not passivate it (that would lose the save); once the
// save is taken and committed it passivates, and comes back from the
// store with its history. A second agent with the same idle timeout,
// invoked after the first one's last message, is the clock: while it
// passivates three times, the parked agent stays live.
func TestAgentActor_ParkedSaveKeepsTheAgentActive(t *testing.T) {
	ctx := context.Background()
	passivated := make(chan actors.Identity, 16)
	sys, err := actors.NewSystem(actors.Config{Observer: func(id actors.Identity, l actors.Lifecycle) {
		if l == actors.Passivated {
			passivated <- id
		}
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	sm, err := persistence.NewSessionManager(memory.New(), "parked")
	require.NoError(t, err)
	answer := func() model.Model {
		return model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("answer"), nil })
	}
	const idle = 5 * time.Millisecond
	ds := &deferringSession{SessionManager: sm}
	a := newAgent(t, agent.Config{ID: "parked", System: sys, Session: ds, IdleTimeout: idle, Model: answer()})
	clock := newAgent(t, agent.Config{ID: "clock", System: sys, Session: sm, IdleTimeout: idle, Model: answer()})
	next := func() actors.Identity {
		t.Helper()
		select {
		case id := <-passivated:
			return id
		case <-time.After(10 * time.Second): // turns a hang into a failure
			t.Fatal("no passivation")
			return actors.Identity{}
		}
	}

	res, err := a.Invoke(ctx, agent.Text("question"))
	require.NoError(t, err)
	require.Equal(t, "answer", res.Message.Text())
	require.True(t, ds.sess.Load().Parked(), "the invocation's save is parked")
	// Passivations from before the save was parked say nothing of it: an
	// agent built idle may passivate before its first message when the
	// machine is slow (the idle timeout is short).
	for drained := false; !drained; {
		select {
		case <-passivated:
		default:
			drained = true
		}
	}
	for range 3 {
		_, err := clock.Invoke(ctx, agent.Text("tick"))
		require.NoError(t, err)
		require.Equal(t, "clock", next().Path, "only the clock passivates")
	}
	live, err := a.Binding().Live(ctx)
	require.NoError(t, err)
	assert.True(t, live, "the agent with a parked save stays active")

	staged := ds.sess.Load().TakeDeferred()
	require.NotNil(t, staged)
	require.NoError(t, sm.Commit(ctx, persistence.SaveInvocation, staged))
	require.Equal(t, "parked", next().Path, "committed, the save no longer holds the agent")
	assert.Equal(t, []string{"question", "answer"}, texts(agenttest.Messages(t, a)), "re-activated from the store")
}

func texts(msgs []model.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}
