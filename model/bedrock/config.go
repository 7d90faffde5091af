package bedrock

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/braidhq/braid/model/internal/redact"
)

// Defaults.
const (
	// DefaultRegion is the region used when neither Config.Region nor the
	// AWS configuration chain (AWS_REGION, the shared config file) names one,
	// as Strands does.
	DefaultRegion = "us-west-2"
	// DefaultMaxRetries is the number of retries when Config.MaxRetries is 0.
	DefaultMaxRetries = 2
	// NoRetries, as Config.MaxRetries, turns retries off.
	NoRetries = -1
	// DefaultRetryBaseDelay is the first retry's base wait when
	// Config.RetryBaseDelay is 0.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultTimeout is the Timeout DefaultConfig sets.
	DefaultTimeout = 10 * time.Minute
	// MaxRetryDelay caps the wait between two attempts.
	MaxRetryDelay = 20 * time.Second
)

// Errors Config.Validate returns (joined, wrapped with details).
var (
	// ErrNoModel: Config.Model is empty.
	ErrNoModel = errors.New(`bedrock: Config.Model is required (a Bedrock model or inference profile id, such as "us.anthropic.claude-sonnet-4-20250514-v1:0")`)
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("bedrock: invalid config")
)

// Config configures a Bedrock Converse model. Start from DefaultConfig and
// set Model; a Config is copied by New and not read afterwards.
type Config struct {
	// Model is the Bedrock model id, inference profile id or ARN, such as
	// "us.anthropic.claude-sonnet-4-20250514-v1:0". Required.
	Model string

	// Region is the AWS region of the Bedrock endpoint. Empty: the region of
	// the AWS configuration chain (AWS_REGION, AWS_DEFAULT_REGION, the
	// profile's region), else DefaultRegion.
	Region string

	// Credentials signs the requests (SigV4). Nil: the standard AWS chain of
	// config.LoadDefaultConfig (environment, shared files and profiles, SSO,
	// web identity, container and EC2 instance roles). Credentials are
	// retrieved, and refreshed, when a request is made; their absence is
	// reported then, as a *model.ProviderError of kind model.ErrAuth. When
	// AWS_BEARER_TOKEN_BEDROCK holds a Bedrock API key, the SDK sends that
	// instead and no credentials are needed.
	Credentials aws.CredentialsProvider

	// BaseURL overrides the endpoint (a VPC endpoint, a proxy, a test
	// server), such as "https://bedrock-runtime.us-east-1.amazonaws.com".
	// Empty: the endpoint of the AWS configuration (AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
	// AWS_ENDPOINT_URL, the profile's endpoint_url), else the region's.
	//
	// A URL with user info (user:password@) is refused, whether it comes
	// from here or from the AWS configuration: the Authorization header of
	// every request carries its SigV4 signature (or the Bedrock API key),
	// so there is no place for basic auth, and the AWS SDK would drop the
	// user info without a word. A forward proxy that wants basic auth is
	// set, user info included, as the Proxy of HTTPClient's transport or
	// in HTTPS_PROXY; the HTTP client then sends Proxy-Authorization.
	BaseURL string

	// Temperature is sent as inferenceConfig.temperature when set, in
	// [0, 1]. Nil: the model's default.
	Temperature *float64

	// MaxTokens is sent as inferenceConfig.maxTokens when above 0. 0: the
	// model's default.
	MaxTokens int

	// Timeout bounds one Stream call, from sending the request to the end of
	// the answer's stream, retries and their waits included. 0: no bound
	// beyond the caller's context. DefaultConfig sets DefaultTimeout.
	Timeout time.Duration

	// MaxRetries is how many times a failed attempt is retried, with
	// exponential backoff: on ThrottlingException, ServiceUnavailableException,
	// InternalServerException, ModelNotReadyException, other 5xx answers and
	// connection errors, and on the throttling, service-unavailable,
	// internal-server and model-stream exceptions of the event stream, and
	// an event stream that ends before messageStop, when they come before
	// anything was yielded (never after: the caller has the first part of
	// the turn). 0 means DefaultMaxRetries
	// (2); NoRetries (-1) turns retries off. It takes precedence over
	// AWS_MAX_ATTEMPTS and the shared config's max_attempts.
	MaxRetries int

	// RetryBaseDelay is the base of the exponential backoff between
	// attempts: the wait after the n-th failed attempt is
	// RetryBaseDelay·2^(n-1) less up to a quarter at random, at most
	// MaxRetryDelay. 0 means
	// DefaultRetryBaseDelay (500ms).
	RetryBaseDelay time.Duration

	// HTTPClient sends the requests. Nil: the AWS SDK's default client.
	HTTPClient *http.Client

	// IncludeToolResultStatus says whether tool results carry their status
	// ("success" or "error"), which only some models accept. Nil: as
	// Strands does, only when Model names an Anthropic Claude model
	// (contains "anthropic.claude").
	IncludeToolResultStatus *bool
}

// DefaultConfig returns the defaults: the region and credentials of the
// AWS configuration chain, DefaultMaxRetries retries after
// DefaultRetryBaseDelay, DefaultTimeout, and the model's own inference
// settings. Model is left empty: the caller must set it.
func DefaultConfig() Config {
	return Config{
		Timeout:        DefaultTimeout,
		MaxRetries:     DefaultMaxRetries,
		RetryBaseDelay: DefaultRetryBaseDelay,
	}
}

// Validate reports what is wrong with the config, every problem joined: an
// empty Model as ErrNoModel, the others wrapping ErrInvalidConfig; nil if it
// is usable. Zero fields that have a default are valid.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	switch {
	case c.Model == "":
		errs = append(errs, ErrNoModel)
	case strings.TrimSpace(c.Model) != c.Model:
		bad("Model %q has leading or trailing spaces", c.Model)
	}
	if strings.TrimSpace(c.Region) != c.Region {
		bad("Region %q has leading or trailing spaces", c.Region)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("BaseURL %q is not an http or https URL with a host", redact.URL(c.BaseURL))
		} else if u.User != nil {
			bad("BaseURL %s", userInfoProblem(c.BaseURL))
		}
	}
	if t := c.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 1) {
		bad("Temperature %v is outside [0, 1], the Converse API's range", *t)
	}
	if c.MaxTokens < 0 || c.MaxTokens > math.MaxInt32 {
		bad("MaxTokens %d is negative or too large (0 leaves it to the model)", c.MaxTokens)
	}
	if c.Timeout < 0 {
		bad("Timeout %v is negative (0 means no timeout)", c.Timeout)
	}
	if c.MaxRetries < NoRetries {
		bad("MaxRetries %d is below NoRetries (-1, no retries; 0 means the default, %d)", c.MaxRetries, DefaultMaxRetries)
	}
	if c.RetryBaseDelay < 0 {
		bad("RetryBaseDelay %v is negative (0 means %v)", c.RetryBaseDelay, DefaultRetryBaseDelay)
	}
	return errors.Join(errs...)
}

// userInfoProblem says why an endpoint URL with user info is refused, and
// what to do instead; the URL is quoted without its password.
func userInfoProblem(endpoint string) string {
	return fmt.Sprintf("%q has user info (user:password@), which Bedrock cannot use: "+
		"the Authorization header carries the request's SigV4 signature or Bedrock API key, "+
		"so it cannot carry basic auth; remove it, and for a forward proxy that wants basic auth "+
		"put its URL, user info included, in HTTPS_PROXY or as the Proxy of Config.HTTPClient's transport",
		redact.URL(endpoint))
}

// resolved returns c with the defaults applied (MaxRetries 0 becomes
// DefaultMaxRetries, NoRetries stays) and its pointers copied.
func (c Config) resolved() Config {
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.Temperature != nil {
		t := *c.Temperature
		c.Temperature = &t
	}
	if c.IncludeToolResultStatus != nil {
		b := *c.IncludeToolResultStatus
		c.IncludeToolResultStatus = &b
	}
	return c
}

// retries is the number of retries of a resolved config.
func (c Config) retries() int { return max(c.MaxRetries, 0) }

// includeStatus applies IncludeToolResultStatus.
func (c Config) includeStatus() bool {
	if c.IncludeToolResultStatus != nil {
		return *c.IncludeToolResultStatus
	}
	return strings.Contains(c.Model, "anthropic.claude")
}
