package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M5, M6, M11, I7: a gate on a nested graph's node, then partial
// answers to its two inner agents, the graph rebuilt (a fresh process)
// between every step: a bad id is rejected whole, the gate is not raised
// again, every tool runs once.
func TestGraph_PartialAnswersUnderAnAnsweredGateOfANestedGraph(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	mk := func() *graph.Graph {
		inner := graph.NewBuilder().AddNode("x", toolAgent(r, "x", "lx", "qx")).AddNode("y", toolAgent(r, "y", "ly", "qy"))
		outer := graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{})).AddNode("after", textAgent(r, "after")).AddEdge("mid", "after")
		return build(t, outer, graph.Config{ID: "top", Session: manager(t, st, "d"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "mid")}})
	}
	g := mk()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	gateID := res.Interrupts[0].ID
	res, err = mk().Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	ids := map[string]string{}
	for _, in := range res.Interrupts {
		ids[in.Name] = in.ID
	}
	// I7: unknown id with a good one: rejected whole, nothing changes
	_, err = mk().Invoke(ctx, agent.Resume(interrupt.Respond(ids["qx"], "a"), interrupt.Respond("top/mid/nope", "b")))
	require.Error(t, err)
	assert.Equal(t, 0, r.count("tool:x"))
	res, err = mk().Invoke(ctx, agent.Resume(interrupt.Respond(ids["qx"], "a")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, ids["qy"], res.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("gate:mid"), "SPEC M6: the gate is not raised again")
	res, err = mk().Invoke(ctx, agent.Resume(interrupt.Respond(ids["qy"], "b")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:x"))
	assert.Equal(t, 1, r.count("tool:y"))
	assert.Equal(t, 1, r.count("gate:mid"))
	assert.Equal(t, 1, r.count("model:after"))
}
