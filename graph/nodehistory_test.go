package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// SPEC A3, M8: a node's agent is given a prompt at every run, and an
// agent whose history ends with a user message refuses a prompt
// (ErrIncompleteRun, two user messages in a row); a node built with such
// a history (and given it back by ResetOnRevisit) could never run. It is
// a clear build error naming the node; before, the graph built and every
// run of the node ended FAILED with "the last run did not finish".
func TestGraph_A3_ANodeAgentWhoseHistoryEndsWithAUserMessageIsABuildError(t *testing.T) {
	ctx := context.Background()
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) { return model.TextTurn("ok"), nil })
	primed := agentnode.Agent(agent.Config{Messages: []model.Message{model.UserText("context: be brief")}, Model: m})
	g, err := graph.NewBuilder().AddNode("a", primed).Build(ctx, graph.Config{System: actorstest.System(t)})
	if err == nil {
		t.Cleanup(func() { _ = g.Close(ctx) })
		res, ierr := g.Invoke(ctx, agent.Text("task"))
		require.NoError(t, ierr)
		require.NotEqual(t, multiagent.StatusFailed, res.Status, "the node can never run: %+v", res.Results[0])
		t.Fatal("a node agent whose history ends with a user message was built")
	}
	require.ErrorIs(t, err, agentnode.ErrConfig)
	assert.Contains(t, err.Error(), `"a"`)

	// A history that ends with the assistant's answer is fine.
	ok := agentnode.Agent(agent.Config{Messages: []model.Message{model.UserText("context: be brief"), model.AssistantText("understood")}, Model: m})
	g2 := build(t, graph.NewBuilder().AddNode("a", ok), graph.Config{})
	res, err := g2.Invoke(ctx, agent.Text("task"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
