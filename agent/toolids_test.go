package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// repeatRig: the model asks to delete "a" and "b" under one tool-use id t1
// (a model may repeat an id within one answer); an approval hook asks
// before each deletion.
type repeatRig struct {
	mu      sync.Mutex
	deleted []string
	keys    []string
}

func (r *repeatRig) agent(t *testing.T, store persistence.Store) *agent.Agent {
	t.Helper()
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.deleted = append(r.deleted, in.Paths[0])
		r.keys = append(r.keys, tc.IdempotencyKey())
		return "deleted " + in.Paths[0], nil
	})
	m, err := persistence.NewSessionManager(store, "repeat")
	require.NoError(t, err)
	return newAgent(t, agent.Config{
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}),
			model.Call("t1", "delete_files", pathsIn{Paths: []string{"b"}})),
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval")},
		Session: m, System: actorstest.System(t)})
}

// SPEC I1, I7, A5: two calls a model gave one tool-use id are asked about
// one by one: each has its own interrupt (its own id and reason), and an
// answer approves only the call it answers; the other is still asked,
// also after a restart.
func TestToolUseIDs_RepeatedIDGetsAnApprovalPerCall(t *testing.T) {
	ctx := context.Background()
	r := &repeatRig{}
	store := memory.New()
	res, err := r.agent(t, store).Invoke(ctx, agent.Text("delete a and b"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 2, "one question per call")
	assert.NotEqual(t, res.Interrupts[0].ID, res.Interrupts[1].ID)
	assert.JSONEq(t, `{"paths":["a"]}`, string(res.Interrupts[0].Reason))
	assert.JSONEq(t, `{"paths":["b"]}`, string(res.Interrupts[1].Reason))
	askB := res.Interrupts[1].ID

	// A fresh runtime: a answered "y", b denied.
	a := r.agent(t, store)
	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y"), interrupt.Respond(askB, "n")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"a"}, r.deleted, "only the approved call ran")
	msgs := agenttest.Messages(t, a)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 2)
	assert.Equal(t, "deleted a", rs[0].Text())
	assert.Equal(t, model.ToolError, rs[1].Status)
}

// SPEC S6, A3: the calls of one answer have ids of their own in the
// history and in their idempotency keys: the first keeps the model's id,
// the next one of the same id gets "<id>_2" (or the next free number).
func TestToolUseIDs_RepeatedIDsAreMadeUniqueInHistoryAndKeys(t *testing.T) {
	ctx := context.Background()
	var keys []string
	var mu sync.Mutex
	ok := tool.New("echo", "echo", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, tc.IdempotencyKey())
		return "ok", nil
	})
	m, err := persistence.NewSessionManager(memory.New(), "s")
	require.NoError(t, err)
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "echo", pathsIn{}), model.Call("t1_2", "echo", pathsIn{}),
		model.Call("t1", "echo", pathsIn{}), model.Call("t2", "echo", pathsIn{})),
		Tools: []tool.Tool{ok}, Session: m, System: actorstest.System(t)})
	var streamed []string
	for ev, err := range a.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		if tu, ok := ev.(*agent.ToolUseEvent); ok {
			streamed = append(streamed, tu.ToolUse.ToolUseID)
		}
	}
	want := []string{"t1", "t1_2", "t1_3", "t2"}
	assert.Equal(t, want, streamed)
	msgs := agenttest.Messages(t, a)
	var ids, resultIDs []string
	for _, u := range msgs[1].ToolUses() {
		ids = append(ids, u.ToolUseID)
	}
	for _, r := range msgs[2].ToolResults() {
		resultIDs = append(resultIDs, r.ToolUseID)
	}
	assert.Equal(t, want, ids)
	assert.Equal(t, want, resultIDs)
	assert.ElementsMatch(t, []string{"s/default/t1", "s/default/t1_2", "s/default/t1_3", "s/default/t2"}, keys)
}

// SPEC A3: a renamed id is no longer than the providers' tool-use id limits
// allow when the model's id was within them: at most 40 characters (the
// shortest limit a provider sets) or the length of the model's id, if
// longer. Providers refuse a request whose history holds a longer id.
func TestToolUseIDs_RenamedIDsStayWithinProviderLengthLimits(t *testing.T) {
	ctx := context.Background()
	ok := tool.New("echo", "echo", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		return "ok", nil
	})
	id40 := strings.Repeat("a", 40)
	id64 := strings.Repeat("b", 64)
	a := newAgent(t, agent.Config{Model: toolThenText("done",
		model.Call(id40, "echo", pathsIn{}), model.Call(id40, "echo", pathsIn{}),
		model.Call(id64, "echo", pathsIn{}), model.Call(id64, "echo", pathsIn{}), model.Call(id64, "echo", pathsIn{})),
		Tools: []tool.Tool{ok}, System: actorstest.System(t)})
	_, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	var ids []string
	for _, u := range agenttest.Messages(t, a)[1].ToolUses() {
		ids = append(ids, u.ToolUseID)
	}
	require.Len(t, ids, 5)
	assert.Equal(t, []string{id40, id40[:38] + "_2", id64, id64[:62] + "_2", id64[:62] + "_3"}, ids)
}
