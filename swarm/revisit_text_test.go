package swarm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// revisitingTeam is a → b → a: a hands off to b on its first prompt and
// answers "a final" on its second; b hands back to a.
func revisitingTeam(r *recorder) *swarm.Builder {
	var mu sync.Mutex
	prompts := 0
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("a handed off"), nil
		}
		mu.Lock()
		defer mu.Unlock()
		prompts++
		if prompts == 1 {
			return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "check"})), nil
		}
		return model.TextTurn("a final"), nil
	})
	return swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m}).AddAgent(teamAgent(r, "b", handoff{to: "a", message: "checked"}))
}

// SPEC M7, M11: the text of a run is its last completed node's, by the
// order runs ended: a swarm a → b → a answers with a's last answer, and a
// graph node after that swarm is given it as the swarm's output, not b's
// (b finished first among the nodes, not last).
func TestSwarm_TheTextOfARunThatRevisitsANodeIsItsLastAnswer_M11(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	res, err := build(t, revisitingTeam(r), swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "a"}, res.ExecutionOrder)
	assert.Equal(t, "a final", res.Text())

	g, err := graph.NewBuilder().AddNode("team", revisitingTeam(r).AsNode(swarm.Config{})).
		AddNode("after", agentnode.Agent(teamAgent(r, "after", handoff{}))).AddEdge("team", "after").
		Build(ctx, graph.Config{ID: "g", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	res, err = g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "a final", res.Node("team").Text())
	require.Len(t, r.prompts("after"), 1)
	assert.Contains(t, r.prompts("after")[0], "team: a final")
}
