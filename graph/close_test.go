package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
)

// Close answers an invocation that is running (its context cannot end,
// so only the close can answer it) and every later call with
// ErrOrchestratorClosed.
func TestGraph_CloseAnswersRunningAndLaterInvocations(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	started := make(chan struct{})
	g, err := graph.NewBuilder().AddNode("slow", blockingNode(r, "slow", started)).
		Build(ctx, graph.Config{System: freshSystem(t)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, agent.Text("go"))
		done <- err
	}()
	<-started
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, g.Close(cctx))
	select {
	case err := <-done:
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	case <-cctx.Done():
		t.Fatal("Invoke still blocked after Close returned")
	}
	_, err = g.Invoke(cctx, agent.Text("again"))
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	for _, err := range g.Stream(cctx, agent.Text("again")) {
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	}
	_, err = g.Status(cctx)
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	require.Equal(t, 1, r.count("cancelled:slow"), "Close did not stop the running node")
}
