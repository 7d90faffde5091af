package swarm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC M11, I6, I8: a sub agent (agent-as-tool of a swarm agent inside a
// graph) asks two questions; answered one at a time from the top, in a
// freshly built tree each time, the run lists only the one left, and the
// sub agent gets both answers once they are all in: each of its tools
// runs once.
func TestNesting_PartialAnswersToAnAgentAsToolTwoLevelsDown_I6(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	open := func() *graph.Graph {
		sys := actorstest.System(t)
		subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			r.add("model:sub")
			last, _ := req.LastMessage()
			if trs := last.ToolResults(); len(trs) > 0 {
				return model.TextTurn("sub: " + trs[0].Text() + " + " + trs[1].Text()), nil
			}
			return model.ToolTurn(model.Call("p1", "p", map[string]any{}), model.Call("q1", "q", map[string]any{})), nil
		})
		sub, err := agent.New(ctx, agent.Config{ID: "sub", System: sys, Session: manager(t, st, "pa"), Model: subModel,
			Tools: []tool.Tool{askTool(r, "p", "p", "askp"), askTool(r, "q", "q", "askq")}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Close(context.Background()) })
		bModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			r.add("model:b")
			last, _ := req.LastMessage()
			if trs := last.ToolResults(); len(trs) > 0 {
				return model.TextTurn("b: " + trs[0].Text()), nil
			}
			return model.ToolTurn(model.Call("c1", "consult", map[string]any{"prompt": "two things"})), nil
		})
		team := swarm.NewBuilder().AddAgent(agent.Config{ID: "b", Model: bModel, Tools: []tool.Tool{agent.AsTool(sub, "consult", "asks sub")}})
		g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).
			Build(ctx, graph.Config{ID: "top", Session: manager(t, st, "pa"), System: sys})
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close(context.Background()) })
		return g
	}
	res, err := open().Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	// the sub agent's tools run concurrently: which asked first varies
	first, second := res.Interrupts[0], res.Interrupts[1]
	if !strings.Contains(first.Name, ":p1:") {
		first, second = second, first
	}
	require.Contains(t, first.Name, ":p1:")
	require.Contains(t, second.Name, ":q1:")

	res, err = open().Invoke(ctx, agent.Resume(interrupt.Respond(second.ID, "Q")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, first.ID, res.Interrupts[0].ID)
	assert.Equal(t, 0, r.count("tool:q"), "the sub agent waits for both answers")

	res, err = open().Invoke(ctx, agent.Resume(interrupt.Respond(first.ID, "P")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, "b: sub: answer P + answer Q", res.Text())
	assert.Equal(t, 1, r.count("tool:p"))
	assert.Equal(t, 1, r.count("tool:q"))
	assert.Equal(t, 2, r.count("model:sub"))
	assert.Equal(t, 2, r.count("model:b"))
}
