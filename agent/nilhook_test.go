package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// approvals is a hook provider type whose nil pointer a config may carry.
type approvals struct{}

func (*approvals) RegisterHooks(*hook.Registry) {}

// SPEC A1: a hook that is nil (left out by mistake: a nil provider, a
// provider holding a nil pointer, or hook.Func of a nil function) is
// refused when the agent is built, naming its place, rather than the agent
// running without it: an approval hook that silently never runs would let
// the tool it guards run unapproved.
func TestConfig_ANilHookIsRefused(t *testing.T) {
	var none *approvals
	var fn hook.Callback[*agent.BeforeToolCallEvent]
	for name, hooks := range map[string][]hook.Provider{
		"nil provider":         {hook.Func(func(context.Context, *agent.BeforeToolCallEvent) error { return nil }), nil},
		"nil pointer provider": {none},
		"Func of nil":          {hook.Func(fn)},
		"nil ProviderFunc":     {hook.ProviderFunc(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := agent.Config{Model: model.Scripted(model.TextTurn("ok")), Hooks: hooks}
			err := cfg.Validate()
			require.ErrorIs(t, err, agent.ErrConfig)
			assert.Contains(t, err.Error(), "is nil")
			_, err = agent.New(context.Background(), cfg)
			require.ErrorIs(t, err, agent.ErrConfig, "New refuses it too")
		})
	}
	require.NoError(t, agent.Config{Model: model.Scripted(), Hooks: []hook.Provider{&approvals{}}}.Validate())
}

// approvalHook is a provider as the examples write one: a struct value
// whose RegisterHooks adds its callback field.
type approvalHook struct {
	approve hook.Callback[agent.BeforeToolCallEvent]
}

func (h approvalHook) RegisterHooks(r *hook.Registry) { hook.Add(r, h.approve) }

// SPEC A1: a provider that adds a nil callback (its callback field left
// out) is refused when the agent is built; a nil callback added to the
// agent's registry after New makes the next invocation fail before
// anything runs. Either way the tool the hook was to guard does not run
// unguarded.
func TestConfig_ANilCallbackAddedByAProviderIsRefused(t *testing.T) {
	ctx := context.Background()
	_, err := agent.New(ctx, agent.Config{Model: model.Scripted(model.TextTurn("ok")), Hooks: []hook.Provider{approvalHook{}}})
	require.ErrorIs(t, err, agent.ErrConfig)
	require.ErrorIs(t, err, hook.ErrNilCallback)
	assert.Contains(t, err.Error(), "BeforeToolCallEvent")

	del, runs := countingTool("delete_files")
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", nil)), Tools: []tool.Tool{del}})
	var approve hook.Callback[agent.BeforeToolCallEvent]
	hook.Add(a.Hooks(), approve)
	_, err = a.Invoke(ctx, agent.Text("delete"))
	require.ErrorIs(t, err, hook.ErrNilCallback)
	assert.Equal(t, 0, runs.total(), "the guarded tool did not run")
}
