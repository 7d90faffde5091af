package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// SPEC M11, A6, A7: the model asks for two calls of one sub agent in one
// turn, under the concurrent executor. The calls run one after the other,
// each to its end: the first one's question stops the outer agent (the
// second call does not start on the sub agent that waits for it); its
// answer resumes the sub agent for that call, then the second call runs and
// asks its own question; its answer finishes it. The sub agent's tool runs
// once per call, and each call gets the sub agent's answer to its prompt.
// fileDeleter returns a sub agent's tool delete_files, which counts its
// deletions by file in runs, and its model, which asks for it on the file
// its prompt names (tool-use id s1), then answers "sub: " and the result.
func fileDeleter(runs *counter) (tool.Tool, *model.ScriptedModel) {
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(in.Paths[0])
		return "deleted " + in.Paths[0], nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("sub: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("s1", "delete_files", pathsIn{Paths: []string{last.Text()}})), nil
	})
	return del, m
}

// twoCallsRig builds a sub agent that deletes the file its prompt names,
// gated by an approval hook, and an outer agent whose model asks for two
// calls of it in one turn (o1 for "a", o2 for "b") under the concurrent
// executor; hooks are the outer agent's. runs counts the deletions by file.
func twoCallsRig(t *testing.T, runs *counter, hooks ...hook.Provider) (sub, outer *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	delTool, subModel := fileDeleter(runs)
	sub = newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Model: subModel,
		Tools: []tool.Tool{delTool}, Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
	outer = newAgent(t, agent.Config{ID: "outer", System: sys, Executor: tool.Concurrent{}, Hooks: hooks,
		Model: toolThenText("outer done",
			model.Call("o1", "helper", agent.ToolInput{Prompt: "a"}),
			model.Call("o2", "helper", agent.ToolInput{Prompt: "b"})),
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})
	return sub, outer
}

// requireBothCallsAnswered checks the end of a run of the two calls o1
// ("a") and o2 ("b") of one sub agent: each call got the sub agent's
// answer to its own prompt, and the sub agent ran once per call (and its
// tool once per file, when runs counts them).
func requireBothCallsAnswered(t *testing.T, sub, outer *agent.Agent, runs *counter) {
	t.Helper()
	ctx := context.Background()
	if runs != nil {
		assert.Equal(t, 1, runs.get("a"))
		assert.Equal(t, 1, runs.get("b"))
	}
	snap, err := outer.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 2)
	for i, want := range []string{"sub: deleted a", "sub: deleted b"} {
		assert.Equal(t, model.ToolSuccess, results[i].Status, "call %d", i+1)
		assert.Equal(t, want, results[i].Text(), "call %d gets the answer to its own prompt", i+1)
	}
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, subSnap.Messages)
	assert.Equal(t, 2, countUser(subSnap.Messages), "one run of the sub agent per call")
}

// SPEC M11, A6, A7: the model asks for two calls of one sub agent in one
// turn, under the concurrent executor. The calls run one after the other,
// each to its end: the first one's question stops the outer agent (the
// second call does not start on the sub agent that waits for it); its
// answer resumes the sub agent for that call, then the second call runs and
// asks its own question; its answer finishes it. The sub agent's tool runs
// once per call, and each call gets the sub agent's answer to its prompt.
// Before, both calls ran at once on the sub agent: one of them, or both,
// ended as an error result ("resume with interrupt responses", or "was
// answered and is asked again") and its tool never ran.
func TestAgentAsTool_M11_TwoCallsOfOneSubAgentInOneTurnRunOneAfterTheOther(t *testing.T) {
	ctx := context.Background()
	runs := &counter{}
	sub, outer := twoCallsRig(t, runs)
	innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))

	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Equal(t, []string{interrupt.ToolCallID("o1", innerID)}, ids(res.Interrupts), "the first call asks; the second waits for it")
	assert.Equal(t, 0, runs.total())

	res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Equal(t, []string{interrupt.ToolCallID("o2", innerID)}, ids(res.Interrupts), "the second call asks once the first is done")
	assert.Equal(t, 1, runs.get("a"))
	assert.Equal(t, 0, runs.get("b"))

	res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	requireBothCallsAnswered(t, sub, outer, runs)
}

// SPEC M11, A4, A7: when the outer agent's own BeforeToolCall hook stops
// the first of two calls of one sub agent, the second does not run on the
// sub agent in that pass either (it would leave the sub agent waiting on
// its own question, which the first call, resumed, would then drop). On
// resume the first call runs, then the second, each asking and getting its
// own answer.
func TestAgentAsTool_M11_ACallHeldByAHookHoldsBackTheLaterCallsOfItsSubAgent(t *testing.T) {
	ctx := context.Background()
	runs := &counter{}
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.ToolUseID != "o1" {
			return nil
		}
		_, err := ev.Interrupt("gate", nil)
		return err
	})
	sub, outer := twoCallsRig(t, runs, gate)
	innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))

	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, []string{interrupt.BeforeToolCallID("o1", "gate")}, ids(res.Interrupts))
	st, err := sub.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, st.State, "the second call did not start")

	for _, want := range []string{interrupt.ToolCallID("o1", innerID), interrupt.ToolCallID("o2", innerID)} {
		res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
		require.NoError(t, err)
		require.Equal(t, []string{want}, ids(res.Interrupts))
	}
	res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	requireBothCallsAnswered(t, sub, outer, runs)
}
