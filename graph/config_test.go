package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// Config.Validate refuses what Build refuses, before anything is built,
// and DefaultConfig is valid and names the graph DefaultID (STYLE: a
// long-lived component's config has defaults and a check of its own).
func TestConfig_ValidateRefusesWhatBuildRefuses(t *testing.T) {
	def := graph.DefaultConfig()
	assert.Equal(t, graph.DefaultID, def.ID)
	require.NoError(t, def.Validate())
	require.NoError(t, graph.Config{}.Validate(), "an empty ID is DefaultID")
	sm, err := persistence.NewSessionManager(memory.New(), "s")
	require.NoError(t, err)
	require.NoError(t, graph.Config{IdleTimeout: time.Minute, Session: sm}.Validate())

	for name, cfg := range map[string]graph.Config{
		"an id with a slash":          {ID: "a/b"},
		"an id with a colon":          {ID: "a:b"},
		"IdleTimeout without Session": {IdleTimeout: time.Minute},
		"negative MaxNodeExecutions":  {MaxNodeExecutions: -1},
		"negative ExecutionTimeout":   {ExecutionTimeout: -time.Second},
		"negative NodeTimeout":        {NodeTimeout: -time.Second},
		"a nil hook":                  {Hooks: []hook.Provider{hook.Func[*multiagent.BeforeNodeCallEvent](nil)}},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, cfg.Validate(), graph.ErrBuild)
			cfg.System = actorstest.System(t)
			_, err := graph.NewBuilder().AddNode("a", textAgent(newRecorder(), "a")).Build(context.Background(), cfg)
			require.ErrorIs(t, err, graph.ErrBuild, "Build refuses it too")
		})
	}
}

// SPEC M3, A1: a graph whose hook provider adds a nil BeforeNodeCall
// callback (its callback left out) is refused at build, rather than run
// its nodes ungated.
func TestBuild_ANilCallbackAddedByAProviderIsRefused(t *testing.T) {
	var gate hook.Callback[multiagent.BeforeNodeCallEvent]
	p := hook.ProviderFunc(func(r *hook.Registry) { hook.Add(r, gate) })
	_, err := graph.NewBuilder().AddNode("n", agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) { return nil, nil })).
		Build(context.Background(), graph.Config{Hooks: []hook.Provider{p}, System: actorstest.System(t)})
	require.ErrorIs(t, err, graph.ErrBuild)
	require.ErrorIs(t, err, hook.ErrNilCallback)
}
