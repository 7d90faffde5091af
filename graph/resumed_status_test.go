package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// SPEC M2, M5, M7: while a node runs again after its interrupt was
// answered, Status shows it EXECUTING, without the answered interrupt:
// neither the node nor the run lists a question that is no longer asked.
func TestGraph_StatusShowsAResumedNodeRunningWithoutItsAnsweredInterrupt(t *testing.T) {
	ctx := context.Background()
	started, release := make(chan struct{}, 1), make(chan struct{})
	tl := tool.New("act", "asks, then works", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if _, err := tc.Interrupt("ask", "go on?"); err != nil {
			return "", err
		}
		started <- struct{}{}
		<-release
		return "done", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("finished"), nil
		}
		return model.ToolTurn(model.Call("t1", "act", map[string]any{})), nil
	})
	g := build(t, graph.NewBuilder().AddNode("worker", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})), graph.Config{})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)

	done := invokeAsync(ctx, g, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	<-started
	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusExecuting, st.Status)
	assert.Empty(t, st.Interrupts, "the run lists no answered interrupt")
	n := st.Node("worker")
	require.NotNil(t, n, "a node that ran before is listed while it runs again")
	assert.Equal(t, multiagent.StatusExecuting, n.Status, "the node runs")
	assert.Empty(t, n.Interrupts, "the node lists no answered interrupt")
	assert.Zero(t, n.ExecutionCount, "an interrupted run is not an execution yet")
	close(release)
	out := <-done
	require.NoError(t, out.err)
	assert.Equal(t, multiagent.StatusCompleted, out.res.Status)
}

// SPEC M2, M7: while nodes run their first run, Status lists them
// EXECUTING (after the nodes that have results), so a caller can tell
// which nodes run now; a node not started yet is not listed.
func TestGraph_StatusListsANodeInItsFirstRunAsExecuting(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	started := make(chan struct{}, 1)
	g := build(t, graph.NewBuilder().AddNode("first", textAgent(r, "first")).AddNode("slow", blockingAgent(started)).
		AddNode("next", textAgent(r, "next")).AddEdge("first", "slow").AddEdge("slow", "next"), graph.Config{})
	done := invokeAsync(ctx, g, agent.Text("go"))
	<-started
	st, err := g.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Results, 2, "first, done, and slow, running")
	assert.Equal(t, "first", st.Results[0].NodeID)
	assert.Equal(t, multiagent.StatusCompleted, st.Results[0].Status)
	slow := st.Node("slow")
	require.NotNil(t, slow, "the running node is listed")
	assert.Equal(t, multiagent.StatusExecuting, slow.Status)
	assert.Zero(t, slow.ExecutionCount, "no run of it has ended")
	assert.Nil(t, st.Node("next"), "not started")
	_, err = g.Cancel(ctx)
	require.NoError(t, err)
	out := <-done
	require.NoError(t, out.err)
	assert.Equal(t, multiagent.StatusCancelled, out.res.Status)
}
