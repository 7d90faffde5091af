package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence/export"
)

// SPEC S6, M11: the process dies after a sub agent used as a tool has
// answered (its last save done) and before the outer agent saved the
// call's result. The outer agent, carried on in a fresh process, gets
// the sub agent's answer from its session: the sub agent does not run
// again, so its tool does not run twice and, when it asked a question on
// the way, that question is not asked again. Before, the call ran the sub
// agent again: its tool ran a second time or, gated, the call ended with
// an error result ("was answered and is asked again") in place of the
// answer.
func TestAgentAsTool_S6_ACallCutOffAfterItsSubAgentAnsweredGetsThatAnswer(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprintf("gated=%v", gated), func(t *testing.T) {
			ctx := context.Background()
			calls := []model.ToolCall{model.Call("o1", "helper", agent.ToolInput{Prompt: "a"})}
			st := openSQLite(t)
			var mu sync.Mutex
			var crash *export.Session
			cut := hook.Func(func(ctx context.Context, ev *agent.AfterToolCallEvent) error {
				mu.Lock()
				defer mu.Unlock()
				if crash != nil || ev.ToolUse.Name != "helper" {
					return nil
				}
				var err error
				crash, err = export.Read(ctx, st, "x") // what a crash leaves now
				return err
			})
			r := &exclusiveRig{runs: &counter{}, ungated: !gated}
			_, outer := r.build(t, st, calls, cut)
			res, err := outer.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			answerAll(t, outer, res)
			require.NotNil(t, crash, "the sub agent answered")
			require.Equal(t, 1, r.runs.get("a"))
			require.NoError(t, outer.Close(ctx))

			st2 := openSQLite(t)
			require.NoError(t, export.Write(ctx, st2, crash))
			r2 := &exclusiveRig{runs: &counter{}, ungated: !gated}
			sub2, outer2 := r2.build(t, st2, calls)
			s, err := outer2.Status(ctx)
			require.NoError(t, err)
			require.True(t, s.Incomplete(), "the crash cut the outer run off: %+v", s)
			res, err = outer2.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason, "nothing is asked again: %v", res.Interrupts)
			assert.Zero(t, r2.runs.get("a"), "the sub agent's tool does not run again")
			snap, err := outer2.Snapshot(ctx)
			require.NoError(t, err)
			requireValidHistory(t, snap.Messages)
			results := snap.Messages[2].ToolResults()
			require.Len(t, results, 1)
			assert.Equal(t, model.ToolSuccess, results[0].Status)
			assert.Equal(t, "sub: deleted a", results[0].Text(), "the sub agent's answer")
			subSnap, err := sub2.Snapshot(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, countUser(subSnap.Messages), "the sub agent did not start again")
		})
	}
}

// SPEC S6, M11: a model may give a tool-use id again in a later turn. A
// call of a sub agent in a later turn, with the same id and prompt as one
// the sub agent answered before, runs the sub agent again, also when a
// BeforeTools gate stopped that turn's tool cycle first, so that the call
// is carried on: the earlier call's answer is not taken for its own.
func TestAgentAsTool_S6_AToolUseIDGivenAgainInALaterTurnRunsTheSubAgentAgain(t *testing.T) {
	ctx := context.Background()
	calls := []model.ToolCall{model.Call("o1", "helper", agent.ToolInput{Prompt: "a"})}
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		if len(ev.Agent.Messages()) < 3 {
			return nil // the first turn runs at once
		}
		_, err := ev.Interrupt("batch", nil)
		return err
	})
	r := &exclusiveRig{runs: &counter{}, ungated: true}
	sub, outer := r.build(t, openSQLite(t), calls, gate)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	require.Equal(t, 1, r.runs.get("a"))

	res, err = outer.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "the gate stops the second turn's cycle")
	answerAll(t, outer, res)
	assert.Equal(t, 2, r.runs.get("a"), "the second call ran the sub agent")
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, countUser(subSnap.Messages))
}

// SPEC A13, M11: a retry an AfterToolCall hook asks for runs the sub
// agent again, also in a tool cycle carried on after an interrupt: the
// refused answer is not given back as the retry's.
func TestAgentAsTool_A13_ARetriedCallRunsTheSubAgentAgain(t *testing.T) {
	ctx := context.Background()
	calls := []model.ToolCall{model.Call("o1", "helper", agent.ToolInput{Prompt: "a"})}
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		_, err := ev.Interrupt("batch", nil)
		return err
	})
	var mu sync.Mutex
	retried := false
	retry := hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if !retried {
			retried = true
			ev.Retry()
		}
		return nil
	})
	r := &exclusiveRig{runs: &counter{}, ungated: true}
	sub, outer := r.build(t, openSQLite(t), calls, gate, retry)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	answerAll(t, outer, res)
	assert.Equal(t, 2, r.runs.get("a"), "the retry ran the sub agent again")
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, countUser(subSnap.Messages))
}

// SPEC S6, M11: the process dies after a call of a sub agent marked the
// run it starts and before the sub agent saved its prompt, in a second
// turn of the outer agent (the sub agent's history holds the first
// call's run). Carried on, the call runs the sub agent once for its
// prompt, as a new run.
func TestAgentAsTool_S6_ACallCutOffBeforeItsSubAgentsPromptRunsItOnce(t *testing.T) {
	ctx := context.Background()
	calls := []model.ToolCall{model.Call("o1", "helper", agent.ToolInput{Prompt: "a"})}
	st := openSQLite(t)
	var mu sync.Mutex
	fresh := 0
	var crash *export.Session
	cut := hook.Func(func(ctx context.Context, ev *agent.BeforeInvocationEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if fresh++; fresh != 2 {
			return nil
		}
		var err error
		crash, err = export.Read(ctx, st, "x") // the mark saved, not the prompt
		return err
	})
	r := &exclusiveRig{runs: &counter{}, ungated: true, subHooks: []hook.Provider{cut}}
	_, outer := r.build(t, st, calls)
	for _, prompt := range []string{"go", "again"} {
		res, err := outer.Invoke(ctx, agent.Text(prompt))
		require.NoError(t, err)
		require.Equal(t, agent.StopEndTurn, res.StopReason)
	}
	require.NotNil(t, crash)
	require.NoError(t, outer.Close(ctx))

	st2 := openSQLite(t)
	require.NoError(t, export.Write(ctx, st2, crash))
	r2 := &exclusiveRig{runs: &counter{}, ungated: true}
	sub2, outer2 := r2.build(t, st2, calls)
	res, err := outer2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, r2.runs.get("a"), "the sub agent ran once for the cut-off call")
	subSnap, err := sub2.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, subSnap.Messages)
	assert.Equal(t, 2, countUser(subSnap.Messages), "the first call's run, and this one's")
	assert.Equal(t, "sub: deleted a", subSnap.Messages[len(subSnap.Messages)-1].Text())
}
