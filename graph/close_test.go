package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
)

// Close answers an invocation that is running (its context cannot end,
// so only the close can answer it) and every later call with
// ErrOrchestratorClosed.
func TestGraph_CloseAnswersRunningAndLaterInvocations(t *testing.T) {
	ctx := context.Background()
	started, stopped := make(chan struct{}), make(chan struct{})
	slow := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	})
	g, err := graph.NewBuilder().AddNode("slow", slow).Build(ctx, graph.Config{System: freshSystem(t)})
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
	select {
	case <-stopped:
	case <-cctx.Done():
		t.Fatal("Close did not stop the running node")
	}
}
