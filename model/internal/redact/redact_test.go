package redact_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/internal/redact"
)

func TestURL_HidesThePasswordWhetherOrNotTheURLParses(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:11434/v1":         "http://127.0.0.1:11434/v1",
		"https://user:s3cret@proxy/v1":      "https://user:xxxxx@proxy/v1",
		"https://user@proxy/v1":             "https://user@proxy/v1",
		"ftp://user:s3cret@proxy/v1":        "ftp://user:xxxxx@proxy/v1",
		"http://user:s3cret@pro xy/v1":      "http://user:xxxxx@pro xy/v1",
		"http://user:s3c@ret@[::1/v1?a=b@c": "http://user:xxxxx@[::1/v1?a=b@c",
		"api.example.com":                   "api.example.com",
		"http://[::1":                       "http://[::1",
	} {
		assert.Equal(t, want, redact.URL(raw), raw)
	}
}

func TestRequest_CopyHasNoPasswordNorCredentialHeaders(t *testing.T) {
	r, err := http.NewRequest(http.MethodPost, "http://user:s3cret@127.0.0.1:8080/v1/messages", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer sk-1")
	r.Header.Set("X-Api-Key", "sk-2")
	r.Header.Set("X-Amz-Security-Token", "session-token")
	r.Header.Set("x-amz-sso_bearer_token", "sso-token")
	r.Header.Set("Content-Type", "application/json")

	c := redact.Request(r)
	assert.Equal(t, "http://user:xxxxx@127.0.0.1:8080/v1/messages", c.URL.String())
	assert.Empty(t, c.Header.Get("Authorization"))
	assert.Empty(t, c.Header.Get("X-Api-Key"))
	assert.Empty(t, c.Header.Get("X-Amz-Security-Token"))
	assert.Empty(t, c.Header.Get("x-amz-sso_bearer_token"))
	assert.Equal(t, "application/json", c.Header.Get("Content-Type"))
	assert.Equal(t, "http://user:s3cret@127.0.0.1:8080/v1/messages", r.URL.String(), "the request itself is unchanged")
	assert.Equal(t, "Bearer sk-1", r.Header.Get("Authorization"))
	assert.Nil(t, redact.Request(nil))
}

// The copy outlives the call whose request it records: it does not share
// that call's context, which is cancelled when the call ends.
func TestRequest_CopyDoesNotShareTheCallsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8080/v1/messages", nil)
	require.NoError(t, err)
	c := redact.Request(r)
	cancel()
	assert.Error(t, r.Context().Err())
	assert.NoError(t, c.Context().Err())
}
