package openai

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/braidhq/braid/model/internal/redact"
)

// Defaults. DefaultConfig sets them all; New applies the retry ones to zero
// fields (a zero Timeout stays "no limit").
const (
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

// APIKeyEnv is the environment variable New reads when Config.APIKey is empty.
const APIKeyEnv = "OPENAI_API_KEY"

// BaseURLEnv is the environment variable New reads when Config.BaseURL is
// empty.
const BaseURLEnv = "OPENAI_BASE_URL"

// Config configures a Model. Build it from DefaultConfig, set Model, and pass
// it to New. New copies it: changing a Config later does not change a Model.
type Config struct {
	// Model is the model id sent as "model", such as "gpt-4o-mini", or the
	// name a local server knows the model by ("llama3.2" for Ollama).
	// Required.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>". When empty, New reads
	// OPENAI_API_KEY; when that is empty too, no Authorization header is sent
	// (local servers such as Ollama need none, the OpenAI API answers 401,
	// reported as model.ErrAuth).
	APIKey string
	// BaseURL is the API's base URL, up to and including the version:
	// "http://127.0.0.1:11434/v1" for Ollama, "http://localhost:8000/v1" for
	// vLLM, "http://localhost:8080/v1" for a llama.cpp server. Requests go to
	// BaseURL + "/chat/completions". When empty, New reads OPENAI_BASE_URL,
	// and when that is empty too the SDK's default (https://api.openai.com/v1)
	// is used.
	BaseURL string
	// Temperature is sent as "temperature" when set (0 to 2); nil leaves the
	// server's default.
	Temperature *float64
	// MaxTokens is sent as "max_tokens" when positive; 0 leaves it unset
	// (the server's default). OpenAI's reasoning models (o-series, gpt-5)
	// refuse max_tokens: set MaxCompletionTokensField for them.
	MaxTokens int
	// MaxCompletionTokensField sends MaxTokens as "max_completion_tokens",
	// the field OpenAI's newer models take; most OpenAI-compatible servers
	// (Ollama, llama.cpp) read only "max_tokens", the default.
	MaxCompletionTokensField bool
	// Timeout bounds one Stream call, from sending the request to the end
	// of the answer's stream, retries and their waits included (as in every
	// Braid provider). 0 means no bound besides the caller's context.
	// DefaultConfig sets DefaultTimeout (10 minutes).
	Timeout time.Duration
	// MaxRetries is how many times a request that failed with HTTP 429 or
	// 5xx (or a connection error, or an error event before any content) is
	// sent again, with exponential backoff. A 429 whose code is
	// insufficient_quota is not retried. 0 means DefaultMaxRetries (2);
	// NoRetries (-1) turns retries off.
	MaxRetries int
	// RetryBaseDelay is the first backoff wait; each retry doubles it (up to
	// 30s, less up to a quarter of jitter), unless the response's
	// retry-after-ms or Retry-After header asks for a wait, which is honoured
	// up to a minute (a longer one ends the call with the error, whose
	// RetryAfter says how long to wait). 0 means DefaultRetryBaseDelay
	// (500ms).
	RetryBaseDelay time.Duration
	// HTTPClient sends the requests; nil means the SDK's default client. Its
	// own Timeout, if any, also bounds each streamed response.
	HTTPClient *http.Client
}

// DefaultConfig returns a Config with the defaults filled in and Model empty.
func DefaultConfig() Config {
	return Config{
		Timeout:        DefaultTimeout,
		MaxRetries:     DefaultMaxRetries,
		RetryBaseDelay: DefaultRetryBaseDelay,
	}
}

// Errors Validate returns (wrapped, with details).
var (
	// ErrNoModel: Config.Model is empty.
	ErrNoModel = errors.New(`openai: Config.Model is required (a model id such as "gpt-4o-mini", or the local server's model name)`)
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("openai: invalid config")
)

// Validate reports the first problem with c, reading the environment for
// BaseURL as New would. Zero fields that have a default are valid; an empty
// API key is valid (see Config.APIKey).
func (c Config) Validate() error {
	if c.Model == "" {
		return ErrNoModel
	}
	r := c.resolved()
	if r.BaseURL != "" {
		u, err := url.Parse(r.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: BaseURL %q must be an absolute http or https URL such as \"http://127.0.0.1:11434/v1\"", ErrInvalidConfig, redact.URL(r.BaseURL))
		}
	}
	if t := c.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return fmt.Errorf("%w: Temperature %v is outside 0..2", ErrInvalidConfig, *t)
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("%w: MaxTokens %d is negative (0 leaves it unset)", ErrInvalidConfig, c.MaxTokens)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %v is negative (0 means no timeout)", ErrInvalidConfig, c.Timeout)
	}
	if c.MaxRetries < NoRetries {
		return fmt.Errorf("%w: MaxRetries %d is below NoRetries (-1, no retries; 0 means the default, %d)", ErrInvalidConfig, c.MaxRetries, DefaultMaxRetries)
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
