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

// threeLevels is top: {before, mid}; mid: {side, inner} with a gate on
// side; inner: {deep} whose agent interrupts from a tool.
func threeLevels(r *recorder) *graph.Builder {
	inner := graph.NewBuilder().AddNode("deep", toolAgent(r, "deep", "lookup", "which"))
	mid := graph.NewBuilder().AddNode("side", textAgent(r, "side")).AddNode("inner", inner.AsNode(graph.Config{}))
	midNode := mid.AsNode(graph.Config{Hooks: []hook.Provider{gate(r, "side")}})
	return graph.NewBuilder().AddNode("before", textAgent(r, "before")).AddNode("mid", midNode).AddNode("after", textAgent(r, "after")).
		AddEdge("before", "mid").AddEdge("mid", "after")
}

// SPEC M11, I2: an interrupt three levels down surfaces at the top with an
// id that names its owner; a nested graph's gate carries the nested
// graph's path. After the whole tree is rebuilt on a fresh runtime from
// the session, the answers resume exactly the agent and the gate that
// raised them; the levels above resume, they do not restart.
func TestGraphNesting_DeepInterruptSurfacesAndResumesAfterRebuild(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "top", Session: manager(t, st, "nest"), System: actorstest.System(t)}
	}
	g := build(t, threeLevels(r), cfg())
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	byOwner := map[string]interrupt.Interrupt{}
	for _, in := range res.Interrupts {
		path, _ := interrupt.SplitOwner(in.ID)
		byOwner[path] = in
	}
	deep, ok := byOwner["top/mid/inner/deep"]
	require.True(t, ok, "%v", byOwner)
	assert.Equal(t, interrupt.OwnedID("top/mid/inner/deep", interrupt.ToolCallID("t1", "which")), deep.ID)
	side, ok := byOwner["top/mid"]
	require.True(t, ok, "the nested graph's own gate: %v", byOwner)
	assert.Equal(t, interrupt.OwnedID("top/mid", interrupt.BeforeNodeCallID("side", "approval")), side.ID)
	assert.Equal(t, interrupt.SourceMultiAgentHook, side.Source)
	require.NoError(t, g.Close(ctx))

	g2 := build(t, threeLevels(r), cfg())
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(deep.ID, "red")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "the gate still waits")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, side.ID, res.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("tool:deep"))

	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(side.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:before"), "the top level resumed, it did not restart")
	assert.Equal(t, 1, r.count("model:side"))
	assert.Equal(t, 1, r.count("tool:deep"))
	assert.Equal(t, 1, r.count("model:after"))
	mid := res.Node("mid")
	require.NotNil(t, mid)
	require.NotNil(t, mid.Multi)
	inner := mid.Multi.Node("inner")
	require.NotNil(t, inner)
	require.NotNil(t, inner.Multi)
	assert.Equal(t, "deep done: answer red", inner.Multi.Node("deep").Text())
}
