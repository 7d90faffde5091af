package provider

import (
	"flag"
	"fmt"
	"strings"
)

// Providers.
const (
	Scripted  = "scripted"
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Bedrock   = "bedrock"
)

// Usage describes the spec's forms, for flag help texts.
const Usage = `model: "scripted" (the built-in script, offline), "openai:<model>", "anthropic:<model>" or "bedrock:<model>"`

// Spec is a parsed model spec: a provider and, except for the scripted
// model, the provider's model id.
type Spec struct {
	Provider string
	Model    string
}

// String returns the spec in its flag form.
func (s Spec) String() string {
	if s.Provider == Scripted {
		return Scripted
	}
	return s.Provider + ":" + s.Model
}

// Parse parses "scripted", "openai:<model>", "anthropic:<model>" or
// "bedrock:<model>". The model id is everything after the first colon, so
// ids with colons (Bedrock's "...-v1:0") keep them. An empty spec is
// "scripted".
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == Scripted {
		return Spec{Provider: Scripted}, nil
	}
	name, id, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return Spec{}, fmt.Errorf("model %q: want %s", s, strings.TrimPrefix(Usage, "model: "))
	case name != OpenAI && name != Anthropic && name != Bedrock:
		return Spec{}, fmt.Errorf("model %q: unknown provider %q; want openai, anthropic or bedrock", s, name)
	case strings.TrimSpace(id) == "":
		return Spec{}, fmt.Errorf("model %q: no model id after %q", s, name+":")
	}
	return Spec{Provider: name, Model: strings.TrimSpace(id)}, nil
}

// Flag defines a -model (also --model) flag on fs, "scripted" by default.
func Flag(fs *flag.FlagSet) *string {
	return fs.String("model", Scripted, Usage)
}
