package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// SPEC I3, I8: events are only valid during their callback. A hook that
// keeps its BeforeToolCallEvent and raises on it from another goroutine
// after the callback returned gets interrupt.ErrScopeEnded, not an error
// saying it interrupted (nothing stops for it), and the interrupt is not
// recorded: a later interrupted result lists only what that run asked.
func TestBeforeToolCallEvent_InterruptAfterCallbackFailsAndIsNotListed(t *testing.T) {
	del, _ := countingTool("delete_files")
	var (
		mu    sync.Mutex
		calls int
		kept  *agent.BeforeToolCallEvent
	)
	h := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			kept = ev
			return nil
		}
		_, err := ev.Interrupt("approve", nil)
		return err
	})
	m := toolThenText("done", model.ToolCall{ID: "t1", Name: "delete_files", Input: map[string]any{"paths": []string{"a"}}})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{h}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)

	late := make(chan error)
	go func() {
		_, err := kept.Interrupt("late", nil)
		late <- err
	}()
	err = <-late
	require.ErrorIs(t, err, interrupt.ErrScopeEnded)
	assert.NotErrorIs(t, err, interrupt.ErrInterrupted)

	res, err = a.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, []string{interrupt.BeforeToolCallID("t1", "approve")}, ids(res.Interrupts))
}

// SPEC I3: a tool that keeps its Context and raises on it after it
// returned gets interrupt.ErrScopeEnded, and nothing is recorded.
func TestToolContext_InterruptAfterToolReturnedFails(t *testing.T) {
	var kept *tool.Context
	keep := tool.New("keep", "keeps its context", func(_ context.Context, tc *tool.Context, in pathsIn) (string, error) {
		kept = tc
		return "ok", nil
	})
	m := toolThenText("done", model.ToolCall{ID: "t1", Name: "keep", Input: map[string]any{"paths": []string{"a"}}})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{keep}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)

	late := make(chan error)
	go func() {
		_, err := kept.Interrupt("late", nil)
		late <- err
	}()
	require.ErrorIs(t, <-late, interrupt.ErrScopeEnded)
	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	assert.Zero(t, snap.Interrupts.Len(), "nothing was recorded")
}
