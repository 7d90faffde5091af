package swarm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// SPEC M7, M3 (strands-behaviour §8.2 #39, the swarm variant): a node
// reached by a handoff whose gate is denied never runs, so it is not in
// the node history and adds nothing to the execution counts: the history
// is the handoff source alone, as the swarm itself tells its agents.
func TestSwarm_NodeCancelledByItsGateIsNotInNodeHistory(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "info", handoff{to: "weather", message: "forecast"})).
		AddAgent(teamAgent(r, "weather", handoff{}))
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{gate(r, "weather")}})
	res, err := s.Invoke(ctx, agent.Text("what to wear"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "n")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCancelled, res.Status)
	assert.Zero(t, r.count("model:weather"))
	assert.Equal(t, []string{"info"}, res.ExecutionOrder, "node history")
	assert.Equal(t, 1, res.ExecutionCount)
	n := res.Node("weather")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusCancelled, n.Status)
	assert.Equal(t, "weather denied", n.Message)
	assert.Zero(t, n.ExecutionCount, "its agent never ran")
	assert.Equal(t, 1, res.Node("info").ExecutionCount)
}

// SPEC M7, M3: a node reached by a handoff whose BeforeNodeCall hook
// fails never runs either: it ends FAILED with the hook's error, and,
// like a node its gate cancelled, it is not in the node history and adds
// nothing to the execution counts (Strands' node history lists only the
// nodes that ran).
func TestSwarm_NodeWhoseBeforeNodeCallHookFailsIsNotInNodeHistory(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	errDenied := errors.New("denied by policy")
	deny := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID == "weather" {
			return errDenied
		}
		return nil
	})
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "info", handoff{to: "weather", message: "forecast"})).
		AddAgent(teamAgent(r, "weather", handoff{}))
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{deny}})
	res, err := s.Invoke(ctx, agent.Text("what to wear"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Zero(t, r.count("model:weather"))
	assert.Equal(t, []string{"info"}, res.ExecutionOrder, "node history")
	assert.Equal(t, 1, res.ExecutionCount)
	n := res.Node("weather")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusFailed, n.Status)
	assert.ErrorIs(t, n.Err, errDenied)
	assert.Zero(t, n.ExecutionCount, "its agent never ran")
}
