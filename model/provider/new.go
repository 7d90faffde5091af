package provider

import (
	"context"
	"fmt"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/openai"
)

// New returns the model a spec names, each provider configured from its
// defaults and the usual environment (OPENAI_API_KEY and OPENAI_BASE_URL,
// ANTHROPIC_API_KEY, the AWS credential chain and AWS_REGION). For
// "scripted" it returns scripted, the caller's own offline script.
func New(ctx context.Context, spec string, scripted model.Model) (model.Model, error) {
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var m model.Model
	switch s.Provider {
	case Scripted:
		if scripted == nil {
			return nil, fmt.Errorf("model %q: no script to play", spec)
		}
		return scripted, nil
	case OpenAI:
		cfg := openai.DefaultConfig()
		cfg.Model = s.Model
		m, err = openai.New(cfg)
	case Anthropic:
		cfg := anthropic.DefaultConfig()
		cfg.Model = s.Model
		m, err = anthropic.New(cfg)
	case Bedrock:
		cfg := bedrock.DefaultConfig()
		cfg.Model = s.Model
		m, err = bedrock.New(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec, err)
	}
	return m, nil
}
