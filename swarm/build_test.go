package swarm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC M9: a swarm that cannot work is refused at build time with an
// error that says why.
func TestSwarmBuild_RejectsInvalidSwarms(t *testing.T) {
	r := newRecorder()
	a := func() agent.Config { return teamAgent(r, "a", handoff{}) }
	clash := tool.New(swarm.HandoffTool, "mine", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return "", nil })
	withClash := a()
	withClash.Tools = []tool.Tool{clash}
	sameName := agent.Config{Name: "a", Model: model.Scripted()}
	for _, tc := range []struct {
		name string
		b    *swarm.Builder
		cfg  swarm.Config
		want string
	}{
		{name: "empty", b: swarm.NewBuilder(), want: "at least one node"},
		{name: "duplicate id", b: swarm.NewBuilder().AddAgent(a()).AddAgent(a()), want: "Node ID 'a' is not unique"},
		{name: "id equal to another's name", b: swarm.NewBuilder().AddAgent(a()).AddAgent(sameName), want: "Node ID 'a' is not unique"},
		{name: "handoff tool clash", b: swarm.NewBuilder().AddAgent(withClash), want: "Agent 'a' already has a tool named handoff_to_agent"},
		{name: "unknown entry point", b: swarm.NewBuilder().AddAgent(a()).SetEntryPoint("zed"), want: "Node 'zed' not found"},
		{name: "id with a slash", b: swarm.NewBuilder().AddAgent(agent.Config{ID: "x/y", Model: model.Scripted()}), want: `"x/y"`},
		{name: "swarm id with a slash", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{ID: "s/t"}, want: `swarm id "s/t"`},
		{name: "swarm id with a colon", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{ID: "s:t"}, want: `swarm id "s:t"`},
		{name: "swarm id with a backslash", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{ID: `s\t`}, want: `swarm id`},
		{name: "swarm id with a control character", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{ID: "s\x01t"}, want: `swarm id`},
		{name: "swarm id too long", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{ID: strings.Repeat("s", 256)}, want: `swarm id`},
		{name: "id with a backslash", b: swarm.NewBuilder().AddAgent(agent.Config{ID: `x\y`, Model: model.Scripted()}), want: `node id`},
		{name: "negative limit", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{MaxHandoffs: -1}, want: "negative limit"},
		{name: "idle timeout without session", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{IdleTimeout: time.Second}, want: "IdleTimeout needs a Session"},
		{name: "window without minimum", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{RepetitiveHandoffDetectionWindow: 3}, want: "together"},
		{name: "minimum over window", b: swarm.NewBuilder().AddAgent(a()),
			cfg: swarm.Config{RepetitiveHandoffDetectionWindow: 2, RepetitiveHandoffMinUniqueAgents: 3}, want: "exceeds"},
		{name: "nil hook", b: swarm.NewBuilder().AddAgent(a()), cfg: swarm.Config{Hooks: []hook.Provider{nil}}, want: "Hooks[0] is nil"},
		{name: "hook of a nil function", b: swarm.NewBuilder().AddAgent(a()),
			cfg: swarm.Config{Hooks: []hook.Provider{hook.Func[*multiagent.BeforeNodeCallEvent](nil)}}, want: "Hooks[0] is nil"},
		// An agent's approval given to the swarm would never run.
		{name: "hook for an agent's event", b: swarm.NewBuilder().AddAgent(a()),
			cfg:  swarm.Config{Hooks: []hook.Provider{hook.Func(func(context.Context, *agent.BeforeToolCallEvent) error { return nil })}},
			want: "agent.BeforeToolCallEvent: the owner never fires this event: a swarm fires none (an agent's events go to the Hooks of the node's agent.Config)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.System = actorstest.System(t)
			s, err := tc.b.Build(context.Background(), cfg)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, swarm.ErrBuild)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// SPEC M9: the defaults are Strands': 20 handoffs, 20 iterations, 900s
// per run, 300s per node, no repetition check.
func TestSwarmConfig_Defaults(t *testing.T) {
	d := swarm.DefaultConfig()
	assert.Equal(t, swarm.DefaultID, d.ID)
	assert.Equal(t, "default_swarm", d.ID)
	assert.Equal(t, 20, d.MaxHandoffs)
	assert.Equal(t, 20, d.MaxIterations)
	assert.Equal(t, 900*time.Second, d.ExecutionTimeout)
	assert.Equal(t, 300*time.Second, d.NodeTimeout)
	assert.Zero(t, d.RepetitiveHandoffDetectionWindow)
	assert.NoError(t, d.Validate())
	assert.NoError(t, swarm.Config{}.Validate())
	m, err := persistence.NewSessionManager(memory.New(), "s")
	require.NoError(t, err)
	assert.NoError(t, swarm.Config{Session: m, IdleTimeout: time.Second}.Validate())
}
