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
	mu      sync.Mutex
	crash   *persistence.SessionExport
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
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.inc(in.Paths[0])
		return "deleted " + in.Paths[0], nil
	})
	crash := hook.Func(func(ctx context.Context, ev *agent.BeforeModelCallEvent) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		msgs := ev.Agent.Messages()
		if r.crash != nil || r.crashAt == "" || msgs[len(msgs)-1].Text() != r.crashAt {
			return nil
		}
		exp, err := persistence.Export(ctx, st, "x")
		r.crash = exp
		return err
	})
	subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("sub: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("s1", "delete_files", pathsIn{Paths: []string{last.Text()}})), nil
	})
	sub = newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm, Model: subModel,
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval"), crash}})
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

// requireEachCallAnswered checks the end of an exclusiveRig run of the
// calls o1 ("a") and o2 ("b"): each got the sub agent's answer to its own
// prompt, each file was deleted once, and the sub agent ran once per call.
func requireEachCallAnswered(t *testing.T, sub, outer *agent.Agent, runs *counter) {
	t.Helper()
	ctx := context.Background()
	assert.Equal(t, 1, runs.get("a"))
	assert.Equal(t, 1, runs.get("b"))
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
	requireEachCallAnswered(t, sub, outer, r.runs)
}
