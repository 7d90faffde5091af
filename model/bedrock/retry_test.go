package bedrock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/modeltest"
)

func TestRetry_ServiceUnavailableThenTextMakesTwoRequests(t *testing.T) {
	m, r := newReplayModel(t, "retry_then_text")
	msg, stop, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Equal(t, modeltest.TextAnswer, msg.Text())
	assert.Equal(t, modeltest.TextUsage(), stop.Usage)
	reqs := r.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "attempt=1; max=3", reqs[0].Header.Get("Amz-Sdk-Request"))
	assert.Equal(t, "attempt=2; max=3", reqs[1].Header.Get("Amz-Sdk-Request"))
}

func TestRetry_RateLimitIsRetriedMaxRetriesTimes(t *testing.T) {
	for _, tc := range []struct{ maxRetries, requests int }{
		{bedrock.NoRetries, 1},
		{0, bedrock.DefaultMaxRetries + 1},
		{1, 2},
		{4, 5},
	} {
		t.Run(fmt.Sprintf("MaxRetries=%d", tc.maxRetries), func(t *testing.T) {
			m, r := newReplayModel(t, "err_rate_limit", func(c *bedrock.Config) { c.MaxRetries = tc.maxRetries })
			_, err := collect(context.Background(), m, userRequest())
			assert.ErrorIs(t, err, model.ErrRateLimited)
			assert.Len(t, r.Requests(), tc.requests)
		})
	}
}

func TestRetry_ServerErrorIsRetried(t *testing.T) {
	m, r := newReplayModel(t, "err_server")
	_, err := collect(context.Background(), m, userRequest())
	assert.ErrorIs(t, err, model.ErrServer)
	assert.Len(t, r.Requests(), bedrock.DefaultMaxRetries+1)
}

func TestRetry_ClientErrorsAreNotRetried(t *testing.T) {
	for _, scenario := range []string{"err_auth", "err_unknown_model", "err_context_window"} {
		t.Run(scenario, func(t *testing.T) {
			m, r := newReplayModel(t, scenario)
			_, err := collect(context.Background(), m, userRequest())
			require.Error(t, err)
			assert.Len(t, r.Requests(), 1)
		})
	}
}

func TestRetry_ThrottlingInStreamBeforeContentIsRetried(t *testing.T) {
	m, r := newReplayModel(t, "stream_throttled_then_text")
	msg, stop, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Equal(t, modeltest.TextAnswer, msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
	assert.Len(t, r.Requests(), 2)
}

// An event stream that ends before anything was yielded (here: after
// messageStart) is a failed attempt with nothing yielded, retried as Stream
// promises (and as the other providers retry it).
func TestRetry_StreamEndingBeforeContentIsRetried(t *testing.T) {
	m, r := newReplayModel(t, "stream_cut_then_text")
	msg, stop, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Equal(t, modeltest.TextAnswer, msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
	assert.Len(t, r.Requests(), 2)
}

func TestRetry_ThrottlingInStreamOnEveryAttemptIsRateLimited(t *testing.T) {
	m, r := newReplayModel(t, "stream_throttled")
	evs, err := collect(context.Background(), m, userRequest())
	assert.Empty(t, evs)
	require.ErrorIs(t, err, model.ErrRateLimited)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "ThrottlingException", pe.Code)
	assert.Equal(t, 0, pe.StatusCode, "an exception of the event stream has no status of its own")
	assert.Contains(t, err.Error(), "Too many tokens, please wait before trying again.")
	assert.Len(t, r.Requests(), bedrock.DefaultMaxRetries+1, "the attempts of the stream share the MaxRetries budget")
}

func TestRetry_NoRetryOnceContentWasYielded(t *testing.T) {
	m, r := newReplayModel(t, "stream_exception")
	evs, err := collect(context.Background(), m, userRequest())
	require.Error(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, &model.TextDelta{Text: "Hello"}, evs[0])
	assert.Len(t, r.Requests(), 1)
}

func TestRetry_WaitsExponentiallyBetweenAttempts(t *testing.T) {
	const base = 40 * time.Millisecond
	m, r := newReplayModel(t, "err_rate_limit", func(c *bedrock.Config) { c.RetryBaseDelay = base })
	start := time.Now()
	_, err := collect(context.Background(), m, userRequest())
	elapsed := time.Since(start)
	assert.ErrorIs(t, err, model.ErrRateLimited)
	assert.Len(t, r.Requests(), 3)
	// At least half of base, then half of 2·base.
	assert.GreaterOrEqual(t, elapsed, base/2+base)
}

func TestRetry_CancelDuringBackoffReturnsPromptly(t *testing.T) {
	m, r := newReplayModel(t, "err_rate_limit", func(c *bedrock.Config) { c.RetryBaseDelay = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.answered // the first attempt failed: the provider now waits a minute
		cancel()
	}()
	start := time.Now()
	_, err := collect(ctx, m, userRequest())
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, errors.Is(err, model.ErrRateLimited), "a cancelled call is not classed: %v", err)
	assert.Len(t, r.Requests(), 1)
}
