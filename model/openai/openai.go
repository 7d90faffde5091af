package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/internal/retry"
)

// ProviderName is the Provider of the *model.ProviderError values this
// package returns.
const ProviderName = "openai"

// Model is a model.Model served by an OpenAI-compatible Chat Completions API.
// It holds no per-call state: one Model is safe for concurrent use by many
// agents.
type Model struct {
	cfg    Config
	client sdk.Client
}

var _ model.Model = (*Model)(nil)

// New validates cfg, reads the environment for the fields left empty
// (OPENAI_API_KEY, OPENAI_BASE_URL), applies the defaults and returns the
// model. It sends nothing: a wrong key or model id shows on the first call.
// The SDK's own retries are off; Model retries as Config says.
func New(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.resolved()
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// ModelID returns the model id the requests carry.
func (m *Model) ModelID() string { return m.cfg.Model }

// Stream sends req as one streaming chat completion and yields the
// assistant turn: *model.TextDelta for text; *model.ToolUseStart,
// *model.ToolInputDelta... and *model.BlockStop for each tool call; a
// *model.BlockStop after each text block; and last a *model.MessageStop with
// the stop reason and the usage.
//
// A request that fails with a retryable error before anything was yielded
// is sent again (see Config.MaxRetries); after the first event it is not. A
// failure ends the sequence with a *model.ProviderError (see the package
// doc for the classes), a stream that breaks off or ends without a
// finish_reason with one that wraps model.ErrIncompleteStream, and a
// cancelled ctx with ctx.Err().
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if req == nil {
			yield(nil, m.requestError("the request is nil"))
			return
		}
		params, err := m.params(req)
		if err != nil {
			yield(nil, err)
			return
		}
		callCtx := ctx
		if m.cfg.Timeout > 0 {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(ctx, m.cfg.Timeout)
			defer cancel()
		}
		for n := 0; ; n++ {
			r := m.attempt(ctx, callCtx, params, yield)
			if r.done {
				return
			}
			wait, ok := m.retryWait(r, n)
			if !ok {
				yield(nil, r.err)
				return
			}
			if err := retry.Sleep(callCtx, wait); err != nil {
				if ctx.Err() == nil {
					err = m.timeoutError(err)
				}
				yield(nil, err)
				return
			}
		}
	}
}

// attemptResult is the outcome of one request.
type attemptResult struct {
	// done: the turn was yielded whole, or the consumer stopped early.
	done bool
	// err ends the sequence unless the request is retried.
	err error
	// retryable: nothing was yielded and the failure may pass.
	retryable bool
}

// retryWait says whether the failed attempt n (0-based) is retried, and
// after how long.
func (m *Model) retryWait(r attemptResult, n int) (time.Duration, bool) {
	if !r.retryable || n >= m.cfg.MaxRetries {
		return 0, false
	}
	var pe *model.ProviderError
	if errors.As(r.err, &pe) && pe.RetryAfter > 0 {
		return pe.RetryAfter, pe.RetryAfter <= retry.MaxAfter
	}
	return retry.Backoff{Base: m.cfg.RetryBaseDelay, Max: maxBackoff}.Delay(n), true
}

// attempt sends the request once and yields what comes back. actx is ctx
// bounded by Config.Timeout, for the whole Stream call.
func (m *Model) attempt(ctx, actx context.Context, params sdk.ChatCompletionNewParams, yield func(model.StreamEvent, error) bool) attemptResult {
	var res *http.Response
	stream := m.client.Chat.Completions.NewStreaming(actx, params, option.WithResponseInto(&res))
	defer stream.Close()

	var t turn
	yielded := false
	// send yields the queued events, and then stop when it is not nil. It
	// returns the result that ends the attempt, or false to read on. A
	// done ctx ends the attempt before each event: the answer may be read
	// already (buffered), so reading would not notice it.
	send := func(stop *model.MessageStop) (attemptResult, bool) {
		evs := t.take()
		if stop != nil {
			evs = append(evs, stop)
		}
		for _, ev := range evs {
			if err := m.cut(ctx, actx); err != nil {
				return attemptResult{err: err}, true
			}
			yielded = true
			if !yield(ev, nil) {
				return attemptResult{done: true}, true
			}
		}
		return attemptResult{done: stop != nil}, stop != nil
	}
	for stream.Next() {
		chunk := stream.Current()
		if err := t.add(&chunk); err != nil {
			return attemptResult{err: m.malformed(err)}
		}
		if r, end := send(nil); end {
			return r
		}
	}
	if err := stream.Err(); err != nil {
		return m.failure(ctx, actx, res, err, yielded)
	}
	stop, err := t.end()
	if err != nil {
		if errors.Is(err, errNoFinish) {
			return attemptResult{err: m.incomplete(err), retryable: !yielded}
		}
		return attemptResult{err: m.malformed(err)}
	}
	r, _ := send(stop)
	return r
}

// cut returns the error that ends the call when ctx is done (ctx.Err()) or
// actx, ctx bounded by Config.Timeout, is (a timeout error); else nil.
func (m *Model) cut(ctx, actx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := actx.Err(); err != nil {
		return m.timeoutError(err)
	}
	return nil
}

// timeoutError: Config.Timeout passed before the answer was complete.
func (m *Model) timeoutError(err error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  fmt.Sprintf("no complete response within the %v timeout (Config.Timeout)", m.cfg.Timeout),
		Err:      err,
	}
}

// failure turns the error a stream ended with into the attempt's result.
func (m *Model) failure(ctx, actx context.Context, res *http.Response, err error, yielded bool) attemptResult {
	if ctx.Err() != nil {
		return attemptResult{err: ctx.Err()}
	}
	if actx.Err() != nil {
		return attemptResult{err: m.timeoutError(actx.Err())}
	}
	if res != nil && res.StatusCode >= 400 {
		f := httpFailure(res, err)
		return attemptResult{err: m.providerError(f), retryable: !yielded && f.retryable()}
	}
	var serr *ssestream.StreamError
	if errors.As(err, &serr) {
		f := streamFailure(serr)
		return attemptResult{err: m.providerError(f), retryable: !yielded && f.retryable()}
	}
	if res == nil {
		// No response: the connection failed.
		return attemptResult{err: &model.ProviderError{
			Provider: ProviderName,
			Model:    m.cfg.Model,
			Message:  "request failed: " + err.Error(),
			Err:      err,
		}, retryable: true}
	}
	return attemptResult{err: m.incomplete(err), retryable: !yielded}
}

// incomplete is the error of a stream that broke off, or ended without
// finishing its turn: a server failure (model.ErrServer), as for every
// provider.
func (m *Model) incomplete(cause error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  "the response stream ended before the turn was complete: " + cause.Error(),
		Kind:     model.ErrServer,
		Err:      fmt.Errorf("%w: %w", model.ErrIncompleteStream, cause),
	}
}

// malformed is the error of a stream the server got wrong.
func (m *Model) malformed(cause error) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Message:  "malformed response stream: " + cause.Error(),
		Err:      cause,
	}
}
