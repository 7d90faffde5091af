package swarm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/swarm"
)

// Close answers a running invocation (its context cannot end, so only the
// close can answer it) and every later call with ErrOrchestratorClosed.
func TestSwarm_CloseAnswersRunningAndLaterInvocations(t *testing.T) {
	ctx := context.Background()
	blocked := &blockingModel{started: make(chan struct{}, 1)}
	s, err := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: blocked}).
		Build(ctx, swarm.Config{System: actorstest.System(t)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := s.Invoke(ctx, agent.Text("go"))
		done <- err
	}()
	<-blocked.started
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, s.Close(cctx))
	select {
	case err := <-done:
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	case <-cctx.Done():
		t.Fatal("Invoke still blocked after Close returned")
	}
	_, err = s.Invoke(cctx, agent.Text("again"))
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	for _, err := range s.Stream(cctx, agent.Text("again")) {
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	}
}
