package bedrock_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/modeltest"
)

func TestErrors_EachAnswerHasItsClassExceptionAndMessage(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		kind     error
		status   int
		code     string
		message  string
	}{
		{"err_auth", model.ErrAuth, 403, "UnrecognizedClientException", "The security token included in the request is invalid."},
		{"err_unknown_model", model.ErrUnknownModel, 400, "ValidationException", "The provided model identifier is invalid."},
		{"err_rate_limit", model.ErrRateLimited, 429, "ThrottlingException", "Too many requests, please wait before trying again."},
		{"err_context_window", model.ErrContextWindow, 400, "ValidationException", "Input is too long for requested model."},
		{"err_server", model.ErrServer, 500, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."},
		{"stream_exception", model.ErrServer, 0, "ModelStreamErrorException", "Model stream error: the model stopped answering."},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			m, _ := newReplayModel(t, tc.scenario)
			_, err := collect(context.Background(), m, userRequest())
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.kind)
			var pe *model.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "bedrock", pe.Provider)
			assert.Equal(t, testModel, pe.Model)
			assert.Equal(t, tc.status, pe.StatusCode)
			assert.Equal(t, tc.code, pe.Code)
			assert.Equal(t, tc.message, pe.Message)
			assert.NotNil(t, pe.Err, "the SDK's error is kept")
			assert.Contains(t, err.Error(), tc.code)
			assert.Contains(t, err.Error(), tc.message)
			assert.Contains(t, err.Error(), testModel)
			for _, other := range []error{model.ErrAuth, model.ErrUnknownModel, model.ErrRateLimited, model.ErrContextWindow, model.ErrServer, model.ErrBadRequest} {
				if other != tc.kind {
					assert.False(t, errors.Is(err, other), "also %v", other)
				}
			}
		})
	}
}

func TestErrors_MissingCredentialsAreAuthErrorsAndSendNothing(t *testing.T) {
	isolateAWS(t) // no keys, no profile, no instance metadata
	r := newReplay(t, "text", testModel)
	cfg := testConfig(r.srv.URL)
	cfg.Credentials = nil // the default chain, which finds nothing
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err, "credentials are looked up when a request is made")

	_, err = collect(context.Background(), m, userRequest())
	require.ErrorIs(t, err, model.ErrAuth)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Message, "no usable AWS credentials")
	assert.Empty(t, r.Requests())
}

func TestErrors_CredentialsFromTheEnvironmentAreUsed(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENVIRONMENT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	r := newReplay(t, "text", testModel)
	cfg := testConfig(r.srv.URL)
	cfg.Credentials = nil
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	_, _, err = model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.Contains(t, reqs[0].Header.Get("Authorization"), "Credential=AKIDFROMENVIRONMENT/")
}

func TestErrors_BedrockAPIKeyNeedsNoCredentials(t *testing.T) {
	isolateAWS(t) // no keys, no profile
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "test-bedrock-api-key")
	r := newTLSReplay(t, "text", testModel) // the SDK sends bearer tokens over HTTPS only
	cfg := testConfig(r.srv.URL)
	cfg.Credentials = nil
	cfg.HTTPClient = r.srv.Client()
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	msg, _, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.NotEmpty(t, msg.Text())
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Bearer test-bedrock-api-key", reqs[0].Header.Get("Authorization"))
}

// The requests are signed with a secret key: no error the provider
// returns, at any level of its chain, says it, whatever failed. (A base URL
// with a password is refused by New: TestConfigValidate_RefusesABaseURLWithUserInfo.)
func TestErrors_NoLevelOfAnErrorCarriesTheSecretKey(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"HTTP 400": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "ValidationException")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"message":"bad"}`)
		},
		"HTTP 500 after the retries": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		},
		"stream cut": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		"no server": nil,
	} {
		t.Run(name, func(t *testing.T) {
			isolateAWS(t)
			srv := httptest.NewServer(handler)
			if handler == nil {
				srv.Close()
			} else {
				t.Cleanup(srv.Close)
			}
			cfg := testConfig(srv.URL)
			cfg.MaxRetries = 1
			m, err := bedrock.New(context.Background(), cfg)
			require.NoError(t, err)
			_, err = collect(context.Background(), m, &model.Request{Messages: []model.Message{model.UserText("hi")}})
			require.Error(t, err)
			for _, text := range modeltest.ErrorPrintouts(err) {
				assert.NotContains(t, text, "fake-secret")
			}
		})
	}
}
