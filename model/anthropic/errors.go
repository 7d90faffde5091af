package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/internal/redact"
	"github.com/braidhq/braid/model/internal/retry"
)

const (
	// maxBackoff caps the exponential backoff.
	maxBackoff = 30 * time.Second
)

// apiError turns an error of the SDK into a *model.ProviderError. started
// says whether the stream had begun (message_start seen).
func (m *Model) apiError(err error, started bool) error {
	var aerr *sdk.Error
	if !errors.As(err, &aerr) {
		if started {
			return m.incompleteError(err)
		}
		return m.connectionError(err)
	}
	pe := &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Code:     string(aerr.Type()),
		Message:  aerr.Message,
		Err:      withoutCredentials(aerr),
	}
	if aerr.StatusCode >= 400 {
		pe.StatusCode = aerr.StatusCode
	}
	// An error event inside a 200 stream has no status of its own.
	if aerr.Response != nil && pe.StatusCode != 0 {
		pe.RetryAfter = retry.After(aerr.Response.Header)
	}
	if pe.Message == "" {
		pe.Message = strings.TrimSpace(aerr.RawJSON())
	}
	pe.Kind = classify(pe.StatusCode, pe.Code, pe.Message)
	return pe
}

// withoutCredentials returns a copy of an SDK error that keeps its status,
// type, message and body, and a copy of its request without the base URL's
// password and without the API key's header: the SDK's Error() prints the
// request's URL, user info included.
func withoutCredentials(aerr *sdk.Error) *sdk.Error {
	c := *aerr
	c.Request = redact.Request(aerr.Request)
	if aerr.Response != nil {
		res := *aerr.Response
		res.Request = c.Request
		c.Response = &res
	}
	return &c
}

// classify returns the model error class of an API error: by HTTP status
// when there is one, else (an error event in the stream) by error type.
func classify(status int, code, msg string) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden,
		status == 0 && (code == "authentication_error" || code == "permission_error"):
		return model.ErrAuth
	case status == http.StatusNotFound, status == 0 && code == "not_found_error":
		return model.ErrUnknownModel
	case status == http.StatusTooManyRequests, status == 0 && code == "rate_limit_error":
		return model.ErrRateLimited
	case status >= 500, status == 0 && (code == "overloaded_error" || code == "api_error"):
		return model.ErrServer
	case (status == http.StatusBadRequest || status == 0 && code == "invalid_request_error") && contextWindowMessage(msg):
		return model.ErrContextWindow
	case status >= 400, status == 0 && code != "":
		return model.ErrBadRequest
	}
	return nil
}

// contextWindowMessage reports whether an invalid_request_error message says
// the input does not fit the context window ("prompt is too long: 208310
// tokens > 200000 maximum", "input length and `max_tokens` exceed context
// limit: ...").
func contextWindowMessage(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "exceed context limit", "context window", "context length"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// connectionError: the request got no answer (the connection was refused,
// reset, or cut before the stream began). It has no Kind, as for every
// provider, and is retried.
func (m *Model) connectionError(err error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  "request failed: " + err.Error(),
		Err:      err,
	}
}

// retryWait says whether err may be retried after attempt (0-based) and
// after how long. connFailed: err is a failed connection (connectionError),
// retried like a server error.
func (m *Model) retryWait(err error, connFailed bool, attempt int) (time.Duration, bool) {
	if attempt >= m.cfg.MaxRetries {
		return 0, false
	}
	var pe *model.ProviderError
	if !errors.As(err, &pe) || (!connFailed && pe.Kind != model.ErrRateLimited && pe.Kind != model.ErrServer) {
		return 0, false
	}
	// A 429 for a spend limit lasts until the limit resets: retrying fails.
	var aerr *sdk.Error
	if errors.As(pe.Err, &aerr) {
		switch aerr.ErrorCode() {
		case sdk.ErrorCodeEnforcedSpendLimitReached, sdk.ErrorCodeContractSpendLimitReached:
			return 0, false
		}
	}
	if pe.RetryAfter > 0 {
		return pe.RetryAfter, pe.RetryAfter <= retry.MaxAfter
	}
	return retry.Backoff{Base: m.cfg.RetryBaseDelay, Max: maxBackoff}.Delay(attempt), true
}

// streamError wraps an error found in a stream's events.
func (m *Model) streamError(err error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  err.Error(),
		Err:      err,
	}
}

// incompleteError: the stream ended (cleanly when cause is nil) before
// message_stop.
func (m *Model) incompleteError(cause error) error {
	msg := "stream ended before message_stop"
	err := model.ErrIncompleteStream
	if cause != nil {
		msg += ": " + cause.Error()
		err = fmt.Errorf("%w: %w", model.ErrIncompleteStream, cause)
	}
	return &model.ProviderError{Provider: ProviderName, Model: m.cfg.Model, Message: msg, Kind: model.ErrServer, Err: err}
}

// timeoutError: the attempt ran past Config.Timeout.
func (m *Model) timeoutError(cause error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  fmt.Sprintf("no complete answer within the request timeout (%v)", m.cfg.Timeout),
		Err:      cause,
	}
}
