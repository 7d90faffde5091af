package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/openai"
	"github.com/braidhq/braid/model/provider"
)

func TestNew_ScriptedIsTheCallersScript(t *testing.T) {
	script := model.Scripted(model.TextTurn("hi"))
	m, err := provider.New(context.Background(), "scripted", script)
	require.NoError(t, err)
	assert.Same(t, script, m)
	_, err = provider.New(context.Background(), "", nil)
	assert.ErrorContains(t, err, "no script")
}

// Each provider is built from its defaults and the environment; nothing is
// called.
func TestNew_EachProviderFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	empty := filepath.Join(t.TempDir(), "none")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "eu-west-1", "AWS_PROFILE": "", "AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty,
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}

	m, err := provider.New(ctx, "openai:gpt-4o-mini", nil)
	require.NoError(t, err)
	assert.IsType(t, &openai.Model{}, m)
	m, err = provider.New(ctx, "anthropic:claude-sonnet-4-5", nil)
	require.NoError(t, err)
	assert.IsType(t, &anthropic.Model{}, m)
	m, err = provider.New(ctx, "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0", nil)
	require.NoError(t, err)
	assert.IsType(t, &bedrock.Model{}, m)
}

func TestNew_MissingKeyIsAClearError(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := provider.New(context.Background(), "anthropic:claude-sonnet-4-5", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "anthropic:claude-sonnet-4-5")
	assert.Contains(t, err.Error(), "ANTHROPIC_API_KEY")
}
