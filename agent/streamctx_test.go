package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
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
