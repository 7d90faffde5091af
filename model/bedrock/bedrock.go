package bedrock

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/schemas"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/braidhq/braid/model"
	modelretry "github.com/braidhq/braid/model/internal/retry"
)

// Model is a model.Model that streams turns from the Bedrock Converse API
// (ConverseStream). It holds one SDK client and no per-call state, so it is
// safe for concurrent use by several agents.
type Model struct {
	cfg      Config
	client   *bedrockruntime.Client
	creds    aws.CredentialsProvider
	bearer   bool // a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK) signs instead
	attempts int
	backoff  backoff
}

var _ model.Model = (*Model)(nil)

// New validates cfg, loads the AWS configuration (which may read the
// shared config and credentials files, hence ctx) and returns the model.
// Credentials are not retrieved until the first Stream. An endpoint with
// user info, from BaseURL or the AWS configuration, is refused with
// ErrInvalidConfig (see Config.BaseURL).
func New(ctx context.Context, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.resolved()
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("bedrock: loading the AWS configuration (environment, shared config and credentials files): %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	cfg.Region = awsCfg.Region
	m := &Model{
		cfg:      cfg,
		creds:    awsCfg.Credentials,
		attempts: cfg.retries() + 1,
		backoff:  backoff{base: cfg.RetryBaseDelay},
	}
	m.client = bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		if cfg.BaseURL != "" {
			o.BaseEndpoint = aws.String(cfg.BaseURL)
		}
		o.Retryer = newRetryer(m.attempts, m.backoff)
		o.RetryMaxAttempts = 0 // MaxRetries wins over AWS_MAX_ATTEMPTS
		o.HTTPClient = bodyGuard{next: o.HTTPClient}
		m.bearer = o.BearerAuthTokenProvider != nil
	})
	if ep := m.client.Options().BaseEndpoint; cfg.BaseURL == "" && ep != nil {
		if u, err := url.Parse(*ep); err == nil && u.User != nil {
			return nil, fmt.Errorf("%w: the endpoint of the AWS configuration (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL or the profile's endpoint_url) %s",
				ErrInvalidConfig, userInfoProblem(*ep))
		}
	}
	return m, nil
}

// Config returns the model's config as in effect: Region resolved,
// MaxRetries and RetryBaseDelay defaulted. New(ctx, m.Config()) makes the
// same model.
func (m *Model) Config() Config { return m.cfg.resolved() }

// Stream sends req to ConverseStream and yields the answer as it arrives:
// a *model.TextDelta per text fragment, *model.ToolUseStart,
// *model.ToolInputDelta and *model.BlockStop for each tool use, *model.BlockStop
// after each text block, then one *model.MessageStop with the stop reason
// and the token usage (which Bedrock sends after messageStop). Reasoning,
// citation and other deltas Braid does not model are skipped.
//
// Failed attempts are retried (Config.MaxRetries) while nothing has been
// yielded. A failure ends the sequence with a *model.ProviderError whose
// Kind classes it (model.ErrAuth, ErrRateLimited, ...); a stream that ends
// before messageStop ends with one wrapping model.ErrIncompleteStream. When
// ctx is done the sequence ends at once with an error matching ctx.Err().
// Stopping the iteration early closes the connection.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, m.failure(ctx, ctx, err))
			return
		}
		in, err := m.input(req)
		if err != nil {
			yield(nil, &model.ProviderError{
				Provider: providerName, Model: m.cfg.Model, Kind: model.ErrBadRequest,
				Message: err.Error(), Err: err,
			})
			return
		}
		callCtx := ctx
		if m.cfg.Timeout > 0 {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(ctx, m.cfg.Timeout)
			defer cancel()
		}
		if err := m.checkCredentials(callCtx); err != nil {
			yield(nil, m.failure(ctx, callCtx, err))
			return
		}
		attempts := 0
		for {
			left := m.attempts - attempts
			out, err := m.client.ConverseStream(callCtx, in, func(o *bedrockruntime.Options) {
				o.Retryer = retry.AddWithMaxAttempts(o.Retryer, left)
				// A protocol of its own for each stream: the SDK's protocol
				// keeps one event-stream codec (decoder, buffers) for all
				// the streams of a client, which concurrent streams race on
				// (aws/smithy-go#714).
				o.Protocol = restjson1.New(schemas.AmazonBedrockFrontendService)
			})
			if err != nil {
				yield(nil, m.failure(ctx, callCtx, err))
				return
			}
			attempts += attemptsMade(out.ResultMetadata)
			t := turn{yield: yield}
			err = t.read(callCtx, out.GetStream())
			if err == nil {
				return
			}
			if t.retryable(err) && attempts < m.attempts {
				if err := modelretry.Sleep(callCtx, m.backoff.delay(attempts)); err != nil {
					yield(nil, m.failure(ctx, callCtx, err))
					return
				}
				continue
			}
			yield(nil, m.failure(ctx, callCtx, err))
			return
		}
	}
}

// attemptsMade is how many HTTP attempts the SDK made for one call.
func attemptsMade(md middleware.Metadata) int {
	if r, ok := retry.GetAttemptResults(md); ok && len(r.Results) > 0 {
		return len(r.Results)
	}
	return 1
}

// credentialsError: the credentials could not be retrieved.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// checkCredentials retrieves the credentials (cached by the SDK) so that
// their absence is reported as such, before any request. A Bedrock API key
// (AWS_BEARER_TOKEN_BEDROCK, which the SDK prefers) needs none.
func (m *Model) checkCredentials(ctx context.Context) error {
	if m.bearer {
		return nil
	}
	if m.creds == nil {
		return &credentialsError{errors.New("no credentials provider")}
	}
	if aws.IsCredentialsProvider(m.creds, aws.AnonymousCredentials{}) {
		return nil
	}
	if _, err := m.creds.Retrieve(ctx); err != nil {
		return &credentialsError{err}
	}
	return nil
}

// failure is the error that ends a Stream: ctx's error when the caller went
// away, a timeout error when Config.Timeout passed (callCtx is done), else a
// *model.ProviderError.
func (m *Model) failure(ctx, callCtx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if ctxErr := callCtx.Err(); ctxErr != nil {
		return &model.ProviderError{
			Provider: providerName, Model: m.cfg.Model,
			Message: fmt.Sprintf("no complete answer within the %v Timeout", m.cfg.Timeout),
			Err:     ctxErr,
		}
	}
	var ce *credentialsError
	if errors.As(err, &ce) {
		return &model.ProviderError{
			Provider: providerName, Model: m.cfg.Model, Kind: model.ErrAuth,
			Message: "no usable AWS credentials (set Config.Credentials, or configure the default chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, a role): " + ce.err.Error(),
			Err:     withoutCredentials(ce.err), // a credential provider's request (STS, SSO) may have failed
		}
	}
	if errors.Is(err, model.ErrIncompleteStream) {
		return &model.ProviderError{
			Provider: providerName, Model: m.cfg.Model, Kind: model.ErrServer,
			Message: "the event stream ended before messageStop: the answer is incomplete",
			Err:     err,
		}
	}
	var perr *protocolError
	if errors.As(err, &perr) {
		return &model.ProviderError{
			Provider: providerName, Model: m.cfg.Model,
			Message: "unexpected event stream: " + perr.msg,
			Err:     err,
		}
	}
	return m.apiError(err)
}
