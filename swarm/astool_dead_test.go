package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// SPEC M11, M6, I7: a graph node's agent calls a sub agent as a tool, the
// sub agent asks, and the run ends without it (the node's gate is
// answered "no" in the meantime). In the next run the node's agent calls
// the tool with the new task: the sub agent's interrupted run belonged to
// a call that is over, so it is dropped and the new task is the one the
// sub agent works on and asks about; before, the old question was asked
// again as the new call's, and its answer finished the old task.
func TestNesting_ASubAgentLeftWaitingByARunThatEndedIsDroppedForTheNextCall_M11(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	sys := actorstest.System(t)
	subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn("sub answered: " + trs[0].Text()), nil
		}
		r.prompt("sub", last.Text())
		return model.ToolTurn(model.Call("s1", "lookup", map[string]any{})), nil
	})
	sub, err := agent.New(ctx, agent.Config{ID: "sub", System: sys, Model: subModel, Tools: []tool.Tool{askTool(r, "sub", "lookup", "which")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close(context.Background()) })
	outerModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn("x: " + trs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("c1", "consult", map[string]any{"prompt": "task " + last.Text()})), nil
	})
	x := agentnode.Agent(agent.Config{Model: outerModel, Tools: []tool.Tool{agent.AsTool(sub, "consult", "asks sub")}})
	g, err := graph.NewBuilder().AddNode("x", x).Build(ctx, graph.Config{ID: "g", System: sys, Hooks: []hook.Provider{gate(r, "x")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })

	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	gateID := res.Interrupts[0].ID
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the sub agent asks")
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "n")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCancelled, res.Status, "the run ended without the sub agent's answer")

	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, []string{"task first", "task second"}, r.prompts("sub"), "the sub agent was given the new task")
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "2")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, "x: sub answered: answer 2", res.Node("x").Text())
	assert.Equal(t, 1, r.count("tool:sub"), "the dropped run's tool never ran")
}
