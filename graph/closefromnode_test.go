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
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC R4, R7: a node that closes its own graph with its run's context
// is cut off by that close, so its Close stops waiting (the context's
// error) and the node returns; the close waits for that return (no node
// of the closed activation runs beside a later one) and then completes:
// a later Close reports it, and the graph is built again on the
// identity.
func TestGraph_R7_ANodeThatClosesItsOwnGraphWithItsContextIsCutOffAndTheCloseCompletes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sys := actorstest.System(t)
	var g *graph.Graph
	closed, returned := make(chan error, 1), make(chan struct{})
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		defer close(returned)
		closed <- g.Close(ctx)
		return []model.ContentBlock{model.Text("done")}, nil
	})
	st := memory.New()
	g = build(t, graph.NewBuilder().AddNode("a", node), graph.Config{ID: "g", System: sys, Session: manager(t, st, "s")})
	_, err := g.Invoke(ctx, agent.Text("go"))
	assert.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	select {
	case err := <-closed:
		assert.ErrorIs(t, err, context.Canceled, "the node's Close stopped waiting when the close cut its run off")
	case <-ctx.Done():
		t.Fatal("the node's Close of its own graph waited for the node")
	}
	require.NoError(t, g.Close(ctx), "the close completed once the node returned")
	select {
	case <-returned:
	default:
		t.Fatal("Close returned nil while the node it cut off still ran")
	}
	again := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	g2 := build(t, graph.NewBuilder().AddNode("a", again), graph.Config{ID: "g", System: sys, Session: manager(t, st, "s")})
	res, err := g2.Invoke(ctx, agent.Input{})
	require.NoError(t, err, "the identity was released: the cut-off run is carried on")
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
