package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// SPEC I2, S1, A10: a model (a custom model.Model, or the scripted one)
// may give tool-use ids that are not valid UTF-8. The agent makes them
// valid as the answer arrives, so the id the caller is given (in the
// stream, in the interrupt ids derived from it) is the one the session
// stores: a fresh runtime, loading the session, accepts the answer by the
// id the first runtime gave, and the history, the results and the
// idempotency keys agree with the stream.
func TestToolUseIDs_InvalidUTF8IDsAreMadeValidAndSurviveARestart(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir(), NoFsync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	var mu sync.Mutex
	var keys, ran []string
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, tc.IdempotencyKey())
		ran = append(ran, tc.ToolUse.ToolUseID)
		return "deleted", nil
	})
	build := func() *agent.Agent {
		m, err := persistence.NewSessionManager(st, "utf8")
		require.NoError(t, err)
		return newAgent(t, agent.Config{
			// "t\xff1" and "t\xfe1" both read as "t\uFFFD1" once cleaned:
			// they must still get ids of their own.
			Model: toolThenText("done",
				model.Call("t\xff1", "delete_files", pathsIn{Paths: []string{"a\xffb"}}),
				model.Call("t\xfe1", "delete_files", pathsIn{Paths: []string{"c"}})),
			Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval")},
			Session: m, System: actorstest.System(t)})
	}

	var streamed []string
	var res *agent.Result
	for ev, err := range build().Stream(ctx, agent.Text("delete")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *agent.ToolUseEvent:
			streamed = append(streamed, e.ToolUse.ToolUseID)
		case *agent.ResultEvent:
			res = e.Result
		}
	}
	require.Len(t, streamed, 2)
	for _, id := range streamed {
		assert.True(t, utf8.ValidString(id), "streamed tool-use id %q", id)
	}
	assert.Equal(t, []string{"t_1", "t_1_2"}, streamed, "each stray byte becomes '_'; ids stay unique")
	require.NotNil(t, res)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 2)
	for i, in := range res.Interrupts {
		assert.True(t, utf8.ValidString(in.ID), "interrupt id %q", in.ID)
		assert.Equal(t, interrupt.BeforeToolCallID(streamed[i], "approval"), in.ID)
	}

	// A fresh runtime loads the session and takes the answers by the
	// ids the first one gave; the reason reads as it was given.
	a := build()
	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	stored := snap.Interrupts.Unanswered()
	require.Len(t, stored, 2)
	assert.Equal(t, string(res.Interrupts[0].Reason), string(stored[0].Reason), "the caller's reason is the stored one")
	res2, err := a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y"), respond(res.Interrupts[1], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res2.StopReason)

	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	var hist []string
	for _, u := range msgs[1].ToolUses() {
		hist = append(hist, u.ToolUseID)
	}
	assert.Equal(t, streamed, hist)
	assert.ElementsMatch(t, streamed, ran)
	assert.ElementsMatch(t, []string{"utf8/default/" + streamed[0], "utf8/default/" + streamed[1]}, keys)
}

// SPEC A3: an id the model gave as valid UTF-8 is kept when an id made
// valid would equal it; the made-valid one is renamed, within the length
// limits, as a repeated id is.
func TestToolUseIDs_ValidIDsWinOverIDsMadeValid(t *testing.T) {
	ctx := context.Background()
	ok := tool.New("echo", "echo", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		return "ok", nil
	})
	id40 := strings.Repeat("a", 39)
	a := newAgent(t, agent.Config{Model: toolThenText("done",
		model.Call("t\xff1", "echo", pathsIn{}), model.Call("t_1", "echo", pathsIn{}),
		model.Call(id40+"\xff", "echo", pathsIn{}), model.Call(id40+"_", "echo", pathsIn{})),
		Tools: []tool.Tool{ok}, System: actorstest.System(t)})
	_, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	var got []string
	for _, u := range agenttest.Messages(t, a)[1].ToolUses() {
		got = append(got, u.ToolUseID)
	}
	assert.Equal(t, []string{"t_1_2", "t_1", id40[:38] + "_2", id40 + "_"}, got)
}

// SPEC I3, R2: a hook that raises an interrupt whose name is not valid
// UTF-8 fails the invocation with interrupt.ErrNotUTF8 (matched by
// errors.Is on the caller's side), and the tool it guards does not run.
func TestInterrupt_NameThatIsNotUTF8FailsTheInvocation(t *testing.T) {
	ctx := context.Background()
	del, runs := countingTool("delete_files")
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{})),
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approv\xe9")},
		System: actorstest.System(t)})
	_, err := a.Invoke(ctx, agent.Text("delete"))
	require.ErrorIs(t, err, interrupt.ErrNotUTF8)
	assert.Contains(t, err.Error(), `"approv\xe9"`)
	assert.Equal(t, 0, runs.total())
}
