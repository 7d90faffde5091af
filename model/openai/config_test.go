package openai_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/openai"
)

func TestConfig_DefaultConfigNeedsOnlyAModel(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	cfg := openai.DefaultConfig()
	assert.Equal(t, openai.DefaultMaxRetries, cfg.MaxRetries)
	assert.Equal(t, openai.DefaultRetryBaseDelay, cfg.RetryBaseDelay)
	assert.Equal(t, openai.DefaultTimeout, cfg.Timeout)
	assert.ErrorIs(t, cfg.Validate(), openai.ErrNoModel)
	cfg.Model = testModel
	assert.NoError(t, cfg.Validate())
}

func TestConfig_ValidateRejectsOutOfRangeFields(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	neg, big, nan := -0.1, 2.5, math.NaN()
	for name, tc := range map[string]struct {
		edit  func(*openai.Config)
		field string
	}{
		"negative temperature":  {func(c *openai.Config) { c.Temperature = &neg }, "Temperature"},
		"temperature above 2":   {func(c *openai.Config) { c.Temperature = &big }, "Temperature"},
		"NaN temperature":       {func(c *openai.Config) { c.Temperature = &nan }, "Temperature"},
		"negative max tokens":   {func(c *openai.Config) { c.MaxTokens = -1 }, "MaxTokens"},
		"negative timeout":      {func(c *openai.Config) { c.Timeout = -time.Second }, "Timeout"},
		"max retries below -1":  {func(c *openai.Config) { c.MaxRetries = -2 }, "MaxRetries"},
		"negative retry delay":  {func(c *openai.Config) { c.RetryBaseDelay = -time.Millisecond }, "RetryBaseDelay"},
		"base URL no scheme":    {func(c *openai.Config) { c.BaseURL = "127.0.0.1:11434/v1" }, "BaseURL"},
		"base URL other scheme": {func(c *openai.Config) { c.BaseURL = "ftp://example.com/v1" }, "BaseURL"},
		"base URL no host":      {func(c *openai.Config) { c.BaseURL = "http:///v1" }, "BaseURL"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := openai.DefaultConfig()
			cfg.Model = testModel
			tc.edit(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, openai.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.field)
			_, err = openai.New(cfg)
			assert.ErrorIs(t, err, openai.ErrInvalidConfig)
		})
	}
}

func TestConfig_ValidateAcceptsZerosAndNoRetries(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	zero, two := 0.0, 2.0
	for _, cfg := range []openai.Config{
		{Model: testModel},
		{Model: testModel, MaxRetries: openai.NoRetries, Temperature: &zero},
		{Model: testModel, Temperature: &two, MaxTokens: 1, BaseURL: "http://127.0.0.1:11434/v1"},
	} {
		assert.NoError(t, cfg.Validate())
	}
}

func TestNew_RejectsMissingModel(t *testing.T) {
	_, err := openai.New(openai.Config{})
	assert.True(t, errors.Is(err, openai.ErrNoModel))
	assert.Contains(t, err.Error(), "Config.Model")
}

func TestNew_APIKeyFromEnvironmentWhenUnset(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", testKey)
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.BaseURL = r.url()
	cfg.HTTPClient = r.srv.Client()
	m, err := openai.New(cfg)
	require.NoError(t, err)
	complete(t, m, userRequest()) // the server checks "Bearer test-key"
	assert.Len(t, r.requestBodies(), 1)
}

func TestNew_ExplicitAPIKeyWinsOverEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-key")
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.APIKey = testKey
	cfg.BaseURL = r.url()
	cfg.HTTPClient = r.srv.Client()
	m, err := openai.New(cfg)
	require.NoError(t, err)
	complete(t, m, userRequest())
}

func TestNew_NoKeyAnywhereSendsNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	r.wantAuth = ""
	cfg := openai.DefaultConfig()
	cfg.Model = "llama3.2"
	cfg.BaseURL = r.url()
	cfg.HTTPClient = r.srv.Client()
	m, err := openai.New(cfg)
	require.NoError(t, err)
	complete(t, m, userRequest())
}

func TestNew_BaseURLFromEnvironmentWhenUnset(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", r.url())
	cfg := openai.DefaultConfig()
	cfg.Model = testModel
	cfg.APIKey = testKey
	cfg.HTTPClient = r.srv.Client()
	m, err := openai.New(cfg)
	require.NoError(t, err)
	complete(t, m, userRequest())
	assert.Len(t, r.requestBodies(), 1)
}

// New copies the Config: changing it afterwards changes nothing.
func TestNew_CopiesTheConfig(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	temp := 0.5
	var cfg openai.Config
	m := newModel(t, r, func(c *openai.Config) { c.Temperature = &temp; cfg = *c })
	temp = 1.5
	cfg.Model = "other"
	complete(t, m, userRequest())
	body := decode(t, r.requestBodies()[0])
	assert.Equal(t, 0.5, body["temperature"])
	assert.Equal(t, testModel, body["model"])
	assert.Equal(t, testModel, m.ModelID())
}

// A base URL with credentials in it (a proxy's user:password@) that
// Validate refuses is quoted in the error without its password.
func TestConfig_RefusedBaseURLIsQuotedWithoutItsPassword(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	for _, base := range []string{"ftp://proxy:s3cretpw@example.com/v1", "http://proxy:s3cretpw@exa mple.com/v1"} {
		cfg := openai.DefaultConfig()
		cfg.Model = testModel
		cfg.BaseURL = base
		err := cfg.Validate()
		require.ErrorIs(t, err, openai.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "proxy:xxxxx@exa")
		assert.NotContains(t, err.Error(), "s3cretpw")
	}
}
