package anthropic

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/braidhq/braid/model/internal/redact"
)

// Defaults. DefaultConfig sets them all; New applies MaxTokens and the
// retry ones to zero fields (a zero Timeout stays "no limit").
const (
	// DefaultMaxTokens is the max_tokens sent when Config.MaxTokens is 0.
	DefaultMaxTokens = 4096
	// DefaultMaxRetries is the number of retries when Config.MaxRetries is 0.
	DefaultMaxRetries = 2
	// DefaultRetryBaseDelay is the first backoff wait when
	// Config.RetryBaseDelay is 0.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultTimeout is the Timeout DefaultConfig sets.
	DefaultTimeout = 10 * time.Minute
	// NoRetries, as Config.MaxRetries, turns retries off.
	NoRetries = -1
)

// APIKeyEnv is the environment variable read when Config.APIKey is empty.
const APIKeyEnv = "ANTHROPIC_API_KEY"

// BaseURLEnv is the environment variable read when Config.BaseURL is empty.
const BaseURLEnv = "ANTHROPIC_BASE_URL"

// Config configures a Model. Build it from DefaultConfig, set Model, and pass
// it to New. New copies it: changing a Config later does not change a Model.
type Config struct {
	// Model is the Anthropic model id, such as "claude-sonnet-4-5". Required.
	Model string
	// APIKey authenticates the requests (SDK v2 sends it as a bearer token).
	// When empty, New reads ANTHROPIC_API_KEY; one of the two must be set.
	APIKey string
	// BaseURL is the API's base URL (without /v1). When empty, New reads
	// ANTHROPIC_BASE_URL, and when that is empty too the SDK's default
	// (https://api.anthropic.com) is used.
	BaseURL string
	// Temperature is sent when set (0 to 1); nil leaves the API's default.
	Temperature *float64
	// MaxTokens is the most tokens the model may generate in a turn; the
	// Messages API requires it. 0 means DefaultMaxTokens (4096).
	MaxTokens int
	// Timeout bounds one Stream call, from sending the request to the end
	// of the answer's stream, retries and their waits included (as in every
	// Braid provider). 0 means no bound besides the caller's context.
	// DefaultConfig sets DefaultTimeout (10 minutes).
	Timeout time.Duration
	// MaxRetries is how many times a request that failed with HTTP 429, 529
	// or 5xx (or an overloaded / rate-limit error event before any content,
	// or a connection that failed before the stream began) is sent again. 0 means DefaultMaxRetries (2); NoRetries (or any
	// negative value) turns retries off.
	MaxRetries int
	// RetryBaseDelay is the first backoff wait; each retry doubles it (up to
	// 30s, with jitter), unless the response's retry-after-ms or retry-after
	// header asks for a wait. 0 means DefaultRetryBaseDelay (500ms).
	RetryBaseDelay time.Duration
	// HTTPClient sends the requests; nil means http.DefaultClient. Its own
	// Timeout, if any, also bounds each streamed response.
	HTTPClient *http.Client
}

// DefaultConfig returns a Config with the defaults filled in and Model empty.
func DefaultConfig() Config {
	return Config{
		MaxTokens:      DefaultMaxTokens,
		Timeout:        DefaultTimeout,
		MaxRetries:     DefaultMaxRetries,
		RetryBaseDelay: DefaultRetryBaseDelay,
	}
}

// Errors Validate returns (wrapped, with details).
var (
	// ErrNoModel: Config.Model is empty.
	ErrNoModel = errors.New("anthropic: Config.Model is required (an Anthropic model id such as \"claude-sonnet-4-5\")")
	// ErrNoAPIKey: neither Config.APIKey nor ANTHROPIC_API_KEY is set.
	ErrNoAPIKey = errors.New("anthropic: no API key: set Config.APIKey or the ANTHROPIC_API_KEY environment variable")
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("anthropic: invalid config")
)

// Validate reports the first problem with c, reading the environment for the
// fields New would read it for (APIKey, BaseURL). Zero fields that have a
// default are valid.
func (c Config) Validate() error {
	r := c.resolved()
	if r.Model == "" {
		return ErrNoModel
	}
	if r.APIKey == "" {
		return ErrNoAPIKey
	}
	if r.BaseURL != "" {
		u, err := url.Parse(r.BaseURL)
		if err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // without the URL, quoted redacted
			}
			return fmt.Errorf("%w: BaseURL %q: %v", ErrInvalidConfig, redact.URL(r.BaseURL), err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: BaseURL %q must be an absolute http or https URL", ErrInvalidConfig, redact.URL(r.BaseURL))
		}
		// The API's paths begin with /v1 (OpenAI's base URLs end with it):
		// a base URL that ends with it would ask for /v1/v1/messages, a
		// 404 that reads as an unknown model.
		if p := strings.TrimRight(u.Path, "/"); p == "/v1" || strings.HasSuffix(p, "/v1") {
			return fmt.Errorf("%w: BaseURL %q ends with /v1: give it without, the requests add /v1/messages", ErrInvalidConfig, redact.URL(r.BaseURL))
		}
	}
	if t := c.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 1) {
		return fmt.Errorf("%w: Temperature %v is outside 0..1", ErrInvalidConfig, *c.Temperature)
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("%w: MaxTokens %d is negative (0 means the default, %d)", ErrInvalidConfig, c.MaxTokens, DefaultMaxTokens)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %v is negative (0 means no timeout)", ErrInvalidConfig, c.Timeout)
	}
	if c.RetryBaseDelay < 0 {
		return fmt.Errorf("%w: RetryBaseDelay %v is negative (0 means the default, %v)", ErrInvalidConfig, c.RetryBaseDelay, DefaultRetryBaseDelay)
	}
	return nil
}

// resolved returns c with the environment read and the defaults applied.
func (c Config) resolved() Config {
	if c.APIKey == "" {
		c.APIKey = os.Getenv(APIKeyEnv)
	}
	if c.BaseURL == "" {
		c.BaseURL = os.Getenv(BaseURLEnv)
	}
	if c.Temperature != nil {
		t := *c.Temperature
		c.Temperature = &t
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	return c
}
