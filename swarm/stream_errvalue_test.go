package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// SPEC M11, M12, R2: a swarm nested in a streamed graph, whose agent
// fails with the user's typed error: the NodeStop events of the swarm's
// agent (forwarded with its path) and of the node that runs the swarm
// carry the Go errors, the values the final result holds, in which
// errors.As finds the user's error.
func TestSwarm_NestedSwarmNodeStopsKeepTheUsersErrorValue(t *testing.T) {
	ctx := context.Background()
	le := &ledgerError{Account: "acme"}
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.Turn{}, le })
	team := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m})
	g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).
		Build(ctx, graph.Config{ID: "g", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	stops := map[string]error{}
	var final *multiagent.Result
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStopEvent:
			stops[e.Node] = e.Result.Err
		case *multiagent.ResultEvent:
			final = e.Result
		}
	}
	require.NotNil(t, final)
	require.Equal(t, multiagent.StatusFailed, final.Status)
	for path, want := range map[string]error{
		"g/team/a": final.Node("team").Multi.Node("a").Err,
		"g/team":   final.Node("team").Err,
	} {
		got := stops[path]
		require.Error(t, got, path)
		var le2 *ledgerError
		require.ErrorAs(t, got, &le2, path)
		assert.Same(t, le, le2, path)
		assert.NotErrorIs(t, got, actors.ErrRemote, path)
		assert.True(t, want == got, "%s: the NodeStop's error is not the result's", path)
	}
	assert.ErrorIs(t, stops["g/team"], actors.ErrNodeFailed)
}
