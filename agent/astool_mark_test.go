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
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/tool"
)

// promptedRig builds, on a fresh runtime and the session "x" of a store,
// a sub agent that deletes the file its prompt names, and an outer agent
// that has it as its tool "helper" (gated by an approval hook unless
// ungated), and whose model asks for one call "o1" of helper with the
// text of its last prompt (a model that numbers its tool uses per answer
// gives the same id again), after a call "o0" of first if it is not nil.
type promptedRig struct {
	runs    *counter
	ungated bool
	first   tool.Tool
}

func (r *promptedRig) build(t *testing.T, st persistence.Store) (sub, outer *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(st, "x")
	require.NoError(t, err)
	del, subModel := fileDeleter(r.runs)
	sub = newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm, Model: subModel,
		Tools: []tool.Tool{del}})
	outerModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("outer: " + rs[len(rs)-1].Text()), nil
		}
		calls := []model.ToolCall{model.Call("o1", "helper", agent.ToolInput{Prompt: last.Text()})}
		if r.first != nil {
			calls = append([]model.ToolCall{model.Call("o0", r.first.Spec().Name, struct{}{})}, calls...)
		}
		return model.ToolTurn(calls...), nil
	})
	var hooks []hook.Provider
	if !r.ungated {
		hooks = append(hooks, approveHook("helper", "ask"))
	}
	tools := []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}
	if r.first != nil {
		tools = append(tools, r.first)
	}
	outer = newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm, Model: outerModel, Hooks: hooks, Tools: tools,
		Executor: tool.Sequential{}})
	return sub, outer
}

// SPEC M11, S6: the owner of an agent starts its conversation over
// (SetMessages) and the model gives a tool-use id it gave before, at the
// same place of the new history, for a call of a sub agent, approved by a
// BeforeToolCall hook (so the call runs in a tool cycle resumed after an
// interrupt). The call runs the sub agent for its own prompt, another
// one or the same: the answer of the earlier call is not taken for its
// own.
func TestAgentAsTool_S6_ACallInAConversationStartedOverGetsAnAnswerToItsOwnPrompt(t *testing.T) {
	for _, again := range []string{"b", "a"} {
		t.Run("then "+again, func(t *testing.T) {
			ctx := context.Background()
			runs := &counter{}
			sub, outer := (&promptedRig{runs: runs}).build(t, openSQLite(t))
			res, err := outer.Invoke(ctx, agent.Text("a"))
			require.NoError(t, err)
			answerAll(t, outer, res)
			require.Equal(t, 1, runs.get("a"))

			require.NoError(t, outer.SetMessages(ctx, nil)) // start over
			res, err = outer.Invoke(ctx, agent.Text(again))
			require.NoError(t, err)
			require.Equal(t, agent.StopInterrupt, res.StopReason, "the call waits for its approval")
			answerAll(t, outer, res)
			want := 1
			if again == "a" {
				want = 2 // once for each call
			}
			assert.Equal(t, want, runs.get(again), "the sub agent ran for the new call")
			snap, err := outer.Snapshot(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, snap.Messages)
			assert.Equal(t, "outer: sub: deleted "+again, snap.Messages[len(snap.Messages)-1].Text())
			subSnap, err := sub.Snapshot(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, countUser(subSnap.Messages))
		})
	}
}

// SPEC S6, M11: in a conversation started over, the process dies while
// the outer agent's tool cycle runs, before a call of a sub agent starts
// (the sub agent's state still marks the call of the same tool-use id
// and place it answered in the first conversation). Carried on, the call
// runs the sub agent for its own prompt: the answer to the earlier
// call's prompt is not taken for its own.
func TestAgentAsTool_S6_ACallCutOffBeforeItStartsGetsAnAnswerToItsOwnPrompt(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	var mu sync.Mutex
	armed := false
	var crash *export.Session
	snap := tool.New("snap", "copies the store", func(ctx context.Context, tc *tool.Context, _ struct{}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if armed && crash == nil {
			var err error
			crash, err = export.Read(ctx, st, "x") // what a crash leaves now
			if err != nil {
				return "", err
			}
		}
		return "copied", nil
	})
	runs := &counter{}
	_, outer := (&promptedRig{runs: runs, ungated: true, first: snap}).build(t, st)
	res, err := outer.Invoke(ctx, agent.Text("a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	require.NoError(t, outer.SetMessages(ctx, nil)) // start over
	mu.Lock()
	armed = true
	mu.Unlock()
	_, err = outer.Invoke(ctx, agent.Text("b"))
	require.NoError(t, err)
	require.NotNil(t, crash)
	require.NoError(t, outer.Close(ctx))

	st2 := openSQLite(t)
	require.NoError(t, export.Write(ctx, st2, crash))
	runs2 := &counter{}
	sub2, outer2 := (&promptedRig{runs: runs2, ungated: true, first: snap}).build(t, st2)
	s, err := outer2.Status(ctx)
	require.NoError(t, err)
	require.True(t, s.Incomplete(), "the crash cut the outer run off: %+v", s)
	res, err = outer2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs2.get("b"), "the sub agent ran for the call's prompt")
	assert.Equal(t, "outer: sub: deleted b", res.Message.Text())
	subSnap, err := sub2.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, subSnap.Messages)
	assert.Equal(t, 2, countUser(subSnap.Messages))
}
