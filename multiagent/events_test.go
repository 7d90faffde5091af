package multiagent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC I3: a BeforeNodeCallEvent kept past its callback cannot raise any
// more: Interrupt fails with interrupt.ErrScopeEnded and the gate state
// records nothing.
func TestBeforeNodeCallEvent_InterruptAfterCallbackFails(t *testing.T) {
	var kept *multiagent.BeforeNodeCallEvent
	h, err := multiagent.NewHooks("graph", "g", "", hook.Func(func(_ context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		kept = ev
		return nil
	}))
	require.NoError(t, err)
	gate := interrupt.NewState()
	_, cancelled, err := h.BeforeNode(context.Background(), "n1", gate)
	require.NoError(t, err)
	require.False(t, cancelled)

	late := make(chan error)
	go func() {
		_, err := kept.Interrupt("late", nil)
		late <- err
	}()
	require.ErrorIs(t, <-late, interrupt.ErrScopeEnded)
	assert.Zero(t, gate.Len())
}
