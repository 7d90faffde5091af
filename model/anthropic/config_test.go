package anthropic_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/modeltest"
)

func TestConfig_DefaultConfigHasTheDocumentedDefaults(t *testing.T) {
	cfg := anthropic.DefaultConfig()
	assert.Equal(t, 4096, cfg.MaxTokens)
	assert.Equal(t, 2, cfg.MaxRetries)
	assert.Equal(t, 500*time.Millisecond, cfg.RetryBaseDelay)
	assert.Equal(t, 10*time.Minute, cfg.Timeout)
	assert.Empty(t, cfg.Model)
	assert.Nil(t, cfg.Temperature)
}

func TestConfig_ValidateReportsEachProblem(t *testing.T) {
	clearEnv(t)
	valid := func() anthropic.Config {
		cfg := anthropic.DefaultConfig()
		cfg.Model = "claude-sonnet-4-5"
		cfg.APIKey = testAPIKey
		return cfg
	}
	temp := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name   string
		change func(*anthropic.Config)
		is     error
		says   string
	}{
		{"no model", func(c *anthropic.Config) { c.Model = "" }, anthropic.ErrNoModel, "Config.Model is required"},
		{"no api key", func(c *anthropic.Config) { c.APIKey = "" }, anthropic.ErrNoAPIKey, "ANTHROPIC_API_KEY"},
		{"relative base url", func(c *anthropic.Config) { c.BaseURL = "api.example.com" }, anthropic.ErrInvalidConfig, "absolute http or https URL"},
		{"bad base url", func(c *anthropic.Config) { c.BaseURL = "http://[::1" }, anthropic.ErrInvalidConfig, "BaseURL"},
		{"temperature above 1", func(c *anthropic.Config) { c.Temperature = temp(1.5) }, anthropic.ErrInvalidConfig, "Temperature 1.5 is outside 0..1"},
		{"negative temperature", func(c *anthropic.Config) { c.Temperature = temp(-0.1) }, anthropic.ErrInvalidConfig, "Temperature"},
		// NaN passes both bounds checks; the API cannot be sent it (JSON has
		// no NaN), so every call would fail.
		{"NaN temperature", func(c *anthropic.Config) { c.Temperature = temp(math.NaN()) }, anthropic.ErrInvalidConfig, "Temperature NaN"},
		{"negative max tokens", func(c *anthropic.Config) { c.MaxTokens = -1 }, anthropic.ErrInvalidConfig, "MaxTokens -1 is negative"},
		{"negative timeout", func(c *anthropic.Config) { c.Timeout = -time.Second }, anthropic.ErrInvalidConfig, "Timeout"},
		{"negative retry delay", func(c *anthropic.Config) { c.RetryBaseDelay = -time.Millisecond }, anthropic.ErrInvalidConfig, "RetryBaseDelay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.says)
			m, err := anthropic.New(cfg)
			assert.ErrorIs(t, err, tc.is, "New validates too")
			assert.Nil(t, m)
		})
	}
	t.Run("valid", func(t *testing.T) {
		cfg := valid()
		require.NoError(t, cfg.Validate())
		cfg = anthropic.Config{Model: "claude-sonnet-4-5", APIKey: testAPIKey, Temperature: temp(0), MaxRetries: anthropic.NoRetries}
		require.NoError(t, cfg.Validate(), "zero fields take their defaults")
	})
}

func TestConfig_APIKeyAndBaseURLComeFromTheEnvironmentWhenUnset(t *testing.T) {
	clearEnv(t)
	r := newReplay(t, "text")
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-from-env")
	t.Setenv(anthropic.BaseURLEnv, r.srv.URL)
	cfg := testConfig(r)
	cfg.APIKey = ""
	cfg.BaseURL = ""
	require.NoError(t, cfg.Validate())
	m, err := anthropic.New(cfg)
	require.NoError(t, err)

	msg, _ := complete(t, m, weatherRequest())
	assert.Equal(t, modeltest.TextAnswer, msg.Text())
	require.Equal(t, 1, r.Count(), "the request went to ANTHROPIC_BASE_URL")
	assert.Equal(t, "Bearer sk-ant-from-env", r.Header(0).Get("Authorization"))
}

func TestConfig_ExplicitAPIKeyWinsOverTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-from-env")
	r := newReplay(t, "text")
	m, err := anthropic.New(testConfig(r))
	require.NoError(t, err)
	complete(t, m, weatherRequest())
	assert.Equal(t, "Bearer "+testAPIKey, r.Header(0).Get("Authorization"))
}

func TestConfig_NewCopiesTheConfig(t *testing.T) {
	clearEnv(t)
	r := newReplay(t, "text")
	cfg := testConfig(r) // temperature 0.2, as text/1.request.json expects
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	*cfg.Temperature = 0.9
	cfg.Model = "changed"
	cfg.MaxTokens = 1

	complete(t, m, weatherRequest()) // the replay server checks the body
	assert.Equal(t, "claude-sonnet-4-5", m.ModelID())
}

// A base URL with credentials in it (a proxy's user:password@) that
// Validate refuses is quoted in the error without its password.
func TestConfig_RefusedBaseURLIsQuotedWithoutItsPassword(t *testing.T) {
	clearEnv(t)
	for _, base := range []string{"ftp://proxy:s3cretpw@example.com", "http://proxy:s3cretpw@exa mple.com"} {
		cfg := anthropic.DefaultConfig()
		cfg.Model = "claude-sonnet-4-5"
		cfg.APIKey = testAPIKey
		cfg.BaseURL = base
		err := cfg.Validate()
		require.ErrorIs(t, err, anthropic.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "proxy:xxxxx@exa")
		assert.NotContains(t, err.Error(), "s3cretpw")
	}
}

// A base URL that ends with /v1 (as OpenAI's do) is refused with a message
// that says so, rather than every call failing with a 404 read as an
// unknown model.
func TestConfig_BaseURLEndingWithV1IsRefused(t *testing.T) {
	clearEnv(t)
	for _, base := range []string{"https://proxy.example/v1", "https://proxy.example/anthropic/v1/", "http://127.0.0.1:8080/v1"} {
		cfg := anthropic.DefaultConfig()
		cfg.Model = "claude-sonnet-4-5"
		cfg.APIKey = testAPIKey
		cfg.BaseURL = base
		err := cfg.Validate()
		require.ErrorIs(t, err, anthropic.ErrInvalidConfig, base)
		assert.Contains(t, err.Error(), "ends with /v1")
	}
	cfg := anthropic.DefaultConfig()
	cfg.Model, cfg.APIKey, cfg.BaseURL = "claude-sonnet-4-5", testAPIKey, "https://proxy.example/v1beta"
	assert.NoError(t, cfg.Validate(), "a path that only begins like /v1")
}
