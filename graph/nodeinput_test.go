package graph_test

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

// promptsOf is an agent config whose model records the first message of
// every request it gets; with handTo set it hands off to that agent on
// its first turn.
func promptsOf(mu *sync.Mutex, seen map[string][]string, id, handTo string) agent.Config {
	return agent.Config{ID: id, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		mu.Lock()
		seen[id] = append(seen[id], req.Messages[0].Text())
		mu.Unlock()
		last, _ := req.LastMessage()
		if handTo == "" || len(last.ToolResults()) > 0 {
			return model.TextTurn(id + " done"), nil
		}
		return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": handTo, "message": "over to " + handTo})), nil
	})}
}

// SPEC M9, M11: a swarm nested in a graph gives each of its agents the
// swarm's own input (the swarm context: the handoff that led to it, the
// other agents), as it does at the top level, not the graph node's
// input that the swarm was run with.
func TestGraphNesting_SwarmAgentsGetTheSwarmsInputNotTheGraphNodes(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string][]string{}
	team := swarm.NewBuilder().AddAgent(promptsOf(&mu, seen, "a", "b")).AddAgent(promptsOf(&mu, seen, "b", ""))
	g := build(t, graph.NewBuilder().
		AddNode("pre", textAgent(newRecorder(), "pre")).
		AddNode("team", team.AsNode(swarm.Config{})).
		AddEdge("pre", "team"), graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("the task"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen["a"])
	require.NotEmpty(t, seen["b"])
	assert.Contains(t, seen["a"][0], "Swarm context")
	assert.Contains(t, seen["a"][0], "- b", "a is told whom it can hand off to")
	assert.Contains(t, seen["b"][0], "Handoff message from a: over to b")
}

// SPEC M1, R2: a node's input is its own. A graph invoked from inside a
// node (a function node that runs another graph on a task of its own)
// runs its agents on that task, not on the input of the node it was
// called from.
func TestGraph_AGraphInvokedFromANodeRunsOnItsOwnTask(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string][]string{}
	sys := actorstest.System(t)
	other := build(t, graph.NewBuilder().AddNode("x", agentnode.Agent(promptsOf(&mu, seen, "x", ""))), graph.Config{ID: "other", System: sys})
	caller := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		res, err := other.Invoke(ctx, agent.Text("the other task"))
		if err != nil {
			return nil, err
		}
		return []model.ContentBlock{model.Text(res.Text())}, nil
	})
	g := build(t, graph.NewBuilder().
		AddNode("pre", textAgent(newRecorder(), "pre")).
		AddNode("caller", caller).
		AddEdge("pre", "caller"), graph.Config{ID: "g", System: sys})
	res, err := g.Invoke(ctx, agent.Text("the task"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"the other task"}, seen["x"])
}
