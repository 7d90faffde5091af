package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/internal/redact"
	"github.com/braidhq/braid/model/internal/retry"
)

const (
	// maxBackoff caps the exponential backoff.
	maxBackoff = 30 * time.Second
	// maxErrorBody is how much of a non-JSON error body goes into a message.
	maxErrorBody = 512
)

// apiFailure is an error answer of the API: an HTTP error status, or an
// error event inside the stream (status 0).
type apiFailure struct {
	status     int
	code       string // the error's code, else its type
	typ        string
	message    string
	retryAfter time.Duration
	err        error
}

// httpFailure reads an HTTP error response. err is the SDK's error for it.
func httpFailure(res *http.Response, err error) apiFailure {
	f := apiFailure{status: res.StatusCode, retryAfter: retry.After(res.Header), err: err}
	var body []byte
	if res.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(res.Body, 1<<20))
	}
	f.fill(body)
	var aerr *sdk.Error
	if errors.As(err, &aerr) {
		f.err = withoutCredentials(aerr, body)
		if f.message == "" {
			f.code, f.typ, f.message = aerr.Code, aerr.Type, aerr.Message
		}
	}
	if f.message == "" {
		f.message = http.StatusText(res.StatusCode)
	}
	return f
}

// withoutCredentials returns a copy of an SDK error that an error may keep:
// its status, code, type, message and response (headers, the request id
// among them, and body) as they are, and a copy of its request without
// the base URL's password and the credential headers (redact.Request);
// the response refers to that copy. The SDK keeps the request as sent, API
// key and the base URL's user info included, for its DumpRequest.
func withoutCredentials(aerr *sdk.Error, body []byte) *sdk.Error {
	c := *aerr
	c.Request = redact.Request(aerr.Request)
	if aerr.Response != nil {
		res := *aerr.Response
		res.Request = c.Request
		res.Body = io.NopCloser(bytes.NewReader(body))
		c.Response = &res
	}
	return &c
}

// streamFailure reads an error event of the stream.
func streamFailure(serr *ssestream.StreamError) apiFailure {
	f := apiFailure{err: serr}
	f.fill(serr.Event.Data)
	if f.message == "" {
		f.message = serr.Message
	}
	return f
}

// errorBody is the usual error body: {"error":{"message","type","code"}}.
// Servers vary: code may be a number (llama.cpp), error may be a plain
// string, or the message may be at the top level.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Detail  json.RawMessage `json:"detail"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// fill reads code, type and message from an error body.
func (f *apiFailure) fill(body []byte) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return
	}
	var b errorBody
	if json.Unmarshal(body, &b) != nil {
		f.message = truncate(string(body))
		return
	}
	var obj errorObject
	var s string
	switch {
	case json.Unmarshal(b.Error, &obj) == nil && (obj.Message != "" || obj.Type != "" || len(obj.Code) > 0):
		f.message, f.typ = obj.Message, obj.Type
		var code string
		if json.Unmarshal(obj.Code, &code) != nil {
			code = "" // null, or a number (the HTTP status again)
		}
		f.code = code
	case json.Unmarshal(b.Error, &s) == nil:
		f.message = s
	case b.Message != "":
		f.message = b.Message
	case json.Unmarshal(b.Detail, &s) == nil:
		f.message = s
	default:
		f.message = truncate(string(body))
	}
	if f.code == "" {
		f.code = f.typ
	}
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxErrorBody {
		return s[:maxErrorBody] + "..."
	}
	return s
}

// kind classifies a failure (see the package doc).
func (f apiFailure) kind() error {
	code := strings.ToLower(f.code)
	typ := strings.ToLower(f.typ)
	has := func(vs ...string) bool {
		for _, v := range vs {
			if code == v || typ == v {
				return true
			}
		}
		return false
	}
	switch {
	case has("model_not_found"):
		// Before the status: OpenAI answers 403 model_not_found when the
		// project may not use the model.
		return model.ErrUnknownModel
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden,
		has("invalid_api_key"),
		f.status == 0 && has("authentication_error", "permission_error"):
		return model.ErrAuth
	case has("context_length_exceeded", "exceed_context_size_error"),
		(f.status == 0 || f.status == http.StatusBadRequest || f.status == http.StatusRequestEntityTooLarge) && contextWindowMessage(f.message):
		return model.ErrContextWindow
	case f.status == http.StatusNotFound:
		return model.ErrUnknownModel
	case f.status == http.StatusTooManyRequests,
		f.status == 0 && has("rate_limit_exceeded", "rate_limit_error", "insufficient_quota"):
		return model.ErrRateLimited
	case f.status >= 500,
		f.status == 0 && has("server_error", "api_error", "overloaded_error"):
		return model.ErrServer
	case f.status >= 400, f.status == 0 && (f.code != "" || f.typ != ""):
		return model.ErrBadRequest
	}
	return nil
}

// retryable says whether the failure may go away on a retry: rate limits
// (but not an exhausted quota) and server errors.
func (f apiFailure) retryable() bool {
	switch f.kind() {
	case model.ErrServer:
		return true
	case model.ErrRateLimited:
		return !strings.EqualFold(f.code, "insufficient_quota") && !strings.EqualFold(f.typ, "insufficient_quota")
	}
	return false
}

// contextWindowMessage reports whether an error message says the input does
// not fit the context window ("This model's maximum context length is 8192
// tokens...", "the request exceeds the available context size").
func contextWindowMessage(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"context length", "context window", "context size", "maximum context"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// providerError turns a failure into the error the stream ends with.
func (m *Model) providerError(f apiFailure) *model.ProviderError {
	return &model.ProviderError{
		Provider:   ProviderName,
		Model:      m.cfg.Model,
		StatusCode: f.status,
		Code:       f.code,
		Message:    f.message,
		Kind:       f.kind(),
		RetryAfter: f.retryAfter,
		Err:        f.err,
	}
}
