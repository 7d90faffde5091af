package bedrock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
)

func TestDefaultConfig_RetriesTwiceAfterHalfASecondAndLeavesTheRestToAWS(t *testing.T) {
	cfg := bedrock.DefaultConfig()
	assert.Equal(t, 2, cfg.MaxRetries)
	assert.Equal(t, 500*time.Millisecond, cfg.RetryBaseDelay)
	assert.Equal(t, 10*time.Minute, cfg.Timeout)
	assert.Empty(t, cfg.Model)
	assert.Empty(t, cfg.Region)
	assert.Nil(t, cfg.Credentials)
	assert.Nil(t, cfg.Temperature)
	assert.Zero(t, cfg.MaxTokens)
	err := cfg.Validate()
	assert.ErrorIs(t, err, bedrock.ErrNoModel, "Model must be set")
	assert.False(t, errors.Is(err, bedrock.ErrInvalidConfig))
}

func TestConfigValidate_ReportsEachProblem(t *testing.T) {
	valid := func() bedrock.Config {
		cfg := bedrock.DefaultConfig()
		cfg.Model = testModel
		return cfg
	}
	require.NoError(t, valid().Validate())
	for _, tc := range []struct {
		name string
		edit func(*bedrock.Config)
		want string
	}{
		{"model with spaces", func(c *bedrock.Config) { c.Model = " " + testModel }, "spaces"},
		{"region with spaces", func(c *bedrock.Config) { c.Region = "us-east-1 " }, "Region"},
		{"relative base URL", func(c *bedrock.Config) { c.BaseURL = "bedrock.local" }, "BaseURL"},
		{"base URL without host", func(c *bedrock.Config) { c.BaseURL = "https://" }, "BaseURL"},
		{"base URL of another scheme", func(c *bedrock.Config) { c.BaseURL = "ftp://bedrock.local" }, "BaseURL"},
		{"negative temperature", func(c *bedrock.Config) { c.Temperature = ptr(-0.1) }, "Temperature"},
		{"temperature above 1", func(c *bedrock.Config) { c.Temperature = ptr(1.5) }, "Temperature"},
		{"NaN temperature", func(c *bedrock.Config) { c.Temperature = ptr(math.NaN()) }, "Temperature"},
		{"negative max tokens", func(c *bedrock.Config) { c.MaxTokens = -1 }, "MaxTokens"},
		{"max tokens beyond int32", func(c *bedrock.Config) { c.MaxTokens = math.MaxInt32 + 1 }, "MaxTokens"},
		{"negative timeout", func(c *bedrock.Config) { c.Timeout = -time.Second }, "Timeout"},
		{"retries below NoRetries", func(c *bedrock.Config) { c.MaxRetries = -2 }, "MaxRetries"},
		{"negative retry delay", func(c *bedrock.Config) { c.RetryBaseDelay = -time.Millisecond }, "RetryBaseDelay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, bedrock.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
			_, err = bedrock.New(context.Background(), cfg)
			assert.ErrorIs(t, err, bedrock.ErrInvalidConfig, "New validates")
		})
	}
	t.Run("several problems", func(t *testing.T) {
		err := bedrock.Config{MaxRetries: -2, Timeout: -1}.Validate()
		for _, want := range []string{"Model", "MaxRetries", "Timeout"} {
			assert.Contains(t, err.Error(), want)
		}
		assert.ErrorIs(t, err, bedrock.ErrNoModel)
		assert.ErrorIs(t, err, bedrock.ErrInvalidConfig)
	})
	t.Run("edges are valid", func(t *testing.T) {
		cfg := valid()
		cfg.Temperature, cfg.MaxTokens, cfg.MaxRetries, cfg.RetryBaseDelay, cfg.Timeout = ptr(0.0), math.MaxInt32, bedrock.NoRetries, 0, 0
		cfg.BaseURL = "http://127.0.0.1:8080"
		assert.NoError(t, cfg.Validate())
	})
}

func TestNew_RegionDefaultsToUSWest2(t *testing.T) {
	isolateAWS(t)
	cfg := testConfig("")
	cfg.Region = ""
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, bedrock.DefaultRegion, m.Config().Region)
	assert.Equal(t, "us-west-2", bedrock.DefaultRegion)
}

func TestNew_RegionComesFromTheAWSEnvironment(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_REGION", "eu-central-1")
	r := newReplay(t, "text", testModel)
	cfg := testConfig(r.srv.URL)
	cfg.Region = ""
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, "eu-central-1", m.Config().Region)
	_, _, err = model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Contains(t, r.Requests()[0].Header.Get("Authorization"), "/eu-central-1/bedrock/aws4_request", "requests are signed for that region")
}

func TestNew_ConfiguredRegionWinsOverTheEnvironment(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_REGION", "eu-central-1")
	m, err := bedrock.New(context.Background(), testConfig(""))
	require.NoError(t, err)
	assert.Equal(t, testRegion, m.Config().Region)
}

func TestNew_ZeroRetrySettingsMeanTheDefaults(t *testing.T) {
	isolateAWS(t)
	cfg := testConfig("")
	cfg.RetryBaseDelay, cfg.MaxRetries = 0, 0
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, bedrock.DefaultRetryBaseDelay, m.Config().RetryBaseDelay)
	assert.Equal(t, bedrock.DefaultMaxRetries, m.Config().MaxRetries)
}

func TestNew_CopiesTheConfigsPointers(t *testing.T) {
	isolateAWS(t)
	cfg := testConfig("")
	temp := 0.5
	cfg.Temperature = &temp
	m, err := bedrock.New(context.Background(), cfg)
	require.NoError(t, err)
	temp = 0.9
	assert.Equal(t, 0.5, *m.Config().Temperature)
}

func TestNew_MaxRetriesWinsOverAWSMaxAttempts(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_MAX_ATTEMPTS", "7")
	m, r := newReplayModelKeepingEnv(t, "err_rate_limit", func(c *bedrock.Config) { c.MaxRetries = 1 })
	_, err := collect(context.Background(), m, userRequest())
	assert.ErrorIs(t, err, model.ErrRateLimited)
	assert.Len(t, r.Requests(), 2)
}

func TestNew_BrokenSharedConfigIsReported(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_PROFILE", "no-such-profile")
	_, err := bedrock.New(context.Background(), testConfig(""))
	require.Error(t, err)
	assert.False(t, errors.Is(err, bedrock.ErrInvalidConfig))
	assert.Contains(t, err.Error(), "AWS configuration")
}

// A base URL with credentials in it (a proxy's user:password@) that
// Validate refuses is quoted in the error without its password.
func TestConfigValidate_RefusedBaseURLIsQuotedWithoutItsPassword(t *testing.T) {
	for _, base := range []string{"ftp://proxy:s3cretpw@bedrock.local", "http://proxy:s3cretpw@bed rock.local"} {
		cfg := bedrock.DefaultConfig()
		cfg.Model = testModel
		cfg.BaseURL = base
		err := cfg.Validate()
		require.ErrorIs(t, err, bedrock.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "proxy:xxxxx@bed")
		assert.NotContains(t, err.Error(), "s3cretpw")
	}
}

// A base URL with user info (a proxy's user:password@) is refused, by
// Validate and by New, with an error that says why and what to do and
// does not quote the password: Bedrock's requests carry their SigV4
// signature (or Bedrock API key) in Authorization, so the user info could
// not be sent as basic auth, and the SDK would drop it without a word.
func TestConfigValidate_RefusesABaseURLWithUserInfo(t *testing.T) {
	isolateAWS(t)
	for _, base := range []string{"http://proxyuser:s3cretpw@127.0.0.1:8080", "https://proxyuser@127.0.0.1:8443/bedrock", "http://:s3cretpw@127.0.0.1:8080"} {
		t.Run(base, func(t *testing.T) {
			cfg := testConfig(base)
			err := cfg.Validate()
			require.ErrorIs(t, err, bedrock.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "user info")
			assert.Contains(t, err.Error(), "Proxy")
			assert.NotContains(t, err.Error(), "s3cretpw")
			_, err = bedrock.New(context.Background(), cfg)
			assert.ErrorIs(t, err, bedrock.ErrInvalidConfig, "New refuses it too")
		})
	}
}

// The same holds for an endpoint the AWS configuration gives
// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL, the shared config's
// endpoint_url) when BaseURL is empty.
func TestNew_RefusesAnAWSConfiguredEndpointWithUserInfo(t *testing.T) {
	for _, env := range []string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"} {
		t.Run(env, func(t *testing.T) {
			isolateAWS(t)
			t.Setenv(env, "http://proxyuser:s3cretpw@127.0.0.1:8080")
			_, err := bedrock.New(context.Background(), testConfig(""))
			require.ErrorIs(t, err, bedrock.ErrInvalidConfig)
			assert.Contains(t, err.Error(), env)
			assert.NotContains(t, err.Error(), "s3cretpw")

			t.Setenv(env, "http://127.0.0.1:8080")
			_, err = bedrock.New(context.Background(), testConfig(""))
			assert.NoError(t, err)
		})
	}
}
