package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/modeltest"
)

func TestRetry_AttemptsPerScenario(t *testing.T) {
	for _, tc := range []struct {
		scenario   string
		maxRetries int
		attempts   int
		kind       error // nil: the call succeeds
	}{
		{"retry_then_text", 0, 2, nil},                 // 529, then the answer
		{"overloaded_before_content", 0, 2, nil},       // an error event before any content
		{"err_rate_limit", 3, 4, model.ErrRateLimited}, // MaxRetries+1
		{"err_rate_limit", 0, 3, model.ErrRateLimited}, // the default, 2 retries
		{"err_server", 1, 2, model.ErrServer},          // 500 on every attempt
		{"err_rate_limit", anthropic.NoRetries, 1, model.ErrRateLimited},
		{"err_spend_limit", 3, 1, model.ErrRateLimited}, // a 429 for a spend limit: never retried
		{"err_auth", 3, 1, model.ErrAuth},               // never retried
		{"err_context_window", 3, 1, model.ErrContextWindow},
		{"err_unknown_model", 3, 1, model.ErrUnknownModel},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			m, r := newModel(t, tc.scenario, func(c *anthropic.Config) { c.MaxRetries = tc.maxRetries })
			events, err := collect(t, m, weatherRequest())
			assert.Equal(t, tc.attempts, r.Count(), "requests sent")
			if tc.kind == nil {
				require.NoError(t, err)
				var acc model.Accumulator
				for _, ev := range events {
					require.NoError(t, acc.Add(ev))
				}
				msg, stop, err := acc.Result()
				require.NoError(t, err)
				assert.Equal(t, modeltest.TextAnswer, msg.Text())
				assert.Equal(t, modeltest.TextUsage(), stop.Usage)
				return
			}
			assert.ErrorIs(t, err, tc.kind)
		})
	}
}

func TestRetry_BacksOffExponentially(t *testing.T) {
	m, r := newModel(t, "err_server", func(c *anthropic.Config) {
		c.MaxRetries = 2
		c.RetryBaseDelay = 40 * time.Millisecond
	})
	_, err := collect(t, m, weatherRequest())
	require.ErrorIs(t, err, model.ErrServer)

	at := r.Received()
	require.Len(t, at, 3)
	// 40ms then 80ms, each less up to a quarter of jitter.
	assert.GreaterOrEqual(t, at[1].Sub(at[0]), 30*time.Millisecond)
	assert.GreaterOrEqual(t, at[2].Sub(at[1]), 60*time.Millisecond)
}

func TestRetry_HonoursRetryAfter(t *testing.T) {
	m, r := newModel(t, "retry_after", nil) // Retry-After: 1, RetryBaseDelay a few ms
	msg, _ := complete(t, m, weatherRequest())
	assert.Equal(t, modeltest.TextAnswer, msg.Text())

	at := r.Received()
	require.Len(t, at, 2)
	assert.GreaterOrEqual(t, at[1].Sub(at[0]), 950*time.Millisecond, "waited the second the 429 asked for")
}

func TestRetry_RetryAfterOverAMinuteIsReturnedNotWaited(t *testing.T) {
	m, r := newModel(t, "retry_after_too_long", nil) // Retry-After: 120
	start := time.Now()
	_, err := collect(t, m, weatherRequest())

	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 1, r.Count())
	require.ErrorIs(t, err, model.ErrRateLimited)
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, 120*time.Second, pe.RetryAfter, "the caller learns how long to wait")
}

// Config.Timeout bounds the whole Stream call, the waits between attempts
// included: a 429 asking for a one-second wait under a 200ms Timeout ends the
// call at the Timeout, with no second request.
func TestRetry_TimeoutBoundsTheWaitsBetweenAttempts(t *testing.T) {
	m, r := newModel(t, "retry_after", func(c *anthropic.Config) { c.Timeout = 200 * time.Millisecond }) // Retry-After: 1
	start := time.Now()
	_, err := collect(t, m, weatherRequest())
	assert.Less(t, time.Since(start), 900*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Error(), "timeout")
	assert.Equal(t, 1, r.Count())
}

// flaky is a server on 127.0.0.1 whose first `fail` requests fail as fail
// says and whose later ones get the text fixture's answer; it counts the
// requests.
type flaky struct {
	srv      *httptest.Server
	requests atomic.Int32
}

func newFlaky(t *testing.T, fail int, failure func(w http.ResponseWriter)) *flaky {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "text", "1.response.http"))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	f := &flaky{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if int(f.requests.Add(1)) <= fail {
			failure(w)
			return
		}
		for k, vs := range res.Header {
			w.Header()[k] = vs
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// cutAfterHeaders sends the headers of a stream, then drops the connection
// before its first event.
func cutAfterHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

func flakyModel(t *testing.T, baseURL string, client *http.Client, maxRetries int) *anthropic.Model {
	t.Helper()
	clearEnv(t)
	cfg := anthropic.DefaultConfig()
	cfg.Model, cfg.APIKey, cfg.BaseURL, cfg.HTTPClient = "claude-sonnet-4-5", testAPIKey, baseURL, client
	cfg.MaxRetries = maxRetries
	cfg.RetryBaseDelay = time.Millisecond
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	return m
}

// A connection that fails before the stream began (no answer at all, or
// one cut before its first event) is retried as a server error is, as by
// every provider: nothing reached the caller.
func TestRetry_ConnectionFailureBeforeTheStreamIsRetried(t *testing.T) {
	for name, failure := range map[string]func(http.ResponseWriter){
		"dropped without an answer": dropConnection,
		"cut after the headers":     cutAfterHeaders,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFlaky(t, 2, failure)
			m := flakyModel(t, f.srv.URL, f.srv.Client(), 2)
			msg, _ := complete(t, m, weatherRequest())
			assert.Equal(t, modeltest.TextAnswer, msg.Text())
			assert.EqualValues(t, 3, f.requests.Load(), "two failed attempts, then the answer")
		})
	}
}

// countingTransport counts the requests it sends.
type countingTransport struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// No server at all: MaxRetries+1 attempts, then a ProviderError without a
// class that says the request failed.
func TestRetry_RefusedConnectionIsRetriedThenReported(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ct := &countingTransport{next: http.DefaultTransport}
	m := flakyModel(t, url, &http.Client{Transport: ct}, 2)
	_, err := collect(t, m, weatherRequest())
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Nil(t, pe.Kind)
	assert.Zero(t, pe.StatusCode)
	assert.Contains(t, err.Error(), "request failed")
	assert.EqualValues(t, 3, ct.n.Load())
}
