package model

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error classes a provider reports, the same for every provider. A provider
// returns a *ProviderError whose Kind is one of these (or nil for anything
// else), so callers test them with errors.Is whatever the provider.
var (
	// ErrAuth: the API key (or other credentials) was missing or refused.
	ErrAuth = errors.New("authentication failed: check the API key or credentials")
	// ErrUnknownModel: the provider does not know the model id, or the
	// account may not use it.
	ErrUnknownModel = errors.New("unknown model")
	// ErrRateLimited: the provider refused the call for too many requests or
	// tokens, and retries did not get through.
	ErrRateLimited = errors.New("rate limited")
	// ErrContextWindow: the request is longer than the model's context window.
	ErrContextWindow = errors.New("input exceeds the model's context window")
	// ErrServer: the provider failed (5xx, overloaded), and retries did not
	// get through.
	ErrServer = errors.New("provider server error")
	// ErrBadRequest: the provider refused the request as malformed.
	ErrBadRequest = errors.New("request refused by the provider")
)

// ProviderError is an error from a model provider's API.
type ProviderError struct {
	Provider   string // "openai", "anthropic", "bedrock"
	Model      string // the model id of the request
	StatusCode int    // HTTP status, 0 when there was none
	Code       string // the provider's error type or code, when it gave one
	Message    string // the provider's message
	// Kind is the class of the error (ErrAuth, ErrRateLimited, ...), or nil.
	Kind error
	// RetryAfter is the wait the provider asked for, when it gave one.
	RetryAfter time.Duration
	// Err is the underlying error (the SDK's), if any.
	Err error
}

// Error says which provider and model failed, the class, the HTTP status and
// code, and the provider's own message.
func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s model %q", e.Provider, e.Model)
	if e.Kind != nil {
		fmt.Fprintf(&b, ": %v", e.Kind)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.StatusCode)
		if e.Code != "" {
			fmt.Fprintf(&b, ", %s", e.Code)
		}
		b.WriteString(")")
	} else if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	} else if e.Err != nil && e.Kind == nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Is matches the error's Kind.
func (e *ProviderError) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }
