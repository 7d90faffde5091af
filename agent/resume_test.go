package agent_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// rsSnapshotJSON returns the agent's snapshot as JSON bytes.
func rsSnapshotJSON(t *testing.T, a *agent.Agent) []byte {
	t.Helper()
	s, err := a.Snapshot(context.Background())
	require.NoError(t, err)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return b
}

// rsSave is one save rsSaver saw: whether it was durable, and the record
// as stored after it, as {"messages","state","interrupts","pending"}.
type rsSave struct {
	durable bool
	snap    []byte
}

// rsSaver is a memory store that records every save; session() is an
// agent.Session over it.
type rsSaver struct {
	*memory.Store
	mu    sync.Mutex
	saves []rsSave
}

func newSaver() *rsSaver { return &rsSaver{Store: memory.New()} }

func (s *rsSaver) session(t *testing.T) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(s, "rs")
	require.NoError(t, err)
	return m
}

func (s *rsSaver) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	if err != nil {
		return v, err
	}
	rec, err := s.Store.Load(ctx, changes[0].Key)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Data, &doc); err != nil {
		return nil, err
	}
	doc["messages"] = rec.Messages
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.saves = append(s.saves, rsSave{durable: opts.Durable, snap: b})
	s.mu.Unlock()
	return v, nil
}

func (s *rsSaver) list() []rsSave {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rsSave(nil), s.saves...)
}

// rsApproveAgent is an agent whose delete_files tool needs approval
// (approveHook), interrupted on its first BeforeToolCall.
type rsApproveAgent struct {
	a     *agent.Agent
	m     *model.ScriptedModel
	runs  *counter
	rec   *recorder
	saver *rsSaver
	in    interrupt.Interrupt
}

func rsInterruptedApproveAgent(t *testing.T) rsApproveAgent {
	t.Helper()
	rec := &recorder{}
	saver := newSaver()
	del, runs := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"a/b/c.txt"}}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Session: saver.session(t),
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), rec}})
	res, err := a.Invoke(context.Background(), agent.Text("delete old files"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	require.True(t, agenttest.Interrupted(t, a))
	return rsApproveAgent{a: a, m: m, runs: runs, rec: rec, saver: saver, in: res.Interrupts[0]}
}

// SPEC I7: every rejected input leaves the state exactly as it was: the
// snapshot is byte-identical, the model is not called, no hook fires (not even
// BeforeInvocation) and nothing is saved. A correct resume still works after.
func TestResumeValidation_RejectionsLeaveStateUnchanged(t *testing.T) {
	ctx := context.Background()
	x := rsInterruptedApproveAgent(t)
	a, in := x.a, x.in
	before := rsSnapshotJSON(t, a)
	calls := x.m.Calls()
	saves := len(x.saver.list())
	x.rec.reset()

	unchanged := func(t *testing.T) {
		t.Helper()
		assert.Equal(t, string(before), string(rsSnapshotJSON(t, a)), "snapshot must be byte-identical")
		assert.Equal(t, calls, x.m.Calls(), "the model must not be called")
		assert.Empty(t, x.rec.list(), "no hook event may fire")
		assert.Len(t, x.saver.list(), saves, "nothing may be saved")
		assert.Equal(t, 0, x.runs.total(), "the pending tool must not run")
		assert.True(t, agenttest.Interrupted(t, a))
	}

	t.Run("prompt while interrupted", func(t *testing.T) {
		_, err := a.Invoke(ctx, agent.Text("hello"))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
		var ce *interrupt.ContentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{"text"}, ce.Types)
		assert.Contains(t, err.Error(), "resume with interrupt responses")
		unchanged(t)
	})

	t.Run("responses mixed with content", func(t *testing.T) {
		raw := `[{"interruptResponse":{"interruptId":"` + in.ID + `","response":"y"}},{"text":"hi"}]`
		_, err := agent.ParseInput([]byte(raw))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrMixedInput)
		assert.NotErrorIs(t, err, interrupt.ErrResumeRequired)
		unchanged(t)
	})

	t.Run("unknown id", func(t *testing.T) {
		_, err := a.Invoke(ctx, agent.Resume(interrupt.Respond("nope", "y")))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrUnknownID)
		var ie *interrupt.IDError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "nope", ie.ID)
		assert.Contains(t, err.Error(), "interrupt_id=<nope> | no interrupt found")
		unchanged(t)
	})

	t.Run("valid response then unknown one", func(t *testing.T) {
		_, err := a.Invoke(ctx, agent.Resume(respond(in, "y"), interrupt.Respond("nope", "y")))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrUnknownID)
		assert.Contains(t, err.Error(), "interrupt_id=<nope> | no interrupt found")
		unchanged(t)
		require.Len(t, agenttest.Interrupts(t, a), 1)
		assert.False(t, agenttest.Interrupts(t, a)[0].Answered, "the valid response must not have been applied")
	})

	t.Run("block without response", func(t *testing.T) {
		inp, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"` + in.ID + `"}}]`))
		require.NoError(t, err, "a block without response parses; the resume rejects it")
		require.True(t, inp.IsResume())
		_, err = a.Invoke(ctx, inp)
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrMissingResponse)
		assert.Contains(t, err.Error(), "interrupt_id=<"+in.ID+">")
		unchanged(t)
	})

	t.Run("same id twice", func(t *testing.T) {
		_, err := a.Invoke(ctx, agent.Resume(respond(in, "y"), respond(in, "n")))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrDuplicateResponse)
		assert.Contains(t, err.Error(), "interrupt_id=<"+in.ID+">")
		unchanged(t)
	})

	t.Run("empty resume", func(t *testing.T) {
		// Matches both: ErrResumeRequired, as it always did, and
		// ErrEmptyResume, as a Graph's or a Swarm's does; the message
		// says the resume answers nothing, not that it is a prompt.
		_, err := a.Invoke(ctx, agent.Resume())
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
		assert.ErrorIs(t, err, interrupt.ErrEmptyResume)
		assert.Contains(t, err.Error(), "interrupt_id=<"+in.ID+">")
		assert.NotContains(t, err.Error(), "not a prompt")
		unchanged(t)
	})

	res, err := a.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, x.runs.get("t1"), "the tool runs exactly once")
	assert.False(t, agenttest.Interrupted(t, a))
	requireValidHistory(t, agenttest.Messages(t, a))

	// The answered interrupt is gone: answering it again is a response to an
	// agent that is not interrupted.
	after := rsSnapshotJSON(t, a)
	calls = x.m.Calls()
	x.rec.reset()
	_, err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	assert.Contains(t, err.Error(), "interrupt_id=<"+in.ID+">")
	assert.Equal(t, string(after), string(rsSnapshotJSON(t, a)))
	assert.Equal(t, calls, x.m.Calls())
	assert.Empty(t, x.rec.list())
	assert.Equal(t, 1, x.runs.total())
}

// SPEC I7: responses sent to an agent that is not interrupted (never invoked,
// or after a completed run) are rejected and change nothing (Strands TS bug
// #4171 accepted them).
func TestResumeValidation_NotInterruptedRejected(t *testing.T) {
	ctx := context.Background()
	t.Run("fresh agent", func(t *testing.T) {
		rec := &recorder{}
		m := model.Scripted(model.TextTurn("hi"))
		a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{rec}})
		rec.reset()
		_, err := a.Invoke(ctx, agent.Resume(interrupt.Respond("v1:before_tools:x", "y")))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		assert.Contains(t, err.Error(), "interrupt_id=<v1:before_tools:x>")
		assert.Empty(t, agenttest.Messages(t, a))
		assert.Equal(t, 0, m.Calls())
		assert.Empty(t, rec.list())
		assert.False(t, agenttest.Interrupted(t, a))

		// The Strands wire form is rejected the same way.
		inp, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"abc","response":"y"}}]`))
		require.NoError(t, err)
		_, err = a.Invoke(ctx, inp)
		assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		assert.Equal(t, 0, m.Calls())
	})
	t.Run("after a completed run", func(t *testing.T) {
		rec := &recorder{}
		m := model.Scripted(model.TextTurn("hi"), model.TextTurn("again"))
		a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{rec}})
		res, err := a.Invoke(ctx, agent.Text("hello"))
		require.NoError(t, err)
		require.Equal(t, agent.StopEndTurn, res.StopReason)
		before := rsSnapshotJSON(t, a)
		rec.reset()
		_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond("some-id", "y")))
		require.Error(t, err)
		assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		assert.Equal(t, string(before), string(rsSnapshotJSON(t, a)))
		assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
		assert.Equal(t, 1, m.Calls())
		assert.Empty(t, rec.list())
	})
}

// SPEC I7 (last line): re-answering an already answered interrupt within the
// same interrupted state replaces the answer.
func TestResume_ReansweringUpdatesAnswer(t *testing.T) {
	ctx := context.Background()
	one, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var xSeen []string
	var mu sync.Mutex
	xHook := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		ans, err := ev.Interrupt("x", nil)
		if err != nil {
			return err
		}
		s, _ := ans.String()
		mu.Lock()
		xSeen = append(xSeen, s)
		mu.Unlock()
		return nil
	})
	yHook := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("y", nil)
		return err
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{xHook, yHook}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	xi, yi := res.Interrupts[0], res.Interrupts[1]
	require.Equal(t, "x", xi.Name)
	require.Equal(t, "y", yi.Name)

	res, err = a.Invoke(ctx, agent.Resume(respond(xi, "a")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "y is still unanswered")
	assert.Equal(t, []string{yi.ID}, ids(res.Interrupts))
	assert.Equal(t, []string{"a"}, xSeen)

	res, err = a.Invoke(ctx, agent.Resume(respond(xi, "b"), respond(yi, "c")))
	require.NoError(t, err, "re-answering x within the same interrupted state is allowed")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"a", "b"}, xSeen, "the x hook must see the new answer")
	assert.Equal(t, 1, runs.total())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC I9, A10: a consumer that stops reading the stream at the interrupt
// event leaves the agent interrupted: a later prompt is refused and the
// pending tool does not run without approval.
func TestStream_BreakAtInterruptEventKeepsAgentInterrupted(t *testing.T) {
	ctx := context.Background()
	del, runs := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"x"}}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval")}})

	var got *agent.InterruptEvent
	for ev, err := range a.Stream(ctx, agent.Text("delete x")) {
		require.NoError(t, err)
		if ie, ok := ev.(*agent.InterruptEvent); ok {
			got = ie
			break
		}
	}
	require.NotNil(t, got, "the stream must yield an InterruptEvent")
	assert.Equal(t, "myapp-approval", got.Interrupt.Name)
	assert.True(t, agenttest.Interrupted(t, a))

	_, err := a.Invoke(ctx, agent.Text("do it anyway"))
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	assert.Equal(t, 0, runs.total(), "the pending tool must not run without approval")
	assert.Equal(t, 1, m.Calls())

	res, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(got.Interrupt.ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.get("t1"))
	assert.Equal(t, 2, m.Calls())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
}

// SPEC I9, A10: by the time the consumer sees the InterruptEvent the saver
// has stored an interrupt save with the state activated and the pending tool
// cycle set (and not in the history, SPEC A3). The invocation's end, whose
// save holds the same state, waits in AfterInvocation until the consumer
// has looked, so only the interrupt's own save can be what it finds.
func TestStream_InterruptEventSentAfterSave(t *testing.T) {
	ctx := context.Background()
	saver := newSaver()
	del, _ := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"x"}}))
	looked := make(chan struct{})
	hold := hook.Func(func(context.Context, *agent.AfterInvocationEvent) error { <-looked; return nil })
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Session: saver.session(t),
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), hold}})

	var atEvent []rsSave
	var got *agent.InterruptEvent
	for ev, err := range a.Stream(ctx, agent.Text("delete x")) {
		require.NoError(t, err)
		if ie, ok := ev.(*agent.InterruptEvent); ok && got == nil {
			got = ie
			atEvent = saver.list()
			close(looked)
		}
	}
	require.NotNil(t, got)

	var snap *rsSave
	for i := range atEvent {
		if atEvent[i].durable && strings.Contains(string(atEvent[i].snap), `"activated":true`) {
			snap = &atEvent[i]
		}
	}
	require.NotNil(t, snap, "an interrupt save must precede the InterruptEvent; saves: %v", atEvent)
	var doc struct {
		Interrupts struct {
			Activated  bool `json:"activated"`
			Interrupts []struct {
				ID       string          `json:"id"`
				Response json.RawMessage `json:"response"`
			} `json:"interrupts"`
		} `json:"interrupts"`
		Pending *struct {
			Kind    string          `json:"kind"`
			Message json.RawMessage `json:"assistantMessage"`
		} `json:"pending"`
		Messages []model.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(snap.snap, &doc), string(snap.snap))
	assert.True(t, doc.Interrupts.Activated, "saved state must be activated")
	require.Len(t, doc.Interrupts.Interrupts, 1)
	assert.Equal(t, got.Interrupt.ID, doc.Interrupts.Interrupts[0].ID)
	assert.Nil(t, doc.Interrupts.Interrupts[0].Response, "saved unanswered")
	require.NotNil(t, doc.Pending, "saved snapshot must carry the pending tool cycle")
	assert.Equal(t, "tools", doc.Pending.Kind)
	var pm model.Message
	require.NoError(t, json.Unmarshal(doc.Pending.Message, &pm))
	require.Len(t, pm.ToolUses(), 1)
	assert.Equal(t, "t1", pm.ToolUses()[0].ToolUseID)
	assert.Equal(t, []string{"user:text"}, describeAll(doc.Messages), "pending cycle is not in the saved history")
}

func rsDescribeEvent(ev agent.Event) string {
	switch e := ev.(type) {
	case *agent.TextDeltaEvent:
		return "Text(" + e.Text + ")"
	case *agent.ToolUseEvent:
		return "ToolUse(" + e.ToolUse.ToolUseID + ")"
	case *agent.ToolResultEvent:
		return "ToolResult(" + e.Result.ToolUseID + ")"
	case *agent.MessageEvent:
		return "Message(" + describe(e.Message) + ")"
	case *agent.InterruptEvent:
		return "Interrupt(" + e.Interrupt.Name + ")"
	case *agent.ResultEvent:
		return "Result(" + string(e.Result.StopReason) + ")"
	}
	return "?"
}

// SPEC A10: a full stream of a two-tool run yields the model text, one
// ToolUseEvent per use, one ToolResultEvent per tool, the MessageEvents, and
// exactly one ResultEvent, last.
func TestStream_FullRunEventOrder(t *testing.T) {
	one, _ := countingTool("one")
	two, _ := countingTool("two")
	m := model.Scripted(
		model.Turn{Text: "let me", Calls: []model.ToolCall{model.Call("t1", "one", nil), model.Call("t2", "two", nil)}},
		model.TextTurn("done"),
	)
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one, two}})
	var got []string
	var results []*agent.ResultEvent
	for ev, err := range a.Stream(context.Background(), agent.Text("go")) {
		require.NoError(t, err)
		got = append(got, rsDescribeEvent(ev))
		if re, ok := ev.(*agent.ResultEvent); ok {
			results = append(results, re)
		}
	}
	require.Len(t, got, 11, "%v", got)
	// Concurrent tools may finish in either order.
	sort.Strings(got[4:6])
	assert.Equal(t, []string{
		"Message(user:text)",
		"Text(let me)",
		"ToolUse(t1)",
		"ToolUse(t2)",
		"ToolResult(t1)",
		"ToolResult(t2)",
		"Message(assistant:toolUse)",
		"Message(user:toolResult)",
		"Text(done)",
		"Message(assistant:text)",
		"Result(end_turn)",
	}, got)
	require.Len(t, results, 1, "exactly one ResultEvent")
	assert.Equal(t, "Result(end_turn)", got[len(got)-1], "the ResultEvent is last")
	assert.Equal(t, agent.StopEndTurn, results[0].Result.StopReason)
	assert.Equal(t, "done", results[0].Result.Message.Text())
}

// SPEC A10, I8: an interrupting stream yields one InterruptEvent per
// interrupt of the result, before the final ResultEvent.
func TestStream_InterruptEventsThenResult(t *testing.T) {
	one, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	mk := func(name string) hook.Provider {
		return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, err := ev.Interrupt(name, nil)
			return err
		})
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{mk("zeta"), mk("budget")}})
	var got []string
	var last agent.Event
	for ev, err := range a.Stream(context.Background(), agent.Text("go")) {
		require.NoError(t, err)
		got = append(got, rsDescribeEvent(ev))
		last = ev
	}
	re, ok := last.(*agent.ResultEvent)
	require.True(t, ok, "last event must be the result: %v", got)
	assert.Equal(t, agent.StopInterrupt, re.Result.StopReason)
	require.GreaterOrEqual(t, len(got), 3)
	assert.Equal(t, []string{"Interrupt(zeta)", "Interrupt(budget)", "Result(interrupt)"}, got[len(got)-3:])
	assert.Equal(t, []string{"zeta", "budget"}, []string{re.Result.Interrupts[0].Name, re.Result.Interrupts[1].Name})
	assert.Equal(t, 0, runs.total())
}

// SPEC A10: a stream whose invocation fails ends with the error as its last
// item, and no ResultEvent.
func TestStream_FailureEndsWithError(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted()})
	var lastErr error
	n, afterErr := 0, 0
	for ev, err := range a.Stream(context.Background(), agent.Text("go")) {
		n++
		if lastErr != nil {
			afterErr++
		}
		if err != nil {
			lastErr = err
			continue
		}
		_, isResult := ev.(*agent.ResultEvent)
		assert.False(t, isResult, "a failed invocation yields no ResultEvent")
	}
	require.Error(t, lastErr)
	assert.ErrorIs(t, lastErr, model.ErrScriptExhausted)
	assert.Equal(t, 0, afterErr, "the error must be the last item")
	assert.GreaterOrEqual(t, n, 1)
}

// SPEC S1 (spirit), A7: an interrupted agent's snapshot, carried as JSON to a
// fresh agent in a separate actor system, resumes there: the tool runs once,
// and the new model is only called after the tools.
func TestSnapshot_ResumeInFreshRuntime(t *testing.T) {
	ctx := context.Background()
	del, runs := countingTool("delete_files")
	call := model.Call("t1", "delete_files", map[string]any{"paths": []string{"a/b/c.txt"}})
	hooks := func() []hook.Provider { return []hook.Provider{approveHook("delete_files", "myapp-approval")} }

	mA := toolThenText("deleted", call)
	a, err := agent.New(context.Background(), agent.Config{Model: mA, Tools: []tool.Tool{del}, Hooks: hooks()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	res, err := a.Invoke(ctx, agent.Text("delete old files"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	snapA, err := a.Snapshot(ctx)
	require.NoError(t, err)
	raw, err := json.Marshal(snapA)
	require.NoError(t, err)
	require.NoError(t, a.Close(ctx))
	assert.Equal(t, 1, mA.Calls())
	assert.Equal(t, 0, runs.total())

	var snap agent.Snapshot
	require.NoError(t, json.Unmarshal(raw, &snap))

	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	mB := toolThenText("deleted", call)
	b := newAgent(t, agent.Config{Model: mB, Tools: []tool.Tool{del}, Hooks: hooks(), System: sys, Restore: &snap})
	assert.JSONEq(t, string(raw), string(rsSnapshotJSON(t, b)), "the restored agent holds the same session")
	require.True(t, agenttest.Interrupted(t, b), "the restored agent waits for answers")
	assert.Equal(t, []string{id}, ids(agenttest.Interrupts(t, b)))

	_, err = b.Invoke(ctx, agent.Text("just do it"))
	require.ErrorIs(t, err, interrupt.ErrResumeRequired, "the restored agent refuses a prompt")

	res, err = b.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "deleted", res.Message.Text())
	assert.Equal(t, 1, runs.get("t1"), "the tool ran exactly once across both agents")
	assert.Equal(t, 1, mB.Calls(), "the new model is only called after the tools")
	assert.False(t, agenttest.Interrupted(t, b))
	msgs := agenttest.Messages(t, b)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
}

// SPEC A7 (restore): a snapshot of another agent, or of a newer schema, is
// refused by New with ErrSnapshot.
func TestSnapshot_RestoreRejectsForeignOrNewerSnapshot(t *testing.T) {
	x := rsInterruptedApproveAgent(t)
	raw := rsSnapshotJSON(t, x.a)
	load := func() *agent.Snapshot {
		var s agent.Snapshot
		require.NoError(t, json.Unmarshal(raw, &s))
		return &s
	}

	other := load()
	other.AgentID = "someone-else"
	_, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(), Restore: other})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrSnapshot)

	_, err = agent.New(context.Background(), agent.Config{ID: "b", Model: model.Scripted(), Restore: load()})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrSnapshot)

	newer := load()
	newer.Version = 99
	_, err = agent.New(context.Background(), agent.Config{Model: model.Scripted(), Restore: newer})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrSnapshot)
	assert.Contains(t, err.Error(), "99")

	// The unchanged snapshot is accepted (so the rejections above are about
	// the changed fields).
	ok := newAgent(t, agent.Config{Model: model.Scripted(), Restore: load()})
	assert.True(t, agenttest.Interrupted(t, ok))
}

// SPEC A7 (restore), S5: a snapshot whose history holds a message that
// Config.Messages refuses (a role other than user or assistant, a block of
// no known kind), which a session would call damage, is refused by New
// with ErrSnapshot, naming the message, and no agent is built.
func TestSnapshot_RestoreRejectsAMessageConfigMessagesRejects(t *testing.T) {
	for name, raw := range map[string]string{
		"null message":  `[null]`,
		"role tool":     `[{"role":"user","content":[{"text":"hi"}]},{"role":"tool","content":[{"text":"x"}]}]`,
		"two-key block": `[{"role":"user","content":[{"text":"hi","image":{}}]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			var msgs []model.Message
			require.NoError(t, json.Unmarshal([]byte(raw), &msgs))
			_, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(), Messages: msgs})
			require.ErrorIs(t, err, agent.ErrConfig, "Config.Messages refuses it")

			a, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(),
				Restore: &agent.Snapshot{Version: agent.SnapshotVersion, AgentID: "default", Messages: msgs}})
			if a != nil {
				_ = a.Close(context.Background())
			}
			require.ErrorIs(t, err, agent.ErrSnapshot)
			assert.Contains(t, err.Error(), "message ")
			assert.Nil(t, a)
		})
	}
}

// rsAutoAnswer is an AfterInvocation hook that answers every interrupt of an
// interrupted result with answer, counting how often it did.
func rsAutoAnswer(answer string, n *int, seen *[]string) hook.Provider {
	return hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
		if ev.Result != nil && ev.Result.StopReason == agent.StopInterrupt {
			*n++
			var rs []interrupt.Response
			for _, in := range ev.Result.Interrupts {
				rs = append(rs, respond(in, answer))
				if seen != nil {
					*seen = append(*seen, in.Name)
				}
			}
			ev.Resume(agent.Resume(rs...))
		}
		return nil
	})
}

// SPEC A9: an AfterInvocation hook may answer the interrupts at once; one
// Invoke then returns end_turn.
func TestAfterInvocation_AutoAnswer(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	del, runs := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"x"}}))
	n := 0
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), rsAutoAnswer("y", &n, nil), rec}})
	rec.reset()
	res, err := a.Invoke(ctx, agent.Text("delete x"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "deleted", res.Message.Text())
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, runs.get("t1"))
	assert.False(t, agenttest.Interrupted(t, a))
	assert.Equal(t, 2, m.Calls())
	assert.Equal(t, 2, rec.count("AfterInvocation"), "AfterInvocation fires on the interrupt and on the final return")
	assert.Equal(t, 1, rec.count("MessageAdded(user:text)"), "the auto-resume adds no user message")
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC A9, I7: an auto-resume is validated like any input: a prompt while
// interrupted fails the Invoke with ErrResumeRequired (wrapped in
// ErrAutoResume: the invocation had run) and changes nothing.
func TestAfterInvocation_ResumeWithPromptRejected(t *testing.T) {
	ctx := context.Background()
	del, runs := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"x"}}))
	wrong := hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
		if ev.Result != nil && ev.Result.StopReason == agent.StopInterrupt {
			ev.Resume(agent.Text("wrong"))
		}
		return nil
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), wrong}})
	_, err := a.Invoke(ctx, agent.Text("delete x"))
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	assert.ErrorIs(t, err, agent.ErrAutoResume, "told apart from a refusal of Invoke's own input, which changes nothing")
	assert.ErrorIs(t, agent.ErrorFromWire(agent.ErrorToWire(err)), agent.ErrAutoResume, "in its protobuf form too")
	assert.Equal(t, 0, runs.total())
	assert.Equal(t, 1, m.Calls())
	assert.True(t, agenttest.Interrupted(t, a), "the interrupt state survives the rejected auto-resume")
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)))
	_, err = a.Invoke(ctx, agent.Text("again"))
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	assert.NotErrorIs(t, err, agent.ErrAutoResume)

	ins := agenttest.Interrupts(t, a)
	require.Len(t, ins, 1)
	res, err := a.Invoke(ctx, agent.Resume(respond(ins[0], "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
}

// SPEC A9, I5: a resumed run that interrupts again is auto-answered again,
// all within one Invoke.
func TestAfterInvocation_AutoAnswerChain(t *testing.T) {
	ctx := context.Background()
	one, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var answers []string
	h := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		r1, err := ev.Interrupt("first", nil)
		if err != nil {
			return err
		}
		s1, _ := r1.String()
		r2, err := ev.Interrupt("second", nil)
		if err != nil {
			return err
		}
		s2, _ := r2.String()
		answers = append(answers, s1+","+s2)
		return nil
	})
	n := 0
	var seen []string
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{h, rsAutoAnswer("ok", &n, &seen)}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, n, "two sequential interrupts, each auto-answered")
	assert.Equal(t, []string{"first", "second"}, seen)
	assert.Equal(t, []string{"ok,ok"}, answers)
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, 2, m.Calls())
	assert.False(t, agenttest.Interrupted(t, a))
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC A9, I8: an interrupted Result carries the pending assistant tool-use
// message, every unanswered interrupt in raise order, the invocation's model
// calls and summed usage, and String() is the interrupts' JSON.
func TestResult_InterruptedFields(t *testing.T) {
	ctx := context.Background()
	plain, plainRuns := countingTool("plain")
	guarded, guardedRuns := countingTool("guarded")
	u1 := model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	u2 := model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}
	u3 := model.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}
	m := model.Scripted(
		model.Turn{Text: "first a plain one", Calls: []model.ToolCall{model.Call("t0", "plain", nil)}, Usage: u1},
		model.Turn{Calls: []model.ToolCall{model.Call("t1", "guarded", map[string]any{"paths": []string{"p"}})}, Usage: u2},
		model.Turn{Text: "all done", Usage: u3},
	)
	// Raise order zeta, budget: the reverse of both name and id order.
	mk := func(name string) hook.Provider {
		return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			if ev.ToolUse.Name != "guarded" {
				return nil
			}
			_, err := ev.Interrupt(name, "ok "+name+"?")
			return err
		})
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{plain, guarded}, Hooks: []hook.Provider{mk("zeta"), mk("budget")}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.True(t, res.Interrupted())

	assert.Equal(t, model.RoleAssistant, res.Message.Role)
	uses := res.Message.ToolUses()
	require.Len(t, uses, 1, "Result.Message is the pending tool-use message")
	assert.Equal(t, "t1", uses[0].ToolUseID)

	require.Len(t, res.Interrupts, 2)
	assert.Equal(t, []string{
		interrupt.BeforeToolCallID("t1", "zeta"),
		interrupt.BeforeToolCallID("t1", "budget"),
	}, ids(res.Interrupts), "raise order")
	for _, in := range res.Interrupts {
		assert.False(t, in.Answered)
	}

	assert.Equal(t, 2, res.Metrics.ModelCalls)
	assert.Equal(t, 1, res.Metrics.ToolCalls)
	assert.Equal(t, u1.Add(u2), res.Usage)
	assert.Equal(t, 1, plainRuns.total())
	assert.Equal(t, 0, guardedRuns.total())

	want, err := json.Marshal(res.Interrupts)
	require.NoError(t, err)
	assert.Equal(t, string(want), res.String())
	assert.JSONEq(t, `[
		{"id":"`+interrupt.BeforeToolCallID("t1", "zeta")+`","name":"zeta","reason":"ok zeta?","source":"hook"},
		{"id":"`+interrupt.BeforeToolCallID("t1", "budget")+`","name":"budget","reason":"ok budget?","source":"hook"}
	]`, res.String())
	assert.False(t, strings.Contains(res.String(), "first a plain one"))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[1], "y"), respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.False(t, res.Interrupted())
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, "all done", res.String())
	assert.Equal(t, 1, res.Metrics.ModelCalls, "the resume calls the model once, after the tools")
	assert.Equal(t, u3, res.Usage)
	assert.Equal(t, 1, guardedRuns.total())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC A7: once a tool cycle finishes the interrupt state is cleared, so a
// later interrupt with an equal id is a fresh one and must be answered again.
func TestResume_LaterEqualIDIsFresh(t *testing.T) {
	ctx := context.Background()
	one, runs := countingTool("one")
	m := model.Scripted(
		model.ToolTurn(model.Call("t1", "one", nil)),
		model.ToolTurn(model.Call("t2", "one", nil)),
		model.TextTurn("done"),
	)
	var seen []string
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		ans, err := ev.Interrupt("gate", "go on?")
		if err != nil {
			return err
		}
		s, _ := ans.String()
		seen = append(seen, s)
		return nil
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{gate}})

	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	first := res.Interrupts[0]
	assert.Equal(t, interrupt.BeforeToolsID("gate"), first.ID)

	res, err = a.Invoke(ctx, agent.Resume(respond(first, "first")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "the second cycle's gate must ask again")
	require.Len(t, res.Interrupts, 1)
	second := res.Interrupts[0]
	assert.Equal(t, first.ID, second.ID, "same deterministic id")
	assert.False(t, second.Answered, "the new interrupt is fresh: unanswered")
	assert.Equal(t, 1, runs.get("t1"))
	assert.Equal(t, 0, runs.get("t2"))
	assert.Equal(t, []string{"first"}, seen)
	assert.Equal(t, 2, m.Calls())

	res, err = a.Invoke(ctx, agent.Resume(respond(second, "second")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"first", "second"}, seen)
	assert.Equal(t, 1, runs.get("t1"))
	assert.Equal(t, 1, runs.get("t2"))
	assert.Equal(t, 3, m.Calls())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
}
