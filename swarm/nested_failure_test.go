package swarm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// SPEC M7, M9, M11: a nested orchestrator whose run FAILED fails its node
// with an error (a FAILED node has one) that says why: a nested swarm's
// limit, or a failed node further down, named with its cause.
func TestNesting_ANestedRunThatFailedGivesItsNodeAnErrorSayingWhy_M7(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	team := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "x"})).AddAgent(teamAgent(r, "b", handoff{to: "a", message: "y"}))
	g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{MaxHandoffs: 2})).
		AddNode("after", agentnode.Agent(teamAgent(r, "after", handoff{}))).AddEdge("team", "after").
		Build(ctx, graph.Config{ID: "g", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	n := res.Node("team")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusFailed, n.Status)
	require.NotNil(t, n.Multi)
	assert.Equal(t, "Max handoffs reached: 2", n.Multi.Message)
	require.Error(t, n.Err, "a FAILED node has its Err (NodeResult doc)")
	assert.ErrorIs(t, n.Err, actors.ErrNodeFailed)
	assert.Contains(t, n.Err.Error(), "Max handoffs reached: 2")
	assert.Equal(t, 0, r.count("model:after"))

	// two levels: a graph in a graph whose function node fails
	boom := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return nil, errors.New("disk full")
	})
	inner := graph.NewBuilder().AddNode("write", boom)
	g2, err := graph.NewBuilder().AddNode("mid", graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{})).AsNode(graph.Config{})).
		Build(ctx, graph.Config{ID: "g2", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g2.Close(ctx) })
	res, err = g2.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	mid := res.Node("mid")
	require.NotNil(t, mid)
	require.Error(t, mid.Err)
	assert.ErrorIs(t, mid.Err, actors.ErrNodeFailed)
	assert.Contains(t, mid.Err.Error(), `node "inner"`)
	assert.Contains(t, mid.Err.Error(), "disk full", "the cause, from two levels down")
}

// SPEC M3, M7, M11: a gate two levels down that cancels a node (its
// answer is "no") cancels the nested runs above it, and each cancelled
// node's Message says which node was cancelled and why, as a node a gate
// cancels has.
func TestNesting_ANestedRunCancelledByAnInnerGateGivesItsNodeTheReason_M7(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	team := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "x"})).AddAgent(teamAgent(r, "b", handoff{}))
	mid := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{Hooks: []hook.Provider{gate(r, "b")}}))
	g, err := graph.NewBuilder().AddNode("mid", mid.AsNode(graph.Config{})).
		AddNode("after", agentnode.Agent(teamAgent(r, "after", handoff{}))).AddEdge("mid", "after").
		Build(ctx, graph.Config{ID: "top", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "n")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	m := res.Node("mid")
	require.NotNil(t, m)
	assert.Equal(t, multiagent.StatusCancelled, m.Status)
	assert.Equal(t, `node "team": node "b": b denied`, m.Message)
	require.NotNil(t, m.Multi)
	assert.Equal(t, `node "b": b denied`, m.Multi.Node("team").Message)
	assert.Equal(t, 0, r.count("model:after"))
}
