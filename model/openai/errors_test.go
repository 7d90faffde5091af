package openai_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
	"github.com/braidhq/braid/model/openai"
)

// streamErr runs one turn and returns the error it ended with.
func streamErr(t *testing.T, m model.Model) error {
	t.Helper()
	_, err := collect(t, m, userRequest())
	require.Error(t, err)
	return err
}

func providerError(t *testing.T, err error) *model.ProviderError {
	t.Helper()
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe), "%T: %v", err, err)
	return pe
}

// Each recorded error maps to its class, with the status, the API's code
// and message, and the number of attempts its class allows.
func TestErrors_RecordedErrorsMapToClassesAndAttempts(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		kind     error
		status   int
		code     string
		message  string
		attempts int
	}{
		{"err_auth", model.ErrAuth, 401, "invalid_api_key", "Incorrect API key provided", 1},
		{"err_unknown_model", model.ErrUnknownModel, 404, "model_not_found", "The model `gpt-4o-mini` does not exist", 1},
		{"err_context_window", model.ErrContextWindow, 400, "context_length_exceeded", "maximum context length is 128000 tokens", 1},
		{"err_rate_limit", model.ErrRateLimited, 429, "rate_limit_exceeded", "Rate limit reached for gpt-4o-mini", openai.DefaultMaxRetries + 1},
		{"err_server", model.ErrServer, 500, "server_error", "The server had an error processing your request", openai.DefaultMaxRetries + 1},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			r := newReplay(t, tc.scenario)
			err := streamErr(t, newModel(t, r))
			assert.ErrorIs(t, err, tc.kind)
			pe := providerError(t, err)
			assert.Equal(t, openai.ProviderName, pe.Provider)
			assert.Equal(t, testModel, pe.Model)
			assert.Equal(t, tc.status, pe.StatusCode)
			assert.Equal(t, tc.code, pe.Code)
			assert.Contains(t, pe.Message, tc.message)
			assert.Contains(t, err.Error(), tc.message)
			assert.Contains(t, err.Error(), "openai")
			assert.Len(t, r.requestBodies(), tc.attempts)
		})
	}
}

func TestRetry_RetryThenTextMakesTwoRequests(t *testing.T) {
	r := newReplay(t, "retry_then_text")
	msg, stop := complete(t, newModel(t, r), userRequest())
	assert.Equal(t, "Hello from the model.", msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
	assert.Len(t, r.requestBodies(), 2)
}

func TestRetry_RateLimitMakesMaxRetriesPlusOneRequests(t *testing.T) {
	for _, retries := range []int{1, 4} {
		r := newReplay(t, "err_rate_limit")
		err := streamErr(t, newModel(t, r, func(c *openai.Config) { c.MaxRetries = retries }))
		assert.ErrorIs(t, err, model.ErrRateLimited)
		assert.Len(t, r.requestBodies(), retries+1, "MaxRetries %d", retries)
	}
}

func TestRetry_NoRetriesMakesOneRequest(t *testing.T) {
	r := newReplay(t, "err_server")
	err := streamErr(t, newModel(t, r, func(c *openai.Config) { c.MaxRetries = openai.NoRetries }))
	assert.ErrorIs(t, err, model.ErrServer)
	assert.Len(t, r.requestBodies(), 1)
}

// An exhausted quota is a 429 that waiting does not cure: not retried.
func TestRetry_InsufficientQuotaIsNotRetried(t *testing.T) {
	r := newInline(t, httpError(429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
	err := streamErr(t, newModel(t, r))
	assert.ErrorIs(t, err, model.ErrRateLimited)
	pe := providerError(t, err)
	assert.Equal(t, "insufficient_quota", pe.Code)
	assert.Contains(t, err.Error(), "You exceeded your current quota")
	assert.Len(t, r.requestBodies(), 1)

	// The older shape: code null, the type says it.
	r = newInline(t, httpError(429, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":null}}`))
	err = streamErr(t, newModel(t, r))
	assert.Equal(t, "insufficient_quota", providerError(t, err).Code)
	assert.Len(t, r.requestBodies(), 1)
}

func TestRetry_HonoursRetryAfter(t *testing.T) {
	limited := `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	for _, tc := range []struct {
		header string
		wait   time.Duration
	}{
		{"Retry-After: 1", time.Second},
		{"Retry-After-Ms: 300", 300 * time.Millisecond},
	} {
		t.Run(tc.header, func(t *testing.T) {
			r := newInline(t, httpError(429, limited, tc.header), sse(text("Hi"), finish("stop"), done))
			m := newModel(t, r, func(c *openai.Config) { c.RetryBaseDelay = time.Millisecond })
			start := time.Now()
			msg, _ := complete(t, m, userRequest())
			assert.Equal(t, "Hi", msg.Text())
			assert.GreaterOrEqual(t, time.Since(start), tc.wait)
			assert.Less(t, time.Since(start), tc.wait+3*time.Second)
			assert.Len(t, r.requestBodies(), 2)
		})
	}
}

// A wait longer than a minute is not slept through: the call ends with
// the error, whose RetryAfter says how long to wait.
func TestRetry_LongRetryAfterEndsWithErrorCarryingIt(t *testing.T) {
	r := newInline(t, httpError(429, `{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After: 3600"))
	start := time.Now()
	err := streamErr(t, newModel(t, r))
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.ErrorIs(t, err, model.ErrRateLimited)
	assert.Equal(t, time.Hour, providerError(t, err).RetryAfter)
	assert.Len(t, r.requestBodies(), 1)
}

// Error shapes of other OpenAI-compatible servers, and other statuses.
func TestErrors_ClassesOfOtherShapesAndStatuses(t *testing.T) {
	for name, tc := range map[string]struct {
		status  int
		body    string
		kind    error
		message string
	}{
		"403 model not allowed": {403, `{"error":{"message":"Project does not have access to model gpt-4o","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			model.ErrUnknownModel, "does not have access"},
		"403 forbidden": {403, `{"error":{"message":"You are not allowed to sample from this model","type":"invalid_request_error","param":null,"code":null}}`,
			model.ErrAuth, "not allowed"},
		"400 bad request": {400, `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
			model.ErrBadRequest, "Invalid value for 'temperature'"},
		"422 unprocessable": {422, `{"detail":"messages: field required"}`,
			model.ErrBadRequest, "messages: field required"},
		"vLLM context length": {400, `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.","type":"BadRequestError","param":null,"code":400}`,
			model.ErrContextWindow, "maximum context length is 8192"},
		"llama.cpp context size": {400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`,
			model.ErrContextWindow, "exceeds the available context size"},
		"Ollama unknown model": {404, `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
			model.ErrUnknownModel, `model "llama9" not found`},
		"Ollama bad request": {400, `{"error":{"message":"invalid tool schema","type":"api_error","param":null,"code":null}}`,
			model.ErrBadRequest, "invalid tool schema"},
		"502 html": {502, `<html><body>Bad Gateway</body></html>`,
			model.ErrServer, "Bad Gateway"},
		"503 empty": {503, ``,
			model.ErrServer, "Service Unavailable"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newInline(t, httpError(tc.status, tc.body))
			err := streamErr(t, newModel(t, r, func(c *openai.Config) { c.MaxRetries = openai.NoRetries }))
			assert.ErrorIs(t, err, tc.kind)
			pe := providerError(t, err)
			assert.Equal(t, tc.status, pe.StatusCode)
			assert.Contains(t, err.Error(), tc.message)
		})
	}
}

// No server at all: a ProviderError with no class, after the retries.
func TestErrors_ConnectionRefusedIsProviderErrorAfterRetries(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.APIKey = testKey
	cfg.BaseURL = url + "/v1"
	cfg.RetryBaseDelay = time.Millisecond
	m, err := openai.New(cfg)
	require.NoError(t, err)
	err = streamErr(t, m)
	pe := providerError(t, err)
	assert.Nil(t, pe.Kind)
	assert.Equal(t, 0, pe.StatusCode)
	assert.Contains(t, err.Error(), "request failed")
}

// A base URL may carry a proxy's user:password@ and the requests carry the
// API key: no error the provider returns, at any level of its chain, says
// either, whatever failed, nor dumps either (the SDK's error has
// DumpRequest), nor keeps them in the request it holds.
func TestErrors_NoLevelOfAnErrorCarriesThePasswordOrTheAPIKey(t *testing.T) {
	const password = "pr0xy-s3cret"
	for name, handler := range map[string]http.HandlerFunc{
		"HTTP 400": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`)
		},
		"HTTP 500 after the retries": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		},
		"error event after content": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"+
				"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n")
		},
		"stream cut": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		"no server": nil,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			if handler == nil {
				srv.Close()
			} else {
				t.Cleanup(srv.Close)
			}
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("OPENAI_BASE_URL", "")
			cfg := openai.DefaultConfig()
			cfg.Model = testModel
			cfg.APIKey = testKey
			cfg.BaseURL = strings.Replace(srv.URL, "http://", "http://proxyuser:"+password+"@", 1) + "/v1"
			cfg.MaxRetries = 1
			cfg.RetryBaseDelay = time.Millisecond
			// No Timeout: the call's context is the caller's, still live
			// when the error is dumped.
			cfg.Timeout = 0
			m, err := openai.New(cfg)
			require.NoError(t, err)
			err = streamErr(t, m)
			for _, text := range modeltest.ErrorPrintouts(err) {
				assert.NotContains(t, text, password)
				assert.NotContains(t, text, testKey)
			}
			var apiErr *sdk.Error
			if errors.As(err, &apiErr) {
				for _, r := range []*http.Request{apiErr.Request, apiErr.Response.Request} {
					require.NotNil(t, r)
					assert.NotContains(t, r.URL.String(), password)
					assert.Empty(t, r.Header.Get("Authorization"), "a request kept in the error has no credentials")
				}
				assert.NotEmpty(t, apiErr.DumpRequest(true), "the request can still be dumped")
			}
		})
	}
}

// Without an API key, the HTTP client sends the base URL's user info as
// basic auth: the response the SDK's error keeps does not hold that
// header either.
func TestErrors_SDKErrorHoldsNoBasicAuthFromTheBaseURL(t *testing.T) {
	const password = "pr0xy-s3cret"
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.BaseURL = strings.Replace(srv.URL, "http://", "http://proxyuser:"+password+"@", 1) + "/v1"
	cfg.MaxRetries = openai.NoRetries
	m, err := openai.New(cfg)
	require.NoError(t, err)
	err = streamErr(t, m)
	require.True(t, strings.HasPrefix(gotAuth, "Basic "), "the proxy got basic auth: %q", gotAuth)
	var apiErr *sdk.Error
	require.True(t, errors.As(err, &apiErr))
	assert.Empty(t, apiErr.Response.Request.Header.Get("Authorization"))
	for _, text := range modeltest.ErrorPrintouts(err) {
		assert.NotContains(t, text, password)
		assert.NotContains(t, text, strings.TrimPrefix(gotAuth, "Basic "))
	}
}

// The SDK's error, found with errors.As, keeps what helps to diagnose a
// failure: the status, the API's code, type and message, the response's
// headers (the request id) and body, the request's method and URL; and
// the error's class and retries are as before.
func TestErrors_SDKErrorKeepsStatusMessageAndRequestID(t *testing.T) {
	body := `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":"server_error"}}`
	r := newInline(t,
		httpError(500, body, "X-Request-Id: req_1"),
		httpError(500, body, "X-Request-Id: req_2"))
	err := streamErr(t, newModel(t, r, func(c *openai.Config) { c.MaxRetries = 1; c.RetryBaseDelay = time.Millisecond }))
	assert.ErrorIs(t, err, model.ErrServer)
	assert.Len(t, r.requestBodies(), 2, "retried once")
	var apiErr *sdk.Error
	require.True(t, errors.As(err, &apiErr))
	assert.Equal(t, 500, apiErr.StatusCode)
	assert.Equal(t, "server_error", apiErr.Code)
	assert.Equal(t, "server_error", apiErr.Type)
	assert.Equal(t, "The server had an error", apiErr.Message)
	assert.Equal(t, "req_2", apiErr.Response.Header.Get("X-Request-Id"))
	assert.Equal(t, http.MethodPost, apiErr.Request.Method)
	assert.True(t, strings.HasSuffix(apiErr.Request.URL.Path, "/chat/completions"), apiErr.Request.URL.Path)
	assert.Contains(t, string(apiErr.DumpResponse(true)), "The server had an error")
	assert.Contains(t, string(apiErr.DumpRequest(true)), `"model":"`+testModel+`"`)
}
