package provider_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model/provider"
)

func TestParse_Forms(t *testing.T) {
	for in, want := range map[string]provider.Spec{
		"":                   {Provider: "scripted"},
		"scripted":           {Provider: "scripted"},
		"openai:gpt-4o-mini": {Provider: "openai", Model: "gpt-4o-mini"},
		"openai:llama3.2:3b": {Provider: "openai", Model: "llama3.2:3b"},
		"anthropic:claude-x": {Provider: "anthropic", Model: "claude-x"},
		"bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0": {Provider: "bedrock", Model: "us.anthropic.claude-sonnet-4-20250514-v1:0"},
	} {
		got, err := provider.Parse(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		if in != "" {
			assert.Equal(t, in, got.String())
		}
	}
}

func TestParse_RejectsBadSpecs(t *testing.T) {
	for in, msg := range map[string]string{
		"gpt-4o":      "want",
		"mistral:x":   `unknown provider "mistral"`,
		"openai:":     "no model id",
		"bedrock:   ": "no model id",
	} {
		_, err := provider.Parse(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), msg, in)
		assert.Contains(t, err.Error(), strings.TrimSpace(in))
	}
}

func TestFlag_DefaultsToScripted(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	m := provider.Flag(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Equal(t, "scripted", *m)
	require.NoError(t, fs.Parse([]string{"--model", "openai:gpt-4o"}))
	assert.Equal(t, "openai:gpt-4o", *m)
}
