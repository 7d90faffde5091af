package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
)

// SPEC R5, A10: a Stream whose context ends yields nothing more, not even
// the events and the result already there for it, and ends with the
// context's error, once. (Repeated: with the events, the outcome and the
// context's end all there at once, nothing may depend on which one a read
// happens to pick.)
func TestStream_AContextThatEndsEndsTheStreamEvenWithEventsQueued(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
		return model.TextTurn("hello"), nil
	})})
	for i := 0; i < 10; i++ {
		sctx, cancel := context.WithCancel(ctx)
		var after []agent.Event
		var errs []error
		first := true
		for ev, err := range a.Stream(sctx, agent.Text("go")) {
			if first {
				first = false
				// Queued behind the streamed invocation, this returns once
				// that one ended: its events and result are there by now.
				_, qerr := a.Invoke(ctx, agent.Text("next"))
				require.NoError(t, qerr)
				cancel()
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			after = append(after, ev)
		}
		cancel()
		assert.Empty(t, after, "round %d: events yielded after the stream's context ended", i)
		require.Len(t, errs, 1, "round %d", i)
		assert.ErrorIs(t, errs[0], context.Canceled)
	}
}

// SPEC R5, A10: a Stream whose context has ended already sends nothing,
// as Invoke does: no hook fires, the model is not called, and the
// sequence is the context's error alone. (Many times: a request sent and
// then abandoned could start before its abandon arrives.)
func TestStream_AContextEndedBeforeTheCallRunsNothing(t *testing.T) {
	var began atomic.Int32
	h := hook.Func(func(context.Context, *agent.BeforeInvocationEvent) error { began.Add(1); return nil })
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("hello"), nil })
	a := newAgent(t, agent.Config{Model: m, Session: newSaver().session(t), Hooks: []hook.Provider{h}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 10000; i++ {
		n := 0
		for ev, err := range a.Stream(ctx, agent.Text("go")) {
			n++
			assert.Nil(t, ev)
			assert.ErrorIs(t, err, context.Canceled)
		}
		require.Equal(t, 1, n)
	}
	assert.Zero(t, began.Load(), "invocations began")
	assert.Zero(t, m.Calls())
}
