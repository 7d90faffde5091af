package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// bhResults returns the tool results of the first tool-result message of msgs.
func bhResults(t *testing.T, msgs []model.Message) []model.ToolResult {
	t.Helper()
	for _, m := range msgs {
		if rs := m.ToolResults(); len(rs) > 0 {
			return rs
		}
	}
	require.FailNow(t, "no tool-result message in history", "%v", describeAll(msgs))
	return nil
}

// bhWait waits for ch or fails the test after a generous timeout.
func bhWait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out waiting for "+what)
	}
	var zero T
	return zero
}

// ---------------------------------------------------------------------------
// 1. Cancel from hooks (SPEC A8)

// SPEC A8: CancelTool("") gives the default error result, and AfterToolCall
// fires with it.
func TestCancelTool_DefaultMessageAndAfterToolCall(t *testing.T) {
	del, runs := countingTool("delete_files")
	m := toolThenText("ok", model.Call("t1", "delete_files", nil))
	var after []agent.AfterToolCallEvent
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { ev.CancelTool(""); return nil }),
		hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error { after = append(after, *ev); return nil }),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, runs.total(), "a cancelled tool does not run")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	tr := bhResults(t, msgs)[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Equal(t, "tool cancelled by user", tr.Text())
	require.Len(t, after, 1, "AfterToolCall fires once for the cancelled tool")
	assert.Equal(t, "tool cancelled by user", after[0].Result.Text())
	assert.Equal(t, model.ToolError, after[0].Result.Status)
	assert.Equal(t, "tool cancelled by user", after[0].Cancelled)
	assert.Equal(t, 2, m.Calls(), "the loop goes on after a cancelled tool")
}

// SPEC A8: a custom CancelTool message is used verbatim.
func TestCancelTool_CustomMessageVerbatim(t *testing.T) {
	del, _ := countingTool("delete_files")
	m := toolThenText("ok", model.Call("t1", "delete_files", nil))
	const msg = "  Nope: <not> \"today\" & never  "
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { ev.CancelTool(msg); return nil }),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, msg, bhResults(t, agenttest.Messages(t, a))[0].Text())
}

// SPEC A8: BeforeToolsEvent.Cancel("") gives every tool of the batch the
// default error result; no per-tool hooks fire, AfterTools fires, no tool
// runs, the loop continues and the history is valid.
func TestBeforeToolsCancel_DefaultMessageForWholeBatch(t *testing.T) {
	rec := &recorder{}
	t1, runs1 := countingTool("one")
	t2, runs2 := countingTool("two")
	m := toolThenText("after cancel", model.Call("t1", "one", nil), model.Call("t2", "two", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1, t2}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error { ev.Cancel(""); return nil }),
		rec,
	}})
	rec.reset()
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "after cancel", res.Message.Text())
	assert.Equal(t, 0, runs1.total()+runs2.total(), "no tool of the batch runs")
	assert.Equal(t, 0, rec.count("BeforeToolCall(t1)")+rec.count("BeforeToolCall(t2)"), "no BeforeToolCall")
	assert.Equal(t, 0, rec.count("AfterToolCall(t1)")+rec.count("AfterToolCall(t2)"), "no AfterToolCall")
	assert.Equal(t, 1, rec.count("AfterTools(t1,t2)"), "AfterTools fires with the cancel results")
	assert.Equal(t, 2, m.Calls(), "the model is called again after the cancelled batch")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	for _, tr := range bhResults(t, msgs) {
		assert.Equal(t, model.ToolError, tr.Status, tr.ToolUseID)
		assert.Equal(t, "Tool cancelled by hook", tr.Text(), tr.ToolUseID)
	}
}

// SPEC A8: a custom BeforeTools cancel message is used verbatim for every tool.
func TestBeforeToolsCancel_CustomMessageVerbatim(t *testing.T) {
	t1, _ := countingTool("one")
	m := toolThenText("x", model.Call("t1", "one", nil), model.Call("t2", "one", nil))
	const msg = "Batch refused <by policy>"
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error { ev.Cancel(msg); return nil }),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	rs := bhResults(t, agenttest.Messages(t, a))
	require.Len(t, rs, 2)
	assert.Equal(t, msg, rs[0].Text())
	assert.Equal(t, msg, rs[1].Text())
}

// SPEC A8, A4, A7: an interrupt beats a cancel set by another hook on the
// same event; after the resume, where the interrupting hook passes, the
// cancelling hook cancels again and the tool gets its error result.
func TestInterruptBeatsCancel_OnSameEvent(t *testing.T) {
	rec := &recorder{}
	del, runs := countingTool("delete_files")
	m := toolThenText("ok", model.Call("t1", "delete_files", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			ev.CancelTool("hook 1 says no")
			return nil
		}),
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, err := ev.Interrupt("gate", "may I?")
			return err
		}),
		rec,
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "the interrupt wins over the cancel")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.BeforeToolCallID("t1", "gate"), res.Interrupts[0].ID)
	assert.Equal(t, 0, rec.count("AfterToolCall(t1)"), "no cancel result recorded while interrupted")
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)), "the tool has no result yet")
	assert.True(t, agenttest.Interrupted(t, a))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "pass")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, runs.total())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	tr := bhResults(t, msgs)[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Equal(t, "hook 1 says no", tr.Text())
}

// SPEC A8, A5: on BeforeTools too, an interrupt beats a cancel set by
// another hook; after the resume the cancel applies to the whole batch.
func TestBeforeToolsInterruptBeatsCancel(t *testing.T) {
	rec := &recorder{}
	t1, runs := countingTool("one")
	m := toolThenText("ok", model.Call("t1", "one", nil), model.Call("t2", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error { ev.Cancel("batch refused"); return nil }),
		hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
			_, err := ev.Interrupt("batch-gate", nil)
			return err
		}),
		rec,
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, []string{interrupt.BeforeToolsID("batch-gate")}, ids(res.Interrupts))
	assert.Equal(t, 0, rec.count("AfterTools(t1,t2)"), "no cancel results while interrupted")
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "pass")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, runs.total())
	rs := bhResults(t, agenttest.Messages(t, a))
	require.Len(t, rs, 2)
	assert.Equal(t, "batch refused", rs[0].Text())
	assert.Equal(t, "batch refused", rs[1].Text())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// ---------------------------------------------------------------------------
// 2. Agent-level Cancel and caller cancellation

// SPEC A9, A3: Cancel while a tool runs ends the invocation with stop reason
// cancelled and no error; the history stays valid.
func TestAgentCancel_WhileToolRuns(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	blocker := tool.New("block", "blocks until cancelled", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "released without cancel", nil
		}
	})
	m := toolThenText("never", model.Call("t1", "block", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{blocker}})

	type outcome struct {
		res *agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Invoke(context.Background(), agent.Text("go"))
		done <- outcome{res, err}
	}()
	bhWait(t, started, "the tool to start")
	assert.True(t, cancelNow(t, a), "Cancel reports a running invocation")
	o := bhWait(t, done, "the cancelled invocation to return")
	require.NoError(t, o.err)
	require.NotNil(t, o.res)
	assert.Equal(t, agent.StopCancelled, o.res.StopReason)
	assert.Equal(t, 1, m.Calls(), "no model call after the cancel")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	// The run is over: an assistant message says so, and the history does
	// not end with a user message (which would be an incomplete run).
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	assert.Equal(t, agent.DefaultCancelledTurn, msgs[3].Text())
	assert.False(t, agenttest.Interrupted(t, a))
	assert.False(t, cancelNow(t, a), "nothing runs any more")
}

// bhBlockingModel streams nothing until its ctx ends, then ends with ctx's error.
type bhBlockingModel struct{ started chan struct{} }

func (m *bhBlockingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		close(m.started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// SPEC A9, A3: Cancel during a model stream aborts it; the invocation ends
// with stop reason cancelled, no error, and nothing half-written in the history.
func TestAgentCancel_DuringModelStream(t *testing.T) {
	m := &bhBlockingModel{started: make(chan struct{})}
	a := newAgent(t, agent.Config{Model: m})
	type outcome struct {
		res *agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Invoke(context.Background(), agent.Text("go"))
		done <- outcome{res, err}
	}()
	bhWait(t, m.started, "the model call to start")
	assert.True(t, cancelNow(t, a))
	o := bhWait(t, done, "the cancelled invocation to return")
	require.NoError(t, o.err)
	require.NotNil(t, o.res)
	assert.Equal(t, agent.StopCancelled, o.res.StopReason)
	assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)), "the prompt, then the cancel is said (SPEC A3)")
	assert.Equal(t, agent.DefaultCancelledTurn, o.res.Message.Text())
	assert.False(t, agenttest.Interrupted(t, a))
}

// SPEC A9: Cancel with nothing running returns false.
func TestAgentCancel_NothingRunning(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("x"))})
	assert.False(t, cancelNow(t, a))
	_, err := a.Invoke(context.Background(), agent.Text("hi"))
	require.NoError(t, err)
	assert.False(t, cancelNow(t, a), "the invocation is over")
}

// SPEC A9, A12: a caller ctx cancelled during the model call fails the
// invocation with context.Canceled (Invoke's contract); the agent is usable
// afterwards.
func TestCallerCtxCancelled_DuringModelCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var calls atomic.Int32
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return model.Turn{}, ctx.Err()
		}
		return model.TextTurn("fine"), nil
	})
	a := newAgent(t, agent.Config{Model: m})
	go func() {
		<-started
		cancel()
	}()
	res, err := a.Invoke(ctx, agent.Text("hi"))
	require.Error(t, err)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, agenttest.Interrupted(t, a))

	res, err = a.Invoke(context.Background(), agent.Text("again"))
	require.NoError(t, err, "the agent is usable after a cancelled caller ctx")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "fine", res.Message.Text())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// ---------------------------------------------------------------------------
// 3. Key/value state (SPEC A11)

// SPEC A11: a non-JSON value is an error at Set and changes nothing.
func TestState_SetNonJSONValueIsErrorAndChangesNothing(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted()})
	st := agenttest.State(t, a)
	require.NoError(t, st.Set("k", 1))
	for name, v := range map[string]any{"chan": make(chan int), "func": func() {}, "nested chan": map[string]any{"c": make(chan int)}} {
		err := st.Set("k", v)
		assert.Error(t, err, name)
		err = st.Set("fresh", v)
		assert.Error(t, err, name)
	}
	got, ok := st.Get("k")
	require.True(t, ok)
	assert.JSONEq(t, `1`, string(got), "the old value is kept")
	_, ok = st.Get("fresh")
	assert.False(t, ok, "a failed Set creates nothing")
	assert.Equal(t, []string{"k"}, st.Keys())
	assert.Error(t, st.Set("bad-raw", json.RawMessage(`{not json`)), "invalid raw JSON is rejected")
}

// SPEC A11: values are read as copies.
func TestState_GetReturnsCopy(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted()})
	st := agenttest.State(t, a)
	raw := json.RawMessage(`{"a":1}`)
	require.NoError(t, st.Set("obj", raw))
	raw[2] = 'X' // the caller's bytes are not kept either
	v1, ok := st.Get("obj")
	require.True(t, ok)
	assert.JSONEq(t, `{"a":1}`, string(v1))
	for i := range v1 {
		v1[i] = ' '
	}
	v2, _ := st.Get("obj")
	assert.JSONEq(t, `{"a":1}`, string(v2), "mutating the returned bytes does not change the store")
	all := st.All()
	all["obj"][0] = '['
	v3, _ := st.Get("obj")
	assert.JSONEq(t, `{"a":1}`, string(v3), "All returns copies too")
}

// SPEC A11: GetString, Keys (sorted), Delete.
func TestState_GetStringKeysDelete(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted()})
	st := agenttest.State(t, a)
	require.NoError(t, st.Set("b", "bee"))
	require.NoError(t, st.Set("a", 42))
	require.NoError(t, st.Set("c", map[string]any{"x": true}))
	s, ok := st.GetString("b")
	assert.True(t, ok)
	assert.Equal(t, "bee", s)
	_, ok = st.GetString("a")
	assert.False(t, ok, "a number is not a string")
	_, ok = st.GetString("missing")
	assert.False(t, ok)
	var n int
	found, err := st.GetInto("a", &n)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, 42, n)
	assert.Equal(t, []string{"a", "b", "c"}, st.Keys())
	st.Delete("b")
	assert.Equal(t, []string{"a", "c"}, st.Keys())
	_, ok = st.Get("b")
	assert.False(t, ok)
	st.Delete("never-there") // no-op
	assert.Equal(t, []string{"a", "c"}, st.Keys())
}

// SPEC A11: hooks see the state via ev.Agent.State(), tools via tc.State.
func TestState_VisibleToHooksAndTools(t *testing.T) {
	var toolSaw, hookSaw string
	reader := tool.New("reader", "reads state", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if tc.State == nil {
			return "", errors.New("tc.State is nil")
		}
		if v, ok := tc.State.Get("greeting"); ok {
			toolSaw = string(v)
		}
		if err := tc.State.Set("from-tool", "written by tool"); err != nil {
			return "", err
		}
		return "read", nil
	})
	m := toolThenText("done", model.Call("t1", "reader", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{reader}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			hookSaw, _ = ev.Agent.State().GetString("greeting")
			return ev.Agent.State().Set("from-hook", 7)
		}),
	}})
	require.NoError(t, a.SetState(context.Background(), "greeting", "hello"))
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, `"hello"`, toolSaw)
	assert.Equal(t, "hello", hookSaw)
	s, ok := agenttest.State(t, a).GetString("from-tool")
	assert.True(t, ok)
	assert.Equal(t, "written by tool", s)
	v, ok := agenttest.State(t, a).Get("from-hook")
	assert.True(t, ok)
	assert.JSONEq(t, `7`, string(v))
}

// bhTrustHook is the seed's ApprovalHook: skip the question once the user
// answered "t" (trust), otherwise interrupt and store the lower-cased answer.
func bhTrustHook(asked *atomic.Int32) hook.Provider {
	return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		if s, _ := ev.Agent.State().GetString("myapp-approval"); s == "t" {
			return nil
		}
		asked.Add(1)
		ans, err := ev.Interrupt("myapp-approval", map[string]any{"paths": ev.ToolUse.InputMap()["paths"]})
		if err != nil {
			return err
		}
		s, _ := ans.String()
		s = strings.ToLower(s)
		if s != "y" && s != "t" {
			ev.CancelTool("User denied permission to delete files")
		}
		return ev.Agent.State().Set("myapp-approval", s)
	})
}

// SPEC A11: the seed's trust pattern: answer "t" once and never be asked
// again, in the same agent and in a fresh agent restored from a snapshot
// that went through JSON (another process).
func TestState_TrustPattern_AskedOnceAcrossAgents(t *testing.T) {
	ctx := context.Background()
	var asked atomic.Int32
	call := model.Call("t1", "delete_files", map[string]any{"paths": []string{"a/b/c.txt"}})
	del, runs := countingTool("delete_files")
	a := newAgent(t, agent.Config{Model: toolThenText("deleted", call), Tools: []tool.Tool{del}, Hooks: []hook.Provider{bhTrustHook(&asked)}})

	res, err := a.Invoke(ctx, agent.Text("delete old files"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "v1:before_tool_call:t1:75a96266-45d2-581c-8a6f-043e472e1763", res.Interrupts[0].ID)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "T")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	s, _ := agenttest.State(t, a).GetString("myapp-approval")
	assert.Equal(t, "t", s, "the lower-cased answer is stored")
	askedAfterFirst := asked.Load()

	res, err = a.Invoke(ctx, agent.Text("delete more files"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason, "a trusted tool is not interrupted")
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, 2, runs.total())
	assert.Equal(t, askedAfterFirst, asked.Load(), "the user is not asked again")
	requireValidHistory(t, agenttest.Messages(t, a))

	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	wire, err := json.Marshal(snap)
	require.NoError(t, err)
	var restored agent.Snapshot
	require.NoError(t, json.Unmarshal(wire, &restored))

	del2, runs2 := countingTool("delete_files")
	m2 := toolThenText("deleted again", call)
	b := newAgent(t, agent.Config{Model: m2, Tools: []tool.Tool{del2}, Hooks: []hook.Provider{bhTrustHook(&asked)}, Restore: &restored})
	s, _ = agenttest.State(t, b).GetString("myapp-approval")
	assert.Equal(t, "t", s, "the trust survives the snapshot")
	res, err = b.Invoke(ctx, agent.Text("and again"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason, "still not asked in a fresh agent")
	assert.Equal(t, 1, runs2.total())
	assert.Equal(t, askedAfterFirst, asked.Load())
	requireValidHistory(t, agenttest.Messages(t, b))
}

// ---------------------------------------------------------------------------
// 4. Serial invocations and direct tool calls (SPEC A12)

// bhOverlap measures how many goroutines are inside a section at once.
type bhOverlap struct{ active, max atomic.Int32 }

func (o *bhOverlap) enter() (leave func()) {
	cur := o.active.Add(1)
	for {
		old := o.max.Load()
		if cur <= old || o.max.CompareAndSwap(old, cur) {
			break
		}
	}
	return func() { o.active.Add(-1) }
}

// SPEC A12: concurrent Invoke calls on one agent run one at a time.
func TestSerialInvocations_ConcurrentCallersNeverOverlap(t *testing.T) {
	const n = 8
	var toolOverlap, modelOverlap, workOverlap bhOverlap
	// asking counts the callers that have not yet called Invoke. The first
	// tool call holds its invocation until every caller has, so the others
	// ask while one invocation is under way: if they were not made to wait,
	// they would run beside it.
	var asking sync.WaitGroup
	asking.Add(n)
	var first sync.Once
	slow := tool.New("slow", "holds the first invocation", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		defer workOverlap.enter()()
		defer toolOverlap.enter()()
		first.Do(asking.Wait)
		runtime.Gosched() // let any invocation wrongly running now reach its model call or tool
		return "slow ok", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		defer workOverlap.enter()()
		defer modelOverlap.enter()()
		runtime.Gosched()
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call(fmt.Sprintf("t%d", len(req.Messages)), "slow", nil)), nil
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{slow}})

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	stops := make([]agent.StopReason, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			asking.Done()
			res, err := a.Invoke(context.Background(), agent.Text(fmt.Sprintf("prompt %d", i)))
			errs[i] = err
			if res != nil {
				stops[i] = res.StopReason
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "invocation %d", i)
		assert.Equal(t, agent.StopEndTurn, stops[i], "invocation %d", i)
	}
	assert.Equal(t, int32(1), toolOverlap.max.Load(), "tools of different invocations overlapped")
	assert.Equal(t, int32(1), modelOverlap.max.Load(), "model calls of different invocations overlapped")
	assert.Equal(t, int32(1), workOverlap.max.Load(), "a model call and a tool of different invocations overlapped")
	msgs := agenttest.Messages(t, a)
	require.Len(t, msgs, 4*n)
	requireValidHistory(t, msgs)
	for i := 0; i < n; i++ {
		assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"},
			describeAll(msgs[4*i:4*i+4]), "exchange %d", i)
	}
}

// SPEC A12: a direct tool call runs the tool and returns its result; nothing
// is added to the history.
func TestCallTool_RunsToolDirectly(t *testing.T) {
	var got []string
	plain := tool.New("plain", "echo", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		got = in.Paths
		return "plain:" + strings.Join(in.Paths, ","), nil
	})
	a := newAgent(t, agent.Config{Model: model.Scripted(), Tools: []tool.Tool{plain}})
	res, err := a.CallTool(context.Background(), "plain", map[string]any{"paths": []string{"a", "b"}})
	require.NoError(t, err)
	assert.Equal(t, model.ToolSuccess, res.Status)
	assert.Equal(t, "plain:a,b", res.Text())
	assert.Equal(t, []string{"a", "b"}, got)
	assert.Empty(t, agenttest.Messages(t, a), "a direct call adds nothing to the history")

	res, err = a.CallTool(context.Background(), "plain", json.RawMessage(`{"paths":["raw"]}`))
	require.NoError(t, err)
	assert.Equal(t, "plain:raw", res.Text())
}

// SPEC A12: direct tool calls cannot interrupt: a clear error.
func TestCallTool_InterruptIsError(t *testing.T) {
	asker := tool.New("asker", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if _, err := tc.Interrupt("q", "may I?"); err != nil {
			return "", err
		}
		return "answered?!", nil
	})
	a := newAgent(t, agent.Config{Model: model.Scripted(), Tools: []tool.Tool{asker}})
	_, err := a.CallTool(context.Background(), "asker", map[string]any{})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrDirectInterrupt)
	assert.False(t, agenttest.Interrupted(t, a))
	assert.Empty(t, agenttest.Interrupts(t, a))
}

// SPEC A12: CallTool on an unknown name is ErrUnknownTool.
func TestCallTool_UnknownTool(t *testing.T) {
	a := newAgent(t, agent.Config{Model: model.Scripted()})
	_, err := a.CallTool(context.Background(), "nosuch", nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrUnknownTool)
	assert.Contains(t, err.Error(), "nosuch")
}

// SPEC A12, I7: CallTool is refused while the agent is interrupted.
func TestCallTool_RefusedWhileInterrupted(t *testing.T) {
	del, _ := countingTool("delete_files")
	plain, plainRuns := countingTool("plain")
	m := toolThenText("ok", model.Call("t1", "delete_files", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del, plain}, Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval")}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	_, err = a.CallTool(context.Background(), "plain", map[string]any{})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrInterruptedDirect)
	assert.Equal(t, 0, plainRuns.total())
	assert.True(t, agenttest.Interrupted(t, a), "the refusal changes nothing")
}

// SPEC A12: Invoke after Close is ErrClosed; Close twice is fine.
func TestClose_ThenInvokeIsErrClosed(t *testing.T) {
	a, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(model.TextTurn("x"))})
	require.NoError(t, err)
	require.NoError(t, a.Close(context.Background()))
	require.NoError(t, a.Close(context.Background()), "closing twice is a no-op")
	_, err = a.Invoke(context.Background(), agent.Text("hi"))
	assert.ErrorIs(t, err, agent.ErrClosed)
	_, err = a.Snapshot(context.Background())
	assert.ErrorIs(t, err, agent.ErrClosed)
}

// ---------------------------------------------------------------------------
// 5. Failures inside the loop (SPEC A13)

// SPEC A13: an unknown tool gets the error result "Unknown tool: <name>";
// BeforeToolCall sees a nil Tool; the loop goes on.
func TestUnknownTool_ErrorResultAndLoopContinues(t *testing.T) {
	var beforeTools []tool.Tool
	var sawBefore int
	m := toolThenText("recovered", model.Call("t1", "nosuch", nil))
	known, _ := countingTool("known")
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{known}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			sawBefore++
			beforeTools = append(beforeTools, ev.Tool)
			return nil
		}),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "recovered", res.Message.Text())
	require.Equal(t, 1, sawBefore, "BeforeToolCall fires for an unknown tool")
	assert.Nil(t, beforeTools[0], "ev.Tool is nil for an unknown tool")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	tr := bhResults(t, msgs)[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Equal(t, "Unknown tool: nosuch", tr.Text())
	assert.Equal(t, 2, m.Calls())
}

// SPEC A13: a tool returning an error gets an error result with its text;
// the loop goes on.
func TestToolError_BecomesErrorResult(t *testing.T) {
	failing := tool.New("failing", "fails", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		return "", errors.New("disk full: /var")
	})
	m := toolThenText("sorry", model.Call("t1", "failing", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{failing}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "sorry", res.Message.Text())
	tr := bhResults(t, agenttest.Messages(t, a))[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Equal(t, "disk full: /var", tr.Text())
	assert.Equal(t, 2, m.Calls())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC A13: a panicking tool gets an error result, the agent survives.
func TestToolPanic_ErrorResultAgentSurvives(t *testing.T) {
	var panics atomic.Int32
	bad := tool.New("bad", "panics", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		panics.Add(1)
		panic("kaboom")
	})
	m := toolThenText("handled", model.Call("t1", "bad", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{bad}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	tr := bhResults(t, agenttest.Messages(t, a))[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Contains(t, tr.Text(), "panicked")
	assert.Contains(t, tr.Text(), "kaboom")

	res, err = a.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err, "a second invocation works")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, int32(2), panics.Load())
	requireValidHistory(t, agenttest.Messages(t, a))
	assert.Len(t, agenttest.Messages(t, a), 8)
}

// SPEC A13, I4: a panicking hook fails the invocation with a *hook.PanicError;
// the agent stays usable and its history valid.
func TestHookPanic_InvocationErrorAgentUsable(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var panicked atomic.Bool
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			if panicked.CompareAndSwap(false, true) {
				panic("hook bug")
			}
			return nil
		}),
	}})
	ctx := context.Background()
	_, err := a.Invoke(ctx, agent.Text("go"))
	require.Error(t, err)
	var pe *hook.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "hook bug", pe.Value)
	assert.Equal(t, 0, runs.total())
	assert.False(t, agenttest.Interrupted(t, a))
	requireValidHistory(t, agenttest.Messages(t, a))

	res, err := a.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err, "the agent is usable after a hook panic")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// ---------------------------------------------------------------------------
// 6. Raising interrupts (SPEC I3)

// SPEC I3: a hook that swallows the interrupt error still stops the cycle.
func TestSwallowedHookInterrupt_StillStops(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, _ = ev.Interrupt("swallowed", "ignored error")
			return nil
		}),
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.BeforeToolCallID("t1", "swallowed"), res.Interrupts[0].ID)
	assert.Equal(t, 0, runs.total(), "the tool does not run")
	assert.True(t, agenttest.Interrupted(t, a))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "ok")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
}

// SPEC I3: a tool that swallows the interrupt error still stops the cycle,
// and its result is not recorded.
func TestSwallowedToolInterrupt_StillStops(t *testing.T) {
	var runs atomic.Int32
	sneaky := tool.New("sneaky", "asks and ignores", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		runs.Add(1)
		ans, err := tc.Interrupt("q", nil)
		if err != nil {
			return "pretending all is fine", nil
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	m := toolThenText("done", model.Call("t1", "sneaky", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{sneaky}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.ToolCallID("t1", "q"), res.Interrupts[0].ID)
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)), "the swallowed result is not recorded")

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "yes")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "answer yes", bhResults(t, agenttest.Messages(t, a))[0].Text())
	assert.Equal(t, int32(2), runs.Load())
}

// SPEC I3: a reason that cannot be JSON-encoded is an error at the call; the
// invocation fails and the agent is not left interrupted.
func TestInterruptReasonNotJSON_FailsInvocation(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, err := ev.Interrupt("bad", map[string]any{"ch": make(chan int)})
			return err
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrReason)
	assert.NotErrorIs(t, err, interrupt.ErrInterrupted)
	assert.False(t, agenttest.Interrupted(t, a), "not left interrupted")
	assert.Empty(t, agenttest.Interrupts(t, a))
	assert.Equal(t, 0, runs.total())
	assert.Equal(t, 1, m.Calls())
	snap, err := a.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, snap.Interrupts.Len(), "nothing recorded for the bad reason")
	assert.Nil(t, snap.Pending)
}

// SPEC I3: a preemptive answer is returned at once and the tool runs
// without stopping.
func TestPreemptiveAnswer_ToolRunsWithoutStopping(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var got []string
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			ans, err := ev.Interrupt("pre", "auto", interrupt.Preemptive("y"))
			if err != nil {
				return err
			}
			s, _ := ans.String()
			got = append(got, s)
			return nil
		}),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, []string{"y"}, got)
	assert.Equal(t, 1, runs.total())
	assert.False(t, agenttest.Interrupted(t, a))
	requireValidHistory(t, agenttest.Messages(t, a))
}

// ---------------------------------------------------------------------------
// 7. Extension setters

// SPEC A1 (extension), I2: a BeforeModelCall interrupt stops before the
// model is called; the resume calls it.
func TestBeforeModelCallInterrupt_StopsBeforeModelAndResumes(t *testing.T) {
	m := model.Scripted(model.TextTurn("answer"))
	var answers []string
	a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeModelCallEvent) error {
			ans, err := ev.Interrupt("budget", map[string]any{"cost": 3})
			if err != nil {
				return err
			}
			s, _ := ans.String()
			answers = append(answers, s)
			return nil
		}),
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("hi"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, 0, m.Calls(), "the model is not called")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "v1:before_model_call:"+interrupt.NameUUID("budget"), res.Interrupts[0].ID)
	assert.Equal(t, interrupt.SourceHook, res.Interrupts[0].Source)
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)))
	assert.True(t, agenttest.Interrupted(t, a))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "spend")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "answer", res.Message.Text())
	assert.Equal(t, 1, m.Calls())
	assert.Equal(t, []string{"spend"}, answers)
	assert.False(t, agenttest.Interrupted(t, a))
	msgs := agenttest.Messages(t, a)
	assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(msgs))
	requireValidHistory(t, msgs)
}

// SPEC A1: AfterModelCallEvent.Retry discards the answer and calls the model again.
func TestAfterModelCallRetry_SecondAnswerUsed(t *testing.T) {
	m := model.Scripted(model.TextTurn("first"), model.TextTurn("second"))
	var seen []string
	a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterModelCallEvent) error {
			seen = append(seen, ev.Message.Text())
			if ev.Message.Text() == "first" {
				ev.Retry()
			}
			return nil
		}),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("hi"))
	require.NoError(t, err)
	assert.Equal(t, "second", res.Message.Text())
	assert.Equal(t, 2, m.Calls())
	assert.Equal(t, []string{"first", "second"}, seen)
	msgs := agenttest.Messages(t, a)
	require.Len(t, msgs, 2)
	assert.Equal(t, "second", msgs[1].Text(), "the discarded answer is not in the history")
}

// SPEC A1: AfterToolCallEvent.SetResult replaces the result in the history.
func TestAfterToolCallSetResult_ReplacesResult(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var original string
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
			original = ev.Result.Text()
			ev.SetResult(model.TextResult("some-other-id", "replaced <result>"))
			return nil
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, "one ok", original, "the hook sees the tool's own result")
	assert.Equal(t, 1, runs.total())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	tr := bhResults(t, msgs)[0]
	assert.Equal(t, "t1", tr.ToolUseID, "the result keeps the tool use id")
	assert.Equal(t, model.ToolSuccess, tr.Status)
	assert.Equal(t, "replaced <result>", tr.Text())
}

// SPEC A1: AfterToolCallEvent.Retry runs the tool again; one result is kept.
func TestAfterToolCallRetry_ToolRunsTwice(t *testing.T) {
	var runs atomic.Int32
	flaky := tool.New("flaky", "fails once", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if runs.Add(1) == 1 {
			return "", errors.New("transient")
		}
		return "worked", nil
	})
	var before atomic.Int32
	m := toolThenText("done", model.Call("t1", "flaky", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{flaky}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { before.Add(1); return nil }),
		hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
			if ev.Err != nil {
				ev.Retry()
			}
			return nil
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, int32(2), runs.Load(), "the tool ran twice")
	assert.Equal(t, int32(1), before.Load(), "BeforeToolCall does not fire again on retry")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	rs := bhResults(t, msgs)
	require.Len(t, rs, 1)
	assert.Equal(t, model.ToolSuccess, rs[0].Status)
	assert.Equal(t, "worked", rs[0].Text())
}

// SPEC A1: AfterToolsEvent.EndTurn stops after the results with the given text.
func TestAfterToolsEndTurn_StopsWithText(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("never", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterToolsEvent) error { ev.EndTurn("stop here"); return nil }),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "stop here", res.Message.Text())
	assert.Equal(t, 1, m.Calls(), "the model is not called after the tools")
	assert.Equal(t, 1, runs.total())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	last := msgs[len(msgs)-1]
	assert.Equal(t, model.RoleAssistant, last.Role)
	assert.Equal(t, "stop here", last.Text())
}

// ---------------------------------------------------------------------------
// 8. ParseInput (SPEC I6)

// SPEC I6: ParseInput reads the JSON forms Strands accepts.
func TestParseInput_Forms(t *testing.T) {
	in, err := agent.ParseInput([]byte(`"delete old files"`))
	require.NoError(t, err)
	assert.False(t, in.IsResume())
	require.Len(t, in.Prompt(), 1)
	assert.Equal(t, model.RoleUser, in.Prompt()[0].Role)
	assert.Equal(t, "delete old files", in.Prompt()[0].Text())

	in, err = agent.ParseInput([]byte(`[{"text":"one"},{"text":"two"}]`))
	require.NoError(t, err)
	require.Len(t, in.Prompt(), 1, "content blocks make one user message")
	assert.Equal(t, model.RoleUser, in.Prompt()[0].Role)
	require.Len(t, in.Prompt()[0].Content, 2)
	assert.Equal(t, "onetwo", in.Prompt()[0].Text())

	in, err = agent.ParseInput([]byte(`[{"role":"user","content":[{"text":"q"}]},{"role":"assistant","content":[{"text":"a"}]},{"role":"user","content":[{"text":"q2"}]}]`))
	require.NoError(t, err)
	require.Len(t, in.Prompt(), 3)
	assert.Equal(t, []string{"user:text", "assistant:text", "user:text"}, describeAll(in.Prompt()))
	assert.Equal(t, "q2", in.Prompt()[2].Text())
	assert.False(t, in.IsResume())

	for _, empty := range []string{``, `null`, `[]`, "  \n null \t"} {
		in, err = agent.ParseInput([]byte(empty))
		require.NoError(t, err, "%q", empty)
		assert.True(t, in.IsEmpty(), "%q", empty)
		assert.False(t, in.IsResume(), "%q", empty)
	}

	for _, bad := range []string{`42`, `true`, `{"text":"x"}`, `[1,2]`, `"unterminated`} {
		_, err = agent.ParseInput([]byte(bad))
		assert.ErrorIs(t, err, agent.ErrBadInput, "%q", bad)
	}

	_, err = agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"x","response":"y"}},{"text":"also a prompt"}]`))
	assert.ErrorIs(t, err, interrupt.ErrMixedInput)
}

// SPEC I6: the exact bytes a Strands TypeScript client sends parse as a
// resume, and an agent interrupted with that id finishes with it.
func TestParseInput_StrandsTSResumeBytes(t *testing.T) {
	// First line of interrupt/testdata/js_responses.jsonl (JSON.stringify).
	const wire = `[{"interruptResponse":{"interruptId":"v1:tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9","response":"y"}}]`
	in, err := agent.ParseInput([]byte(wire))
	require.NoError(t, err)
	require.True(t, in.IsResume())
	assert.Empty(t, in.Prompt())
	require.Len(t, in.Responses(), 1)
	r := in.Responses()[0]
	assert.Equal(t, "v1:tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9", r.ID)
	assert.Equal(t, `"y"`, string(r.Value.Raw()))
	back, err := interrupt.MarshalResponses(in.Responses())
	require.NoError(t, err)
	assert.Equal(t, wire, string(back), "written back byte for byte")

	asker := tool.New("asker", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("test_name", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "got " + s, nil
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "asker", nil)), Tools: []tool.Tool{asker}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Equal(t, []string{r.ID}, ids(res.Interrupts))
	res, err = a.Invoke(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "got y", bhResults(t, agenttest.Messages(t, a))[0].Text())
}

// ---------------------------------------------------------------------------
// 9. Config validation

type bhChanIn struct {
	C chan int `json:"c"`
}

// SPEC A1, A13 (no dedicated rule: the Config.Validate contract): agent.New
// rejects invalid configurations with ErrConfig, before anything starts.
func TestNew_ConfigErrors(t *testing.T) {
	ok := func(name string) tool.Tool { tt, _ := countingTool(name); return tt }
	noop := func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) { return "", nil }
	cases := map[string]agent.Config{
		"no model":       {},
		"duplicate tool": {Model: model.Scripted(), Tools: []tool.Tool{ok("same"), ok("same")}},
		"name with spaces": {Model: model.Scripted(), Tools: []tool.Tool{
			tool.New("delete files", "bad name", noop)}},
		"empty name": {Model: model.Scripted(), Tools: []tool.Tool{tool.New("", "no name", noop)}},
		"schema cannot be derived": {Model: model.Scripted(), Tools: []tool.Tool{
			tool.New("chan_tool", "chan input", func(ctx context.Context, tc *tool.Context, in bhChanIn) (string, error) { return "", nil })}},
		"nil tool":             {Model: model.Scripted(), Tools: []tool.Tool{nil}},
		"raw tool without fn":  {Model: model.Scripted(), Tools: []tool.Tool{&tool.Raw{ToolSpec: model.ToolSpec{Name: "raw", InputSchema: json.RawMessage(`{"type":"object"}`)}}}},
		"negative tool limit":  {Model: model.Scripted(), MaxToolRetries: -1},
		"snapshot of other id": {Model: model.Scripted(), ID: "me", Restore: &agent.Snapshot{Version: agent.SnapshotVersion, AgentID: "someone-else"}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := agent.New(context.Background(), cfg)
			if a != nil {
				_ = a.Close(context.Background())
			}
			require.Error(t, err)
			assert.Nil(t, a)
			if name == "snapshot of other id" {
				assert.ErrorIs(t, err, agent.ErrSnapshot)
				return
			}
			assert.ErrorIs(t, err, agent.ErrConfig)
		})
	}

	// A new user's first mistake says what to set.
	_, err := agent.New(context.Background(), agent.Config{})
	assert.ErrorContains(t, err, "no model: set Config.Model")

	a, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(), Tools: []tool.Tool{ok("a"), ok("b")}})
	require.NoError(t, err, "a valid config is accepted")
	require.NoError(t, a.Close(context.Background()))
}

// cancelNow cancels a's running invocation and reports whether one ran.
func cancelNow(t *testing.T, a *agent.Agent) bool {
	t.Helper()
	ran, err := a.Cancel(context.Background())
	require.NoError(t, err)
	return ran
}

// SPEC A1: every tool of a long tool list is found by name, by the model's
// calls and by direct calls alike, and an unknown name still is not (the
// lookup switches from a scan to an index above a handful of tools).
func TestTools_ManyToolsAreFoundByName(t *testing.T) {
	for _, n := range []int{1, 16, 17, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var tools []tool.Tool
			var counters []*counter
			var calls []model.ToolCall
			for i := range n {
				tl, c := countingTool(fmt.Sprintf("tool_%d", i))
				tools, counters = append(tools, tl), append(counters, c)
				calls = append(calls, model.Call(fmt.Sprintf("t%d", i), tl.Spec().Name, pathsIn{}))
			}
			a := newAgent(t, agent.Config{Model: toolThenText("ok", calls...), Tools: tools})
			res, err := a.Invoke(context.Background(), agent.Text("run them all"))
			require.NoError(t, err)
			assert.Equal(t, agent.StopEndTurn, res.StopReason)
			for i, c := range counters {
				assert.Equal(t, 1, c.get(fmt.Sprintf("t%d", i)), "tool_%d", i)
			}
			last := fmt.Sprintf("tool_%d", n-1)
			r, err := a.CallTool(context.Background(), last, pathsIn{})
			require.NoError(t, err)
			assert.Equal(t, last+" ok", r.Text())
			_, err = a.CallTool(context.Background(), fmt.Sprintf("tool_%d", n), pathsIn{})
			assert.ErrorIs(t, err, agent.ErrUnknownTool)
		})
	}
}

// SPEC I8, A11: the seed's trust answer given to one of two deletions lets
// the other run unasked; its question, raised in the pass before, is then
// moot and is neither listed nor streamed nor answerable: only what the
// agent still waits for is (here, a third tool that asks again).
func TestTrust_AnApprovalWhoseToolRanUnaskedIsNoLongerListed(t *testing.T) {
	ctx := context.Background()
	var asked atomic.Int32
	var deletes atomic.Int32
	del := tool.New("delete_files", "deletes", func(ctx context.Context, tc *tool.Context, in struct {
		Paths []string `json:"paths"`
	}) (string, error) {
		deletes.Add(1)
		return "deleted", nil
	})
	ask := tool.New("which_day", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("day", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	m := toolThenText("done",
		model.Call("d1", "delete_files", map[string]any{"paths": []string{"a"}}),
		model.Call("d2", "delete_files", map[string]any{"paths": []string{"b"}}),
		model.Call("q", "which_day", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del, ask}, Hooks: []hook.Provider{bhTrustHook(&asked)}})
	res, err := a.Invoke(ctx, agent.Text("clean up"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 3, "both approvals and the day")
	first, second := res.Interrupts[0], res.Interrupts[1]
	require.Equal(t, "myapp-approval", second.Name)

	var streamed []string
	for ev, err := range a.Stream(ctx, agent.Resume(interrupt.Respond(first.ID, "t"))) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *agent.InterruptEvent:
			streamed = append(streamed, e.Interrupt.Name)
		case *agent.ResultEvent:
			res = e.Result
		}
	}
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, int32(2), deletes.Load(), "both deletions ran")
	require.Len(t, res.Interrupts, 1, "only the day is asked: %v", res.Interrupts)
	assert.Equal(t, "day", res.Interrupts[0].Name)
	assert.Equal(t, []string{"day"}, streamed)

	// A "no" to the moot question would have been taken and ignored; it is
	// refused, and the run finishes with the day's answer.
	_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(second.ID, "n")))
	require.ErrorIs(t, err, interrupt.ErrUnknownID)
	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "monday")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, int32(2), deletes.Load())
}

// SPEC I8, A6: a model that gives two tool uses the same id, one asked
// about and one that runs: the cycle stops for the question, which is
// listed; the other use's result does not make it moot (the interrupt ids
// carry only the tool use id), so the agent never stops interrupted with
// nothing to answer.
func TestTools_AQuestionOfAToolUseWhoseIdAnotherUseSharesStaysListed(t *testing.T) {
	ctx := context.Background()
	plain := tool.New("plain", "runs", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return "ok", nil })
	guarded := tool.New("guarded", "asks first", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) { return "ok", nil })
	approval := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "guarded" {
			return nil
		}
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	m := toolThenText("done", model.Call("t1", "guarded", nil), model.Call("t1", "plain", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{plain, guarded}, Hooks: []hook.Provider{approval}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1, "the approval still waits")
	assert.Equal(t, "approval", res.Interrupts[0].Name)
}
