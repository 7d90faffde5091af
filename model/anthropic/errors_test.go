package anthropic_test

import (
	"errors"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
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
