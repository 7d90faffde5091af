package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/modeltest"
)

func TestStream_TextDeltasThenStopWithUsage(t *testing.T) {
	m, _ := newModel(t, "text", nil)
	events, err := collect(t, m, weatherRequest())
	require.NoError(t, err)

	assert.Equal(t, []model.StreamEvent{
		&model.TextDelta{Text: "Hello"},
		&model.TextDelta{Text: " from the"},
		&model.TextDelta{Text: " model."},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopEndTurn, Usage: modeltest.TextUsage()},
	}, events)
}

func TestStream_ToolUsesStreamTheirInputFragments(t *testing.T) {
	m, _ := newModel(t, "two_tools", nil)
	events, err := collect(t, m, weatherRequest())
	require.NoError(t, err)

	assert.Equal(t, []model.StreamEvent{
		&model.TextDelta{Text: "Let me"},
		&model.TextDelta{Text: " check."},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_1", Name: "get_weather"},
		&model.ToolInputDelta{Partial: `{"city": `},
		&model.ToolInputDelta{Partial: `"Paris"}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_2", Name: "get_time"},
		&model.ToolInputDelta{Partial: `{"tz": "Europe/`},
		&model.ToolInputDelta{Partial: `Paris"}`},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopToolUse, Usage: modeltest.ToolsUsage()},
	}, events)
}

func TestStream_RefusalStopsAsContentFiltered(t *testing.T) {
	m, _ := newModel(t, "refusal", nil)
	msg, stop := complete(t, m, weatherRequest())
	assert.Equal(t, "I can't help with that.", msg.Text())
	assert.Equal(t, model.StopContentFiltered, stop.StopReason)
	assert.Equal(t, model.Usage{InputTokens: 12, OutputTokens: 8, TotalTokens: 20}, stop.Usage)
}

func TestStream_CancelMidStreamReturnsPromptlyWithCanceled(t *testing.T) {
	m, r := newModel(t, "slow", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var events []model.StreamEvent
	var last error
	var cancelledAt time.Time
	for ev, err := range m.Stream(ctx, weatherRequest()) {
		if err != nil {
			last = err
			break
		}
		events = append(events, ev)
		cancelledAt = time.Now()
		cancel()
	}
	require.Error(t, last)
	assert.ErrorIs(t, last, context.Canceled)
	assert.Less(t, time.Since(cancelledAt), time.Second, "the stream ended promptly")
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Thinking"}}, events)
	assert.Equal(t, 1, r.Count())
}

// A consumer that cancels the context on the first event ends the stream
// with ctx.Err() even when the whole answer has arrived already (a short
// answer read in one go): the turn is not finished after the cancel
// (model.Model's contract).
func TestStream_CancelAfterTheAnswerIsBufferedEndsWithCanceled(t *testing.T) {
	m, _ := newModel(t, "text", func(c *anthropic.Config) {
		c.HTTPClient = &http.Client{Transport: modeltest.BufferedTransport{Next: c.HTTPClient.Transport}}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var events []model.StreamEvent
	var last error
	for ev, err := range m.Stream(ctx, weatherRequest()) {
		if err != nil {
			last = err
			break
		}
		events = append(events, ev)
		cancel()
	}
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hello"}}, events, "nothing after the cancel")
	assert.ErrorIs(t, last, context.Canceled)
}

func TestStream_CancelledBeforeTheCallSendsNothing(t *testing.T) {
	m, r := newModel(t, "text", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got error
	for _, err := range m.Stream(ctx, weatherRequest()) {
		got = err
	}
	assert.ErrorIs(t, got, context.Canceled)
	assert.Zero(t, r.Count())
}

func TestStream_CancelDuringBackoffEndsTheWait(t *testing.T) {
	m, r := newModel(t, "retry_after", nil) // the 429 asks for a second
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	var got error
	for _, err := range m.Stream(ctx, weatherRequest()) {
		got = err
	}
	assert.ErrorIs(t, got, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 900*time.Millisecond)
	assert.Equal(t, 1, r.Count())
}

func TestStream_RequestTimeoutIsAProviderError(t *testing.T) {
	// 2 s leaves the replay room for its first event on a loaded machine under -race.
	m, _ := newModel(t, "slow", func(c *anthropic.Config) { c.Timeout = 2 * time.Second })
	events, err := collect(t, m, weatherRequest())
	assert.Len(t, events, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Contains(t, err.Error(), "timeout")
}

func TestStream_CallerMayStopEarly(t *testing.T) {
	m, r := newModel(t, "slow", nil)
	n := 0
	for _, err := range m.Stream(context.Background(), weatherRequest()) {
		require.NoError(t, err)
		n++
		break
	}
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, r.Count())
}
