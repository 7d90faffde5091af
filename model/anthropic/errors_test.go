package anthropic_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/modeltest"
)

func TestErrors_ClassStatusCodeAndMessagePerCase(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		kind     error
		status   int
		code     string
		message  string
	}{
		{"err_auth", model.ErrAuth, 401, "authentication_error", "invalid x-api-key"},
		{"err_permission", model.ErrAuth, 403, "permission_error", "does not have permission"},
		{"err_unknown_model", model.ErrUnknownModel, 404, "not_found_error", "model: claude-sonnet-4-5"},
		{"err_rate_limit", model.ErrRateLimited, 429, "rate_limit_error", "exceed the rate limit"},
		{"err_context_window", model.ErrContextWindow, 400, "invalid_request_error", "prompt is too long"},
		{"err_bad_request", model.ErrBadRequest, 400, "invalid_request_error", "field required"},
		{"err_server", model.ErrServer, 500, "api_error", "Internal server error"},
		{"err_overloaded", model.ErrServer, 529, "overloaded_error", "Overloaded"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			m, _ := newModel(t, tc.scenario, nil)
			events, err := collect(t, m, weatherRequest())
			assert.Empty(t, events)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.kind)
			var pe *model.ProviderError
			require.True(t, errors.As(err, &pe), "%T: %v", err, err)
			assert.Equal(t, anthropic.ProviderName, pe.Provider)
			assert.Equal(t, "claude-sonnet-4-5", pe.Model)
			assert.Equal(t, tc.status, pe.StatusCode)
			assert.Equal(t, tc.code, pe.Code)
			assert.Contains(t, pe.Message, tc.message)
			assert.Contains(t, err.Error(), tc.message, "Error() carries the API's message")
			assert.Contains(t, err.Error(), "anthropic")
			var apiErr *sdk.Error
			require.True(t, errors.As(err, &apiErr), "the SDK's error is kept as Err")
			assert.Equal(t, tc.status, apiErr.StatusCode)
		})
	}
}

func TestErrors_ErrorEventMidStreamEndsTheTurnWithoutRetry(t *testing.T) {
	m, r := newModel(t, "error_mid_stream", nil)
	events, err := collect(t, m, weatherRequest())

	require.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Partial"}}, events)
	require.Error(t, err)
	assert.ErrorIs(t, err, model.ErrServer)
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "overloaded_error", pe.Code)
	assert.Zero(t, pe.StatusCode, "the HTTP status was 200; the error came in the stream")
	assert.Contains(t, err.Error(), "Overloaded")
	assert.Equal(t, 1, r.Count(), "no retry once text was yielded")
}

func TestErrors_StreamEndingBeforeMessageStopIsAnError(t *testing.T) {
	for _, scenario := range []string{
		"stream_cut",   // the body ends cleanly, without message_delta and message_stop
		"stream_reset", // the connection drops
	} {
		t.Run(scenario, func(t *testing.T) {
			m, r := newModel(t, scenario, nil)
			events, err := collect(t, m, weatherRequest())

			assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hello"}, &model.TextDelta{Text: " from"}}, events)
			require.Error(t, err, "not a silent partial turn")
			assert.ErrorIs(t, err, model.ErrIncompleteStream)
			var pe *model.ProviderError
			require.True(t, errors.As(err, &pe))
			assert.Contains(t, err.Error(), "message_stop")
			assert.Equal(t, 1, r.Count())
		})
	}
}

// A base URL may carry a proxy's user:password@ and the requests carry the
// API key: no error the provider returns, at any level of its chain, says
// either, whatever failed (an HTTP error, an error event before or after
// content, a cut stream, no server at all). The SDK's error is still there
// to errors.As, with its status.
func TestErrors_NoLevelOfAnErrorCarriesThePasswordOrTheAPIKey(t *testing.T) {
	const password = "pr0xy-s3cret"
	errorEvent := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
	for name, handler := range map[string]http.HandlerFunc{
		"HTTP 400": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}`)
		},
		"HTTP 529 after the retries": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		},
		"error event before content": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, errorEvent)
		},
		"error event after content": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, start+errorEvent)
		},
		"stream cut": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, start)
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
			baseURL := strings.Replace(srv.URL, "http://", "http://proxyuser:"+password+"@", 1)
			m := flakyModel(t, baseURL, nil, 1)
			_, err := collect(t, m, weatherRequest())
			require.Error(t, err)
			for _, text := range modeltest.ErrorPrintouts(err) {
				assert.NotContains(t, text, password)
				assert.NotContains(t, text, testAPIKey)
			}
			var apiErr *sdk.Error
			if errors.As(err, &apiErr) {
				assert.NotContains(t, apiErr.Request.URL.String(), password)
				assert.Empty(t, apiErr.Request.Header.Get("Authorization"), "the request kept in the error has no credentials")
				assert.NotContains(t, string(apiErr.DumpRequest(false)), testAPIKey)
			}
		})
	}
}
