package anthropic

import (
	"context"
	"errors"
	"iter"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/internal/retry"
)

// ProviderName is the Provider of the *model.ProviderError values this
// package returns.
const ProviderName = "anthropic"

// Model is a model.Model over the Anthropic Messages API (streaming). It is
// safe for concurrent use; it holds no state between calls besides its
// configuration and the SDK client.
type Model struct {
	cfg    Config // resolved: environment read, defaults applied
	client sdk.Client
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg. It reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL for the fields cfg leaves empty (and nothing else from
// the environment: no profiles, no auth tokens), applies the defaults and
// validates the result.
func New(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.resolved()
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		// Retries are this package's: the SDK's backoff cannot be tuned,
		// and a stream must not be retried once the caller has seen events.
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// ModelID returns the model id the Model sends.
func (m *Model) ModelID() string { return m.cfg.Model }

// errStopped: the caller stopped ranging over the sequence.
var errStopped = errors.New("anthropic: stream stopped by the caller")

// Stream sends req to the Messages API with stream: true and yields the
// answer as it arrives: *model.TextDelta for text, *model.ToolUseStart,
// *model.ToolInputDelta and *model.BlockStop for each tool use, and a final
// *model.MessageStop with the mapped stop reason and the usage.
//
// A request that fails with HTTP 429, 529 or 5xx, whose stream reports an
// overloaded or rate-limit error before any event was yielded, or whose
// connection fails before the stream begins (refused, reset, cut before
// the first event), is sent again up to Config.MaxRetries times, after the wait the response asks for
// (retry-after-ms, retry-after; at most a minute, else it is not retried) or
// an exponential backoff. Nothing is retried once an event was yielded.
//
// Errors are *model.ProviderError (see the package doc for their Kind),
// except that a cancelled ctx ends the sequence with ctx.Err(). A stream that
// ends before message_stop ends with an error wrapping
// model.ErrIncompleteStream. The caller may stop ranging at any time; the
// connection is then closed.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
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
		for attempt := 0; ; attempt++ {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			yielded, connFailed, err := m.attempt(ctx, callCtx, params, yield)
			if err == nil || errors.Is(err, errStopped) {
				return
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				yield(nil, ctxErr)
				return
			}
			wait, again := m.retryWait(err, connFailed, attempt)
			if yielded || !again {
				yield(nil, err)
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

// attempt sends one request and yields its events. It returns whether any
// event was yielded; whether the connection failed before the stream began
// (no answer, or one cut before message_start: connFailed); and nil once
// MessageStop was yielded, errStopped if the caller stopped, or the
// attempt's error. actx is ctx bounded by Config.Timeout, for the whole
// Stream call.
func (m *Model) attempt(ctx, actx context.Context, params sdk.MessageNewParams, yield func(model.StreamEvent, error) bool) (yielded, connFailed bool, err error) {
	stream := m.client.Messages.NewStreaming(actx, params)
	defer stream.Close()

	var tr translator
	for stream.Next() {
		events, err := tr.translate(stream.Current())
		if err != nil {
			return yielded, false, m.streamError(err)
		}
		for _, ev := range events {
			// The answer may be read already (buffered): a done ctx
			// ends the call before each event, not only at a read.
			if ctx.Err() != nil {
				return yielded, false, ctx.Err()
			}
			if actx.Err() != nil {
				return yielded, false, m.timeoutError(actx.Err())
			}
			yielded = true
			if !yield(ev, nil) {
				return true, false, errStopped
			}
		}
		if tr.done {
			return yielded, false, nil
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return yielded, false, ctx.Err()
		}
		if actx.Err() != nil {
			return yielded, false, m.timeoutError(actx.Err())
		}
		var aerr *sdk.Error
		if !errors.As(err, &aerr) && !tr.started {
			return yielded, true, m.connectionError(err)
		}
		return yielded, false, m.apiError(err, tr.started)
	}
	return yielded, false, m.incompleteError(nil)
}
