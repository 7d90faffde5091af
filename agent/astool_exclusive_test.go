package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// exclusiveRig builds, on a fresh runtime and the session "x" of a store,
// a sub agent that deletes the file its prompt names, gated by an approval
// hook, and an outer agent that has it as its tool "helper" (and, for
// hooks that route calls to it, an unused tool "route" with the same
// input). Once, when the sub agent is about to answer the prompt
// crashAt, it copies the store: what a crash at that moment leaves.
type exclusiveRig struct {
	runs    *counter
	crashAt string
	ungated bool // the sub agent's tool runs without asking
	// subHooks are further hooks of the sub agent.
	subHooks []hook.Provider
	mu       sync.Mutex
	crash    *export.Session
}

func openSQLite(t *testing.T) persistence.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func (r *exclusiveRig) build(t *testing.T, st persistence.Store, calls []model.ToolCall, hooks ...hook.Provider) (sub, outer *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(st, "x")
	require.NoError(t, err)
	del, subModel := fileDeleter(r.runs)
	crash := hook.Func(func(ctx context.Context, ev *agent.BeforeModelCallEvent) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		msgs := ev.Agent.Messages()
		if r.crash != nil || r.crashAt == "" || msgs[len(msgs)-1].Text() != r.crashAt {
			return nil
		}
		exp, err := export.Read(ctx, st, "x")
		r.crash = exp
		return err
	})
	subHooks := append([]hook.Provider{crash}, r.subHooks...)
	if !r.ungated {
		subHooks = append(subHooks, approveHook("delete_files", "approval"))
	}
	sub = newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm, Model: subModel,
		Tools: []tool.Tool{del}, Hooks: subHooks})
	route := tool.New("route", "routes a request", func(ctx context.Context, tc *tool.Context, in agent.ToolInput) (string, error) {
		return "", nil
	})
	outer = newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm, Executor: tool.Concurrent{}, Hooks: hooks,
		Model: toolThenText("outer done", calls...),
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent"), route}})
	return sub, outer
}

// answerAll resumes a until it ends, answering every interrupt "y", and
// returns the interrupt ids of each stop.
func answerAll(t *testing.T, a *agent.Agent, res *agent.Result) [][]string {
	t.Helper()
	var stops [][]string
	for res.StopReason == agent.StopInterrupt {
		stops = append(stops, ids(res.Interrupts))
		require.Less(t, len(stops), 10, "the run ends")
		var answers []interrupt.Response
		for _, in := range res.Interrupts {
			answers = append(answers, respond(in, "y"))
		}
		var err error
		res, err = a.Invoke(context.Background(), agent.Resume(answers...))
		require.NoError(t, err)
	}
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	return stops
}

// SPEC M11, A1, A4, A7: a BeforeToolCall callback routes a call to a sub
// agent (SetToolUse) and another one stops it for an approval. The call
// would run the sub agent, so a later call of that sub agent in the same
// turn does not start in that pass either: on resume the routed call runs
// first, then the later one, and each answer reaches the call that asked.
// Before, the later call ran on the sub agent while the routed one waited;
// on resume the routed call dropped the sub agent's run for the later
// call, whose answered question came back and ended it with an error
// result ("was answered and is asked again"): its file was never deleted.
func TestAgentAsTool_M11_ACallRoutedToASubAgentAndHeldByAHookHoldsBackItsLaterCalls(t *testing.T) {
	ctx := context.Background()
	route := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name == "route" {
			ev.SetToolUse(model.ToolUse{Name: "helper", Input: ev.ToolUse.Input})
		}
		return nil
	})
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.ToolUseID != "o1" {
			return nil
		}
		_, err := ev.Interrupt("gate", nil)
		return err
	})
	r := &exclusiveRig{runs: &counter{}}
	sub, outer := r.build(t, openSQLite(t), []model.ToolCall{
		model.Call("o1", "route", agent.ToolInput{Prompt: "a"}),
		model.Call("o2", "helper", agent.ToolInput{Prompt: "b"})}, route, gate)
	innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))

	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, []string{interrupt.BeforeToolCallID("o1", "gate")}, ids(res.Interrupts), "the later call of the sub agent waits")
	st, err := sub.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, st.State, "the later call did not start")

	stops := answerAll(t, outer, res)
	assert.Equal(t, [][]string{
		{interrupt.BeforeToolCallID("o1", "gate")},
		{interrupt.ToolCallID("o1", innerID)},
		{interrupt.ToolCallID("o2", innerID)},
	}, stops)
	assert.Equal(t, 1, r.runs.get("a"))
	assert.Equal(t, 1, r.runs.get("b"))
	requireBothCallsAnswered(t, sub, outer, nil)
}

// SPEC M11, S1, S6: with both agents on one SQLite session, the process
// dies (the store is copied) right after the first of two calls of a sub
// agent got its result, as the second call starts the sub agent. A fresh
// outer agent and sub agent built from the copy carry the run on: the
// first call is not run again, the second asks its own question, and each
// answer reaches the call that asked.
func TestAgentAsTool_M11_TwoCallsOfASubAgentCarryOnAfterACrashBetweenThem(t *testing.T) {
	ctx := context.Background()
	calls := []model.ToolCall{
		model.Call("o1", "helper", agent.ToolInput{Prompt: "a"}),
		model.Call("o2", "helper", agent.ToolInput{Prompt: "b"})}
	innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))
	r := &exclusiveRig{runs: &counter{}, crashAt: "b"}
	_, outer := r.build(t, openSQLite(t), calls)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, []string{interrupt.ToolCallID("o1", innerID)}, ids(res.Interrupts))
	_, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.NotNil(t, r.crash, "the second call started the sub agent")
	assert.Equal(t, 1, r.runs.get("a"))
	require.NoError(t, outer.Close(ctx))

	st := openSQLite(t)
	require.NoError(t, export.Write(ctx, st, r.crash))
	r2 := &exclusiveRig{runs: &counter{}}
	sub2, outer2 := r2.build(t, st, calls)
	s, err := outer2.Status(ctx)
	require.NoError(t, err)
	require.True(t, s.Incomplete(), "the crash cut the outer run off: %+v", s)
	res, err = outer2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	stops := answerAll(t, outer2, res)
	assert.Equal(t, [][]string{{interrupt.ToolCallID("o2", innerID)}}, stops, "the second call asks once")
	assert.Zero(t, r2.runs.get("a"), "the first call is not run again")
	assert.Equal(t, 1, r2.runs.get("b"))
	requireBothCallsAnswered(t, sub2, outer2, nil)
}

// SPEC M11, A6, A7: two calls of a sub agent, one held back behind the
// other, while a third tool of the turn is stopped by a hook: the two
// calls run one after the other in that pass and keep their results, the
// outer agent stops for the third tool alone, and on resume only that
// tool runs.
func TestAgentAsTool_M11_HeldBackCallsRunWhileAnotherToolInterrupts(t *testing.T) {
	ctx := context.Background()
	ask := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name == "route" {
			_, err := ev.Interrupt("ask", nil)
			return err
		}
		return nil
	})
	r := &exclusiveRig{runs: &counter{}, ungated: true}
	sub, outer := r.build(t, openSQLite(t), []model.ToolCall{
		model.Call("o1", "helper", agent.ToolInput{Prompt: "a"}),
		model.Call("o3", "route", agent.ToolInput{Prompt: "c"}),
		model.Call("o2", "helper", agent.ToolInput{Prompt: "b"})}, ask)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, []string{interrupt.BeforeToolCallID("o3", "ask")}, ids(res.Interrupts))
	assert.Equal(t, 1, r.runs.get("a"))
	assert.Equal(t, 1, r.runs.get("b"), "the held-back call ran once the first was done")
	assert.Equal(t, [][]string{{interrupt.BeforeToolCallID("o3", "ask")}}, answerAll(t, outer, res))
	assert.Equal(t, 1, r.runs.get("a"), "not run again on resume")
	assert.Equal(t, 1, r.runs.get("b"), "not run again on resume")
	snap, err := outer.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 3)
	assert.Equal(t, "sub: deleted a", results[0].Text())
	assert.Equal(t, "sub: deleted b", results[2].Text())
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, countUser(subSnap.Messages))
}
