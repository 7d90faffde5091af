package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC R4, M10, M11: a graph whose nested graph's agent waits for an
// answer is passivated whole (both orchestrators and every agent); a
// Status brings it back with the same interrupt, and, passivated again,
// the resume finishes the run without running the answered tool twice.
func TestGraphSession_R4_APassivatedNestedGraphComesBackWithItsInterrupt(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	inner := graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which")).AddNode("after", textAgent(r, "after")).AddEdge("ask", "after")
	g := build(t, graph.NewBuilder().AddNode("nest", inner.AsNode(graph.Config{ID: "inner"})).AddNode("end", textAgent(r, "end")).AddEdge("nest", "end"),
		graph.Config{ID: "g", Session: manager(t, st, "s1"), System: sys, IdleTimeout: time.Millisecond})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	lc.AwaitNoneLive(t)
	whole := lc.PassivatedKinds()
	assert.True(t, whole[graph.Kind+":g/nest/inner"], "%v", whole)
	assert.True(t, whole["agent:g/nest/ask/ask"], "%v", whole)
	st2, err := g.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st2.Interrupts, 1)
	assert.Equal(t, res.Interrupts[0].ID, st2.Interrupts[0].ID)
	lc.AwaitNoneLive(t)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:ask"))
	assert.Equal(t, 1, r.count("model:after"))
	assert.Equal(t, 1, r.count("model:end"))
}
