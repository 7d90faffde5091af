package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M10: a changed topology is an error only for a run that waits for
// a resume; once the run has ended, a graph of any shape starts a new one
// on the session, one that lacks a node of the ended run included (before,
// building it failed with ErrTopology, for good: every later build on the
// session did). A run that waits still refuses it.
func TestGraphSession_AGraphWithoutANodeOfAnEndedRunStartsANewOne_M10(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	cfg := func(hooks ...hook.Provider) graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t), Hooks: hooks}
	}
	three := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddNode("c", textAgent(r, "c")).
			AddEdge("a", "b").AddEdge("b", "c")
	}
	g1 := build(t, three(), cfg())
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	require.NoError(t, g1.Close(ctx))

	g2 := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("c", textAgent(r, "c")).AddEdge("a", "c"), cfg(gate(r, "c")))
	res, err = g2.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	assert.Equal(t, []string{"a"}, res.ExecutionOrder)
	require.NoError(t, g2.Close(ctx))

	// This run waits at c's gate: the graph of three nodes is refused now.
	_, err = three().Build(ctx, cfg())
	require.ErrorIs(t, err, actors.ErrTopology)

	g3 := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("c", textAgent(r, "c")).AddEdge("a", "c"), cfg(gate(r, "c")))
	st3, err := g3.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st3.Interrupts, 1)
	res, err = g3.Invoke(ctx, agent.Resume(interrupt.Respond(st3.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a", "c"}, res.ExecutionOrder)
	require.NoError(t, g3.Close(ctx))

	g4 := build(t, three(), cfg())
	res, err = g4.Invoke(ctx, agent.Text("third"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a", "b", "c"}, res.ExecutionOrder)
}
