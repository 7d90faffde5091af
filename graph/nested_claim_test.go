package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC S4, M11: a nested graph's gate is answered in one runtime, which
// is cut off (closed) while the gated node runs; another runtime, which
// loaded the tree before, carries the run on: the nested run it held
// was stale, and the cut-off nested run goes on from the stored claim.
func TestGraphNesting_S4_ACutOffNestedClaimIsCarriedOnByAnotherRuntime(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	started := make(chan struct{})
	var runs atomic.Int32
	x := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:x")
		if runs.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []model.ContentBlock{model.Text("x out")}, nil
	})
	mk := func() *graph.Graph {
		inner := graph.NewBuilder().AddNode("x", x)
		b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).
			AddNode("mid", inner.AsNode(graph.Config{Hooks: []hook.Provider{gate(r, "x")}})).AddEdge("a", "mid")
		return build(t, b, graph.Config{ID: "top", Session: manager(t, st, "s"), System: actorstest.System(t)})
	}
	g1 := mk()
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	answer := interrupt.Respond(res.Interrupts[0].ID, "y")
	g2 := mk()
	_, err = g2.Status(ctx)
	require.NoError(t, err)

	first := invokeAsync(ctx, g1, agent.Resume(answer))
	<-started
	require.NoError(t, g1.Close(ctx)) // cut off, as a crash would
	<-first

	res, err = g2.Invoke(ctx, agent.Input{})
	if err != nil { // g2 held the interrupted run: told so, it takes the stored one
		require.ErrorIs(t, err, persistence.ErrConflict)
		res, err = g2.Invoke(ctx, agent.Input{})
	}
	require.NoError(t, err)
	if n := res.Node("mid"); assert.NotNil(t, n) {
		assert.NoError(t, n.Err, "the nested run goes on from the stored claim")
	}
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 2, r.count("fn:x"), "x, cut off, runs again")
}
