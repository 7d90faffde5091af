package bedrock_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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

// Bedrock's answers keep, in the AWS SDK's errors, the HTTP response with
// the request that was sent. Whether that request was authorised by a
// Bedrock API key (bearer) or signed with SigV4 and a session token, no
// level of the error a Stream returns holds those credentials: not in a
// printout, not in the headers of a request reachable with errors.As. The
// typed errors, status code, request id and class stay as they were.
func TestErrors_NoLevelOfAnErrorCarriesTheBearerTokenOrTheSessionToken(t *testing.T) {
	const (
		apiKey       = "bedrock-api-key-s3cret"
		keyID        = "ASIATESTSESSIONKEY"
		secretKey    = "session-secret-key"
		sessionToken = "session-token-s3cret"
		requestID    = "11111111-2222-4333-8444-555555555555"
	)
	secrets := []string{apiKey, keyID, secretKey, sessionToken, "Signature="}
	for _, tc := range []struct {
		name   string
		status int
		code   string
		kind   error
	}{
		{"HTTP 400", http.StatusBadRequest, "ValidationException", model.ErrBadRequest},
		{"HTTP 403", http.StatusForbidden, "AccessDeniedException", model.ErrAuth},
		{"HTTP 500 after the retries", http.StatusInternalServerError, "InternalServerException", model.ErrServer},
	} {
		for _, auth := range []string{"bearer", "sigv4"} {
			t.Run(tc.name+"/"+auth, func(t *testing.T) {
				isolateAWS(t)
				var sent http.Header
				handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent = r.Header.Clone()
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("X-Amzn-Errortype", tc.code)
					w.Header().Set("X-Amzn-Requestid", requestID)
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, `{"message":"refused"}`)
				})
				var srv *httptest.Server
				cfg := testConfig("")
				if auth == "bearer" {
					t.Setenv("AWS_BEARER_TOKEN_BEDROCK", apiKey)
					srv = httptest.NewTLSServer(handler) // the SDK sends bearer tokens over HTTPS only
					cfg.Credentials = nil
					cfg.HTTPClient = srv.Client()
				} else {
					srv = httptest.NewServer(handler)
					cfg.Credentials = credentials.NewStaticCredentialsProvider(keyID, secretKey, sessionToken)
				}
				t.Cleanup(srv.Close)
				cfg.BaseURL = srv.URL
				cfg.MaxRetries = 1
				m, err := bedrock.New(context.Background(), cfg)
				require.NoError(t, err)

				_, err = collect(context.Background(), m, userRequest())
				require.Error(t, err)
				if auth == "bearer" {
					require.Equal(t, "Bearer "+apiKey, sent.Get("Authorization"), "precondition: the key was sent")
				} else {
					require.Contains(t, sent.Get("Authorization"), "Credential="+keyID+"/", "precondition: the request was signed")
					require.Equal(t, sessionToken, sent.Get("X-Amz-Security-Token"), "precondition: the session token was sent")
				}

				for _, text := range modeltest.ErrorPrintouts(err) {
					for _, s := range secrets {
						assert.NotContains(t, text, s)
					}
				}
				var kept []*http.Request
				for _, e := range modeltest.ErrorChain(err) {
					if h, ok := e.(interface{ HTTPResponse() *smithyhttp.Response }); ok {
						kept = append(kept, h.HTTPResponse().Request)
					}
				}
				var awsErr *awshttp.ResponseError
				require.ErrorAs(t, err, &awsErr, "the SDK's response error is kept")
				var smithyErr *smithyhttp.ResponseError
				require.ErrorAs(t, err, &smithyErr)
				kept = append(kept, awsErr.Response.Request, smithyErr.Response.Request)
				for _, r := range kept {
					require.NotNil(t, r, "the request is still recorded")
					assert.Contains(t, r.URL.Path, "/converse-stream")
					assert.Empty(t, r.Header.Get("Authorization"))
					assert.Empty(t, r.Header.Get("X-Amz-Security-Token"))
					for name, values := range r.Header {
						for _, v := range values {
							for _, s := range secrets {
								assert.NotContains(t, v, s, "header %s", name)
							}
						}
					}
				}

				assert.ErrorIs(t, err, tc.kind)
				assert.Equal(t, tc.status, awsErr.HTTPStatusCode())
				assert.Equal(t, requestID, awsErr.ServiceRequestID())
				var apiErr smithy.APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tc.code, apiErr.ErrorCode())
				var opErr *smithy.OperationError
				assert.ErrorAs(t, err, &opErr)
				var pe *model.ProviderError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.status, pe.StatusCode)
				assert.Equal(t, tc.code, pe.Code)
				switch tc.code {
				case "ValidationException":
					var typed *types.ValidationException
					assert.ErrorAs(t, err, &typed)
				case "AccessDeniedException":
					var typed *types.AccessDeniedException
					assert.ErrorAs(t, err, &typed)
				case "InternalServerException":
					var typed *types.InternalServerException
					assert.ErrorAs(t, err, &typed)
					var maxErr *retry.MaxAttemptsError
					assert.ErrorAs(t, err, &maxErr, "the retries are said")
				}
			})
		}
	}
}

// failingProvider is a credential provider whose own signed request (to
// STS, say) was refused: its error keeps that request, as the SDK's do.
type failingProvider struct{ req *http.Request }

func (p failingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	res := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Request: p.req, Body: http.NoBody}
	return aws.Credentials{}, &smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: res},
			Err:      &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to assume the role"},
		},
		RequestID: "sts-request",
	}}
}

// When the credentials cannot be had because a credential provider's
// signed request failed, the ErrAuth error holds that request without its
// credentials.
func TestErrors_FailedCredentialRequestKeepsNoCredentials(t *testing.T) {
	isolateAWS(t)
	const sessionToken = "source-session-token-s3cret"
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1/", strings.NewReader("Action=AssumeRole"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=ASIASOURCEKEY/20250101/us-east-1/sts/aws4_request, Signature=abc")
	req.Header.Set("X-Amz-Security-Token", sessionToken)
	r := newReplay(t, "text", testModel)
	cfg := testConfig(r.srv.URL)
	cfg.Credentials = failingProvider{req: req}
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)

	_, err = collect(context.Background(), m, userRequest())
	require.ErrorIs(t, err, model.ErrAuth)
	assert.Empty(t, r.Requests())
	var awsErr *awshttp.ResponseError
	require.ErrorAs(t, err, &awsErr, "the provider's error is kept")
	assert.Equal(t, "sts-request", awsErr.ServiceRequestID())
	assert.Equal(t, http.StatusForbidden, awsErr.HTTPStatusCode())
	require.NotNil(t, awsErr.Response.Request)
	assert.Empty(t, awsErr.Response.Request.Header.Get("Authorization"))
	assert.Empty(t, awsErr.Response.Request.Header.Get("X-Amz-Security-Token"))
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "AccessDenied", apiErr.ErrorCode())
	for _, text := range modeltest.ErrorPrintouts(err) {
		assert.NotContains(t, text, sessionToken)
		assert.NotContains(t, text, "ASIASOURCEKEY")
	}
	assert.Equal(t, sessionToken, req.Header.Get("X-Amz-Security-Token"), "the provider's own request is not changed")
}
