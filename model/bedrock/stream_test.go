package bedrock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/modeltest"
)

func TestStream_YieldsTextThenToolUsesThenOneStop(t *testing.T) {
	m, _ := newReplayModel(t, "two_tools")
	evs, err := collect(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{
		&model.TextDelta{Text: "Let me check."},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_1", Name: "get_weather"},
		&model.ToolInputDelta{Partial: `{"city":`},
		&model.ToolInputDelta{Partial: ` "Paris"}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_2", Name: "get_time"},
		&model.ToolInputDelta{Partial: `{"tz": "Euro`},
		&model.ToolInputDelta{Partial: `pe/Paris"}`},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopToolUse, Usage: modeltest.ToolsUsage()},
	}, evs)
}

func TestStream_ExceptionMidStreamEndsWithTheException(t *testing.T) {
	m, _ := newReplayModel(t, "stream_exception")
	evs, err := collect(context.Background(), m, userRequest())
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hello"}}, evs)
	require.ErrorIs(t, err, model.ErrServer)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ModelStreamErrorException", pe.Code)
	assert.Contains(t, err.Error(), "Model stream error: the model stopped answering.")
}

func TestStream_CutBeforeMessageStopIsAnError(t *testing.T) {
	m, _ := newReplayModel(t, "stream_cut")
	evs, err := collect(context.Background(), m, userRequest())
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hello from"}, &model.TextDelta{Text: " the mo"}}, evs,
		"no MessageStop: the partial turn is not passed off as complete")
	require.Error(t, err)
	assert.ErrorIs(t, err, model.ErrIncompleteStream)
	assert.ErrorIs(t, err, model.ErrServer)
	assert.Contains(t, err.Error(), "messageStop")
}

func TestStream_CancelMidStreamReturnsPromptly(t *testing.T) {
	m, r := newReplayModel(t, "slow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []model.StreamEvent
	var last error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range m.Stream(ctx, userRequest()) {
			if err != nil {
				last = err
				return
			}
			evs = append(evs, ev)
			cancel()
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after its context was cancelled")
	}
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Thinking"}}, evs)
	require.ErrorIs(t, last, context.Canceled)
	var pe *model.ProviderError
	assert.False(t, errors.As(last, &pe), "a cancellation is the caller's, not the provider's: %v", last)
	assert.Len(t, r.Requests(), 1, "no retry after a cancel")
}

func TestStream_CancelledContextSendsNothing(t *testing.T) {
	m, r := newReplayModel(t, "text")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := collect(ctx, m, userRequest())
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, r.Requests())
}

func TestStream_TimeoutEndsAStalledStream(t *testing.T) {
	// The timeout must leave the replay time to send its first event on a
	// loaded machine under -race (500 ms did not, once in CI).
	m, _ := newReplayModel(t, "slow", func(c *bedrock.Config) { c.Timeout = 2 * time.Second })
	start := time.Now()
	evs, err := collect(context.Background(), m, userRequest())
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Thinking"}}, evs)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "Timeout")
}

func TestStream_StoppingEarlyReleasesTheConnection(t *testing.T) {
	m, r := newReplayModel(t, "slow")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range m.Stream(context.Background(), userRequest()) {
			break
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("breaking out of the stream did not return")
	}
	select {
	case <-r.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the request was still open 5s after the consumer stopped")
	}
}

// The SDK closes the request body when the answer's headers arrive; that
// must not cut the event stream that follows (see bodyGuard). The stream is
// watched for a while after its first event arrived, however long that
// took: a cut ends it early with an error that is not the caller's.
func TestStream_EarlyAnswerDoesNotCutTheStream(t *testing.T) {
	m, _ := newReplayModel(t, "slow")
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		var evs []model.StreamEvent
		var last error
		for ev, err := range m.Stream(ctx, userRequest()) {
			if err != nil {
				last = err
				break
			}
			evs = append(evs, ev)
			if len(evs) == 1 {
				time.AfterFunc(30*time.Millisecond, cancel)
			}
		}
		cancel()
		require.Len(t, evs, 1, "attempt %d", i)
		require.ErrorIs(t, last, context.Canceled, "attempt %d: the stream is held until the caller goes away", i)
	}
}

// model.Model: once ctx is cancelled the sequence ends with ctx's error at
// once, even when the rest of the answer has arrived already (events the
// stream holds are not yielded after the cancel). Run many times: the
// stream's next event and the cancel are both ready when the read loop
// looks.
func TestStream_CancelAfterTheFirstEventYieldsNoMoreEvents(t *testing.T) {
	for range 40 {
		m, _ := newReplayModel(t, "text")
		ctx, cancel := context.WithCancel(context.Background())
		var after int
		var last error
		for ev, err := range m.Stream(ctx, userRequest()) {
			if err != nil {
				last = err
				break
			}
			if ctx.Err() != nil {
				after++
				t.Logf("yielded after the cancel: %T", ev)
			}
			cancel()
		}
		cancel()
		require.Zero(t, after, "events yielded after the cancel")
		require.ErrorIs(t, last, context.Canceled)
	}
}
