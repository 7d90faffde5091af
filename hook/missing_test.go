package hook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/hook"
)

// bundle is a provider made of providers; its nil value is an empty
// bundle, which registers nothing and is not a hook left out.
type bundle []hook.Provider

func (b bundle) RegisterHooks(r *hook.Registry) {
	for _, p := range b {
		p.RegisterHooks(r)
	}
}

// byName is a provider made of named callbacks; its nil value is empty.
type byName map[string]hook.Callback[pingEvent]

func (m byName) RegisterHooks(r *hook.Registry) {
	for _, fn := range m {
		hook.Add(r, fn)
	}
}

// plain is a provider that is a struct value.
type plain struct{}

func (plain) RegisterHooks(*hook.Registry) {}

// pointed is a provider with a pointer receiver.
type pointed struct{}

func (*pointed) RegisterHooks(*hook.Registry) {}

// SPEC A1: Missing finds the providers that are nil (a nil interface, a
// nil pointer, a nil function, Func of a nil callback) and nothing else: a
// struct value, or an empty bundle (a nil slice or map of a provider
// type, which registers nothing as an empty one does), is a provider.
func TestMissing_FindsNilProvidersOnly(t *testing.T) {
	var none *pointed
	var fn hook.Callback[pingEvent]
	for name, p := range map[string]hook.Provider{
		"nil":              nil,
		"nil pointer":      none,
		"nil ProviderFunc": hook.ProviderFunc(nil),
		"Func of nil":      hook.Func(fn),
	} {
		assert.Equal(t, 1, hook.Missing([]hook.Provider{plain{}, p}), name)
	}
	for name, p := range map[string]hook.Provider{
		"struct value":       plain{},
		"pointer":            &pointed{},
		"empty slice bundle": bundle(nil),
		"empty map bundle":   byName(nil),
		"func":               hook.Func(func(context.Context, *pingEvent) error { return nil }),
	} {
		assert.Equal(t, -1, hook.Missing([]hook.Provider{plain{}, p}), name)
	}
}
