package agent_test

// Tests of two guarantees:
//
//   - SPEC I7: Resume() with no responses is a resume: rejected by an agent
//     that is not interrupted (like any resume), and by an interrupted one
//     (like any input without responses), changing nothing.
//   - SPEC A3: a fresh invocation that fails leaves the history as it was
//     before it, in memory and in the session, so a retry does not give
//     two user messages in a row; a failed resume keeps what was there
//     before the interrupt.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// errGpBoom is the failure the tests of this file inject.
var errGpBoom = errors.New("gp: injected failure")

// gpSessionID is the session of every store of this file (each test has a
// store of its own).
const gpSessionID = "gp"

// gpTrap fails one step once, after it is armed: the exchange before the
// failing call goes through, and so does the retry after it.
type gpTrap struct{ armed atomic.Bool }

func (t *gpTrap) arm() { t.armed.Store(true) }

// spring reports whether the step should fail now (once per arm).
func (t *gpTrap) spring() bool { return t.armed.CompareAndSwap(true, false) }

func (t *gpTrap) sprung() bool { return !t.armed.Load() }

// gpModel answers a user prompt with text, or (tools) with a call of tool
// "one" first and text once its result is in. When trap springs on a call
// that fail selects, the call fails with errGpBoom (or panics).
func gpModel(tools bool, trap *gpTrap, fail func(*model.Request) bool, panics bool) *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if fail != nil && fail(req) && trap.spring() {
			if panics {
				panic("gp: model panic")
			}
			return model.Turn{}, errGpBoom
		}
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, errors.New("gp: empty conversation")
		}
		if len(last.ToolResults()) > 0 || !tools {
			return model.TextTurn("answer"), nil
		}
		return model.ToolTurn(model.Call(fmt.Sprintf("t%d", len(req.Messages)), "one", nil)), nil
	})
}

// gpAfterPrompt selects a model call that answers a user prompt.
func gpAfterPrompt(req *model.Request) bool {
	last, ok := req.LastMessage()
	return ok && len(last.ToolResults()) == 0
}

// gpAfterTools selects a model call that follows a tool cycle.
func gpAfterTools(req *model.Request) bool {
	last, ok := req.LastMessage()
	return ok && len(last.ToolResults()) > 0
}

// gpFail is a hook callback that fails with errGpBoom when the trap
// springs on an event that when selects (nil: every event).
func gpFail[E any](trap *gpTrap, when func(*E) bool) hook.Provider {
	return hook.Func(func(_ context.Context, ev *E) error {
		if (when == nil || when(ev)) && trap.spring() {
			return errGpBoom
		}
		return nil
	})
}

// gpBadReason returns an error-free value that cannot be encoded as JSON.
func gpBadReason() any { return map[string]any{"ch": make(chan int)} }

// gpMessagesJSON is msgs as JSON (nil and empty alike), for comparing
// histories exactly.
func gpMessagesJSON(t *testing.T, msgs []model.Message) string {
	t.Helper()
	if len(msgs) == 0 {
		return "[]"
	}
	b, err := json.Marshal(msgs)
	require.NoError(t, err)
	return string(b)
}

func gpSameMessages(t *testing.T, want, got []model.Message, msgAndArgs ...any) {
	t.Helper()
	assert.Equal(t, gpMessagesJSON(t, want), gpMessagesJSON(t, got), msgAndArgs...)
}

// gpSnapshotJSON is the agent's snapshot as JSON.
func gpSnapshotJSON(t *testing.T, a *agent.Agent) string {
	t.Helper()
	b, err := json.Marshal(agenttest.Snapshot(t, a))
	require.NoError(t, err)
	return string(b)
}

// gpExport is the session's export as JSON, or "not found" when the
// session has no record: byte-identical exports mean nothing was saved.
func gpExport(t *testing.T, store persistence.Store) string {
	t.Helper()
	exp, err := export.Read(context.Background(), store, gpSessionID)
	if errors.Is(err, persistence.ErrNotFound) {
		return "not found"
	}
	require.NoError(t, err)
	b, err := json.Marshal(exp)
	require.NoError(t, err)
	return string(b)
}

// gpStored decodes the agent's messages as stored in the session (none
// when it has no record yet).
func gpStored(t *testing.T, store persistence.Store) []model.Message {
	t.Helper()
	exp, err := export.Read(context.Background(), store, gpSessionID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	for _, r := range exp.Records {
		if r.Kind != persistence.KindAgent || r.ID != agent.DefaultID {
			continue
		}
		out := make([]model.Message, len(r.Messages))
		for i, raw := range r.Messages {
			require.NoError(t, json.Unmarshal(raw, &out[i]), "stored message %d", i)
		}
		return out
	}
	require.FailNow(t, "the session has no record of the agent")
	return nil
}

// gpReload builds a second agent on the same session in an actor system of
// its own (as another process would) and returns it: what the session holds.
func gpReload(t *testing.T, sm *persistence.SessionManager) *agent.Agent {
	t.Helper()
	return newAgent(t, agent.Config{Model: model.Scripted(), Session: sm, System: actorstest.System(t)})
}

func gpSession(t *testing.T) (*memory.Store, *persistence.SessionManager) {
	t.Helper()
	store := memory.New()
	sm, err := persistence.NewSessionManager(store, gpSessionID)
	require.NoError(t, err)
	return store, sm
}

// gpRequireIdle checks that the agent waits for nothing: not interrupted,
// no cut-off work, an inactive interrupt state.
func gpRequireIdle(t *testing.T, a *agent.Agent) {
	t.Helper()
	st := agenttest.Status(t, a)
	assert.Equal(t, agent.ActivityIdle, st.State, "the agent waits for nothing")
	assert.Empty(t, st.Interrupts)
	snap := agenttest.Snapshot(t, a)
	assert.Nil(t, snap.Pending, "no pending work")
	if assert.NotNil(t, snap.Interrupts) {
		assert.False(t, snap.Interrupts.Activated(), "the interrupt state is not activated")
		assert.Zero(t, snap.Interrupts.Len(), "no interrupt is left over")
	}
}

// gpRequireOnePrompt checks the history a retry leaves: valid (SPEC A3),
// roles alternating (no two user messages in a row), and exactly one user
// message with the prompt text.
func gpRequireOnePrompt(t *testing.T, msgs []model.Message, prompt string) {
	t.Helper()
	requireValidHistory(t, msgs)
	for i := 1; i < len(msgs); i++ {
		assert.NotEqual(t, msgs[i-1].Role, msgs[i].Role, "messages %d and %d have the same role: %v", i-1, i, describeAll(msgs))
	}
	n := 0
	for _, m := range msgs {
		if m.Role == model.RoleUser && len(m.ToolResults()) == 0 && m.Text() == prompt {
			n++
		}
	}
	assert.Equal(t, 1, n, "exactly one user message %q: %v", prompt, describeAll(msgs))
}

// ---------------------------------------------------------------------------
// SPEC I7: Resume() with no responses

// SPEC I7: Resume() with no responses to an agent that is not interrupted
// (never invoked, or after a finished conversation) is rejected like any
// resume while not interrupted (interrupt.ErrNotInterrupted), before
// anything happens: the model is not called, no hook fires, the snapshot
// and the stored session are byte-identical.
func TestResume_EmptyWhileNotInterruptedIsRejectedAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	for _, finished := range []bool{false, true} {
		name := "fresh agent with an empty history"
		if finished {
			name = "agent with a finished conversation"
		}
		t.Run(name, func(t *testing.T) {
			store, sm := gpSession(t)
			rec := &recorder{}
			m := model.Scripted(model.TextTurn("hi"), model.TextTurn("again"))
			a := newAgent(t, agent.Config{Model: m, Session: sm, System: actorstest.System(t), Hooks: []hook.Provider{rec}})
			if finished {
				res, err := a.Invoke(ctx, agent.Text("hello"))
				require.NoError(t, err)
				require.Equal(t, agent.StopEndTurn, res.StopReason)
				require.Equal(t, []string{"user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
			}
			require.False(t, agenttest.Interrupted(t, a))
			snap, exported, calls := gpSnapshotJSON(t, a), gpExport(t, store), m.Calls()
			rec.reset()

			in := agent.Resume()
			require.True(t, in.IsResume(), "Resume() with no responses is a resume")
			require.True(t, in.IsEmpty())
			check := func(t *testing.T, err error) {
				t.Helper()
				require.Error(t, err)
				assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
				assert.NotErrorIs(t, err, agent.ErrEmptyInput, "not taken for the empty input")
				assert.Equal(t, calls, m.Calls(), "the model is not called")
				assert.Empty(t, rec.list(), "no hook fires, not even BeforeInvocation")
				assert.Equal(t, snap, gpSnapshotJSON(t, a), "the snapshot is unchanged")
				assert.Equal(t, exported, gpExport(t, store), "nothing is saved")
				assert.False(t, agenttest.Interrupted(t, a))
			}

			t.Run("Invoke", func(t *testing.T) {
				res, err := a.Invoke(ctx, in)
				assert.Nil(t, res)
				check(t, err)
			})
			t.Run("Stream", func(t *testing.T) {
				var evs []agent.Event
				var errs []error
				for ev, err := range a.Stream(ctx, in) {
					if err != nil {
						errs = append(errs, err)
						continue
					}
					evs = append(evs, ev)
				}
				assert.Empty(t, evs, "no event before the rejection")
				require.Len(t, errs, 1)
				check(t, errs[0])
			})
			t.Run("through the wire form", func(t *testing.T) {
				w, err := agent.InputToWire(in)
				require.NoError(t, err)
				back, err := agent.InputFromWire(w)
				require.NoError(t, err)
				require.True(t, back.IsResume(), "the wire form keeps the resume")
				_, err = a.Invoke(ctx, back)
				check(t, err)
			})

			// The agent still works.
			_, err := a.Invoke(ctx, agent.Text("next"))
			require.NoError(t, err)
			msgs := agenttest.Messages(t, a)
			assert.Equal(t, "user:text", describe(msgs[len(msgs)-2]))
			assert.Equal(t, "next", msgs[len(msgs)-2].Text())
		})
	}
}

// SPEC I7: Resume() with no responses to an agent whose run was cut off
// (pending work, no activated interrupt state) is a resume while not
// interrupted: rejected, changing nothing; the empty input carries on.
func TestResume_EmptyWhileIncompleteIsRejected(t *testing.T) {
	ctx := context.Background()
	one, runs := countingTool("one")
	m := gpModel(true, &gpTrap{}, nil, false)
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Restore: gpCutOff(t)})
	require.True(t, agenttest.Incomplete(t, a))
	snap := gpSnapshotJSON(t, a)

	_, err := a.Invoke(ctx, agent.Resume())
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	assert.Equal(t, snap, gpSnapshotJSON(t, a))
	assert.Zero(t, m.Calls())
	assert.Zero(t, runs.total())

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	gpRequireOnePrompt(t, agenttest.Messages(t, a), "go")
}

// SPEC I7: Resume() with no responses while interrupted is rejected like
// any input without responses (interrupt.ErrResumeRequired), changing
// nothing; the proper resume afterwards completes. So is the empty Input.
func TestResume_EmptyWhileInterruptedIsRejected(t *testing.T) {
	ctx := context.Background()
	store, sm := gpSession(t)
	rec := &recorder{}
	one, runs := countingTool("one")
	m := gpModel(true, &gpTrap{}, nil, false)
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Session: sm, System: actorstest.System(t),
		Hooks: []hook.Provider{approveHook("one", "approval"), rec}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	require.True(t, agenttest.Interrupted(t, a))

	snap, exported, calls := gpSnapshotJSON(t, a), gpExport(t, store), m.Calls()
	rec.reset()
	for name, input := range map[string]agent.Input{"Resume()": agent.Resume(), "the empty Input": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := a.Invoke(ctx, input)
			require.Error(t, err)
			assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
			assert.NotErrorIs(t, err, interrupt.ErrNotInterrupted)
			assert.Equal(t, calls, m.Calls(), "the model is not called")
			assert.Empty(t, rec.list(), "no hook fires")
			assert.Equal(t, snap, gpSnapshotJSON(t, a), "the snapshot is unchanged")
			assert.Equal(t, exported, gpExport(t, store), "nothing is saved")
			assert.Equal(t, []string{in.ID}, ids(agenttest.Interrupts(t, a)), "still interrupted by the same interrupt")
		})
	}

	res, err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total(), "the tool runs once")
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
	gpRequireIdle(t, a)
	gpSameMessages(t, agenttest.Messages(t, a), gpStored(t, store), "the session holds the finished run")
}

// SPEC I7: the empty Input (not a resume) is not affected: with a history
// and nothing pending it asks the model again (no message is added before
// the answer); with an empty history it is agent.ErrEmptyInput.
func TestInvoke_EmptyInputStillAsksTheModelAgain(t *testing.T) {
	ctx := context.Background()
	require.False(t, agent.Input{}.IsResume())
	require.True(t, agent.Input{}.IsEmpty())

	m := model.Scripted(model.TextTurn("hi"), model.TextTurn("again"))
	a := newAgent(t, agent.Config{Model: m})
	_, err := a.Invoke(ctx, agent.Input{})
	require.Error(t, err)
	assert.ErrorIs(t, err, agent.ErrEmptyInput)
	assert.Zero(t, m.Calls())

	_, err = a.Invoke(ctx, agent.Text("hello"))
	require.NoError(t, err)
	require.Equal(t, 1, m.Calls())

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "again", res.Message.Text())
	assert.Equal(t, 2, m.Calls(), "the model is asked again")
	msgs := agenttest.Messages(t, a)
	assert.Equal(t, []string{"user:text", "assistant:text", "assistant:text"}, describeAll(msgs),
		"only the new answer is added")
	assert.Equal(t, "again", msgs[2].Text())
}

// ---------------------------------------------------------------------------
// SPEC A3: a failed fresh invocation takes back what it appended

// gpFailCase is one way a fresh invocation fails.
type gpFailCase struct {
	name  string
	tools bool // the model calls a tool before it answers
	hooks func(trap *gpTrap) []hook.Provider
	// modelFail selects the model call that fails when the trap springs.
	modelFail func(*model.Request) bool
	panics    bool
	is        error  // the error matches it
	where     string // the error message contains it
}

func gpFailCases() []gpFailCase {
	isPrompt := func(ev *agent.MessageAddedEvent) bool {
		return ev.Message.Role == model.RoleUser && len(ev.Message.ToolResults()) == 0
	}
	badReason := func(ev interface {
		Interrupt(string, any, ...interrupt.RaiseOption) (interrupt.Value, error)
	}, trap *gpTrap) error {
		if !trap.spring() {
			return nil
		}
		_, err := ev.Interrupt("approval", gpBadReason())
		return err
	}
	return []gpFailCase{
		{name: "BeforeInvocation hook error", is: errGpBoom, where: "BeforeInvocation hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.BeforeInvocationEvent](trap, nil)}
			}},
		{name: "MessageAdded hook error on the prompt", is: errGpBoom, where: "MessageAdded hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail(trap, isPrompt)}
			}},
		{name: "BeforeModelCall hook error", is: errGpBoom, where: "BeforeModelCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.BeforeModelCallEvent](trap, nil)}
			}},
		{name: "model error", is: errGpBoom, where: "model call", modelFail: gpAfterPrompt},
		{name: "model panic", is: agent.ErrPanic, where: "gp: model panic", modelFail: gpAfterPrompt, panics: true},
		{name: "BeforeModelCall interrupt with a reason that is not JSON", is: interrupt.ErrReason, where: "BeforeModelCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{hook.Func(func(_ context.Context, ev *agent.BeforeModelCallEvent) error { return badReason(ev, trap) })}
			}},
		{name: "AfterModelCall hook error", is: errGpBoom, where: "AfterModelCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.AfterModelCallEvent](trap, nil)}
			}},
		{name: "MessageAdded hook error on the answer", is: errGpBoom, where: "MessageAdded hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail(trap, func(ev *agent.MessageAddedEvent) bool { return ev.Message.Role == model.RoleAssistant })}
			}},
		{name: "AfterInvocation hook error", is: errGpBoom, where: "AfterInvocation hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.AfterInvocationEvent](trap, nil)}
			}},
		{name: "BeforeTools hook error", tools: true, is: errGpBoom, where: "BeforeTools hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.BeforeToolsEvent](trap, nil)}
			}},
		{name: "BeforeTools interrupt with a reason that is not JSON", tools: true, is: interrupt.ErrReason, where: "BeforeTools hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error { return badReason(ev, trap) })}
			}},
		{name: "BeforeToolCall hook error", tools: true, is: errGpBoom, where: "BeforeToolCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.BeforeToolCallEvent](trap, nil)}
			}},
		{name: "BeforeToolCall interrupt with a reason that is not JSON", tools: true, is: interrupt.ErrReason, where: "BeforeToolCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { return badReason(ev, trap) })}
			}},
		{name: "AfterToolCall hook error", tools: true, is: errGpBoom, where: "AfterToolCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.AfterToolCallEvent](trap, nil)}
			}},
		{name: "AfterTools hook error", tools: true, is: errGpBoom, where: "AfterTools hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.AfterToolsEvent](trap, nil)}
			}},
		{name: "MessageAdded hook error on the tool results", tools: true, is: errGpBoom, where: "MessageAdded hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail(trap, func(ev *agent.MessageAddedEvent) bool { return len(ev.Message.ToolResults()) > 0 })}
			}},
		{name: "model error after a full tool cycle", tools: true, is: errGpBoom, where: "model call", modelFail: gpAfterTools},
		{name: "AfterModelCall hook error after a full tool cycle", tools: true, is: errGpBoom, where: "AfterModelCall hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail(trap, func(ev *agent.AfterModelCallEvent) bool {
					return ev.Err == nil && len(ev.Message.ToolUses()) == 0 && ev.Message.Text() == "answer"
				})}
			}},
		{name: "AfterInvocation hook error after a full tool cycle", tools: true, is: errGpBoom, where: "AfterInvocation hook",
			hooks: func(trap *gpTrap) []hook.Provider {
				return []hook.Provider{gpFail[agent.AfterInvocationEvent](trap, nil)}
			}},
	}
}

// gpFixture is an agent of a gpFailCase.
type gpFixture struct {
	a     *agent.Agent
	m     *model.ScriptedModel
	trap  *gpTrap
	store *memory.Store // nil without a session
	sm    *persistence.SessionManager
}

func gpNew(t *testing.T, c gpFailCase, withSession bool) gpFixture {
	t.Helper()
	trap := &gpTrap{}
	one, _ := countingTool("one")
	m := gpModel(c.tools, trap, c.modelFail, c.panics)
	cfg := agent.Config{Model: m, Tools: []tool.Tool{one}, System: actorstest.System(t)}
	if c.hooks != nil {
		cfg.Hooks = c.hooks(trap)
	}
	f := gpFixture{m: m, trap: trap}
	if withSession {
		f.store, f.sm = gpSession(t)
		cfg.Session = f.sm
	}
	f.a = newAgent(t, cfg)
	return f
}

// exchange is the history one successful invocation of c appends.
func (c gpFailCase) exchange() []string {
	if c.tools {
		return []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}
	}
	return []string{"user:text", "assistant:text"}
}

// gpCheckTakenBack checks, after a failed fresh invocation, that the
// agent's history and session are as they were before it and that it
// waits for nothing.
func gpCheckTakenBack(t *testing.T, f gpFixture, before, storedBefore []model.Message) {
	t.Helper()
	gpSameMessages(t, before, agenttest.Messages(t, f.a), "the history is as it was before the failed invocation")
	assert.Equal(t, len(before), agenttest.Status(t, f.a).Messages)
	gpRequireIdle(t, f.a)
	if f.store == nil {
		return
	}
	gpSameMessages(t, storedBefore, gpStored(t, f.store), "the session's messages are as they were before")
	r := gpReload(t, f.sm)
	gpSameMessages(t, before, agenttest.Messages(t, r), "an agent built on the session in a fresh runtime has the old history")
	gpRequireIdle(t, r)
}

// gpCheckRetry retries the prompt and checks that the history has it once.
func gpCheckRetry(t *testing.T, f gpFixture, c gpFailCase, before []model.Message, prompt string, stream bool) {
	t.Helper()
	var res *agent.Result
	var err error
	if stream {
		res, err = gpStreamResult(f.a.Stream(context.Background(), agent.Text(prompt)))
	} else {
		res, err = f.a.Invoke(context.Background(), agent.Text(prompt))
	}
	require.NoError(t, err, "the retry succeeds")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	msgs := agenttest.Messages(t, f.a)
	require.Len(t, msgs, len(before)+len(c.exchange()), "%v", describeAll(msgs))
	gpSameMessages(t, before, msgs[:len(before)], "the retry appends to the old history")
	assert.Equal(t, c.exchange(), describeAll(msgs[len(before):]))
	assert.Equal(t, prompt, msgs[len(before)].Text())
	gpRequireOnePrompt(t, msgs, prompt)
	gpRequireIdle(t, f.a)
	if f.store != nil {
		gpSameMessages(t, msgs, gpStored(t, f.store), "the session holds the retried exchange")
		gpSameMessages(t, msgs, agenttest.Messages(t, gpReload(t, f.sm)))
	}
}

// gpStreamResult drains a stream: its result, or the error that ends it.
// An error must be the stream's last item.
func gpStreamResult(seq iter.Seq2[agent.Event, error]) (*agent.Result, error) {
	var res *agent.Result
	var end error
	for ev, err := range seq {
		if end != nil {
			return nil, fmt.Errorf("an item after the stream's error %v", end)
		}
		if err != nil {
			end = err
			continue
		}
		if r, ok := ev.(*agent.ResultEvent); ok {
			if res != nil {
				return nil, errors.New("two results")
			}
			res = r.Result
		}
	}
	if end != nil {
		if res != nil {
			return nil, fmt.Errorf("a result and an error (%v)", end)
		}
		return nil, end
	}
	if res == nil {
		return nil, errors.New("the stream ended with neither a result nor an error")
	}
	return res, nil
}

// gpRunFailCase runs c: an optional finished exchange, the failing
// invocation (Invoke or Stream), the checks, then the retry.
func gpRunFailCase(t *testing.T, c gpFailCase, withHistory, withSession, stream bool) {
	ctx := context.Background()
	f := gpNew(t, c, withSession)
	if withHistory {
		res, err := f.a.Invoke(ctx, agent.Text("first"))
		require.NoError(t, err)
		require.Equal(t, agent.StopEndTurn, res.StopReason)
		require.Equal(t, c.exchange(), describeAll(agenttest.Messages(t, f.a)))
	}
	before := agenttest.Messages(t, f.a)
	var storedBefore []model.Message
	if f.store != nil {
		storedBefore = gpStored(t, f.store)
		gpSameMessages(t, before, storedBefore)
	}

	f.trap.arm()
	var res *agent.Result
	var err error
	if stream {
		res, err = gpStreamResult(f.a.Stream(ctx, agent.Text("go")))
	} else {
		res, err = f.a.Invoke(ctx, agent.Text("go"))
	}
	require.True(t, f.trap.sprung(), "the failure was injected")
	require.Error(t, err, "the failed invocation returns its error")
	assert.Nil(t, res)
	assert.ErrorIs(t, err, c.is)
	assert.Contains(t, err.Error(), c.where)
	gpCheckTakenBack(t, f, before, storedBefore)

	gpCheckRetry(t, f, c, before, "go", stream)
}

// SPEC A3: a fresh invocation that fails (a hook error on any event, a
// reason that cannot be encoded as JSON, a model error or panic, a failure
// after a full tool cycle) returns its error and takes back everything it
// appended (the prompt, and the tool-use and tool-result messages of its
// finished cycles), in memory and in the session; the agent is not
// interrupted; the retry with the same prompt succeeds and the history has
// that prompt once, with no two user messages in a row.
func TestInvoke_FailedFreshInvocationTakesItsMessagesBack(t *testing.T) {
	for _, c := range gpFailCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, withHistory := range []bool{false, true} {
				for _, withSession := range []bool{false, true} {
					name := fmt.Sprintf("history=%v/session=%v", withHistory, withSession)
					t.Run(name, func(t *testing.T) { gpRunFailCase(t, c, withHistory, withSession, false) })
				}
			}
		})
	}
}

// SPEC A3, A10: through Stream the failed fresh invocation ends the stream
// with its error (no result) and takes back what it appended, in memory
// and in the session; a streamed retry succeeds with the prompt once.
func TestStream_FailedFreshInvocationTakesItsMessagesBack(t *testing.T) {
	for _, c := range gpFailCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, withHistory := range []bool{false, true} {
				name := fmt.Sprintf("history=%v", withHistory)
				t.Run(name, func(t *testing.T) { gpRunFailCase(t, c, withHistory, true, true) })
			}
		})
	}
}

// gpStallModel fails its first call when the call's context ends (it waits
// for that), and answers text afterwards.
type gpStallModel struct {
	calls   atomic.Int32
	started chan struct{}
}

func (m *gpStallModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	if m.calls.Add(1) > 1 {
		return model.Scripted(model.TextTurn("answer")).Stream(ctx, req)
	}
	return func(yield func(model.StreamEvent, error) bool) {
		close(m.started)
		select {
		case <-ctx.Done():
			yield(nil, ctx.Err())
		case <-time.After(10 * time.Second): // a safety net: the test fails
			yield(nil, errors.New("gp: the stalled call was never stopped"))
		}
	}
}

// SPEC A3, A10: a caller who stops waiting for a fresh invocation
// (breaking out of its Stream, or ending Invoke's context) stops it, and
// the prompt it appended is taken back, in memory and in the session; the
// retry has the prompt once.
func TestInvoke_AbandonedFreshInvocationTakesItsPromptBack(t *testing.T) {
	for _, how := range []string{"Stream break", "Invoke context cancelled"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			store, sm := gpSession(t)
			m := &gpStallModel{started: make(chan struct{})}
			a := newAgent(t, agent.Config{Model: m, Session: sm, System: actorstest.System(t),
				Messages: []model.Message{model.UserText("first"), model.AssistantText("hi")}})
			before := agenttest.Messages(t, a)

			switch how {
			case "Stream break":
				sawPrompt := false
				for ev, err := range a.Stream(ctx, agent.Text("go")) {
					require.NoError(t, err)
					if me, ok := ev.(*agent.MessageEvent); ok && me.Message.Text() == "go" {
						sawPrompt = true
						break // Stream returns once the invocation stopped
					}
				}
				require.True(t, sawPrompt, "the prompt was appended before the stop")
				bhWait(t, m.started, "the model call")
			case "Invoke context cancelled":
				cctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() {
					_, err := a.Invoke(cctx, agent.Text("go"))
					done <- err
				}()
				bhWait(t, m.started, "the model call")
				cancel()
				assert.ErrorIs(t, bhWait(t, done, "Invoke"), context.Canceled)
				// Queued behind the stopped invocation: it has ended when
				// this returns.
				require.NoError(t, a.SetState(ctx, "after", true))
			}

			gpSameMessages(t, before, agenttest.Messages(t, a), "the prompt is taken back")
			gpRequireIdle(t, a)
			gpSameMessages(t, before, gpStored(t, store), "and in the session")

			res, err := a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, agent.StopEndTurn, res.StopReason)
			msgs := agenttest.Messages(t, a)
			assert.Equal(t, []string{"user:text", "assistant:text", "user:text", "assistant:text"}, describeAll(msgs))
			gpRequireOnePrompt(t, msgs, "go")
			gpSameMessages(t, msgs, gpStored(t, store))
		})
	}
}

// gpCutOff is the snapshot of an agent whose run was cut off in its tool
// cycle (the process stopped): the prompt in the history, the model's
// tool-use message pending, no result yet, no interrupt.
func gpCutOff(t *testing.T) *agent.Snapshot {
	t.Helper()
	asst := model.Message{Role: model.RoleAssistant, Content: []model.ContentBlock{
		model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "one", Input: json.RawMessage(`{}`)}),
	}}
	s := &agent.Snapshot{
		Version:    agent.SnapshotVersion,
		AgentID:    agent.DefaultID,
		Messages:   []model.Message{model.UserText("go")},
		State:      map[string]json.RawMessage{},
		Interrupts: interrupt.NewState(),
		Pending:    &agent.Pending{Kind: agent.PendingTools, Message: &asst, Completed: []model.ToolResult{}},
	}
	require.NoError(t, s.Validate(agent.DefaultID))
	return s
}

// SPEC A3, R6: carrying on a cut-off run (the empty Input) that fails takes
// back nothing that was there before it and does not lose the cut-off run:
// afterwards the agent still holds it (incomplete, or with its tool cycle
// in the history), so the next prompt is not a second user message in a
// row after the unanswered one.
func TestInvoke_FailedCarryOnKeepsTheCutOffRun(t *testing.T) {
	cases := []struct {
		name      string
		modelFail func(*model.Request) bool
		hooks     func(*gpTrap) []hook.Provider
	}{
		{name: "model error after the cycle", modelFail: gpAfterTools},
		{name: "AfterTools hook error", hooks: func(trap *gpTrap) []hook.Provider {
			return []hook.Provider{gpFail[agent.AfterToolsEvent](trap, nil)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			trap := &gpTrap{}
			one, runs := countingTool("one")
			m := gpModel(true, trap, c.modelFail, false)
			cfg := agent.Config{Model: m, Tools: []tool.Tool{one}, Restore: gpCutOff(t)}
			if c.hooks != nil {
				cfg.Hooks = c.hooks(trap)
			}
			a := newAgent(t, cfg)
			require.True(t, agenttest.Incomplete(t, a))

			trap.arm()
			_, err := a.Invoke(ctx, agent.Input{})
			require.True(t, trap.sprung())
			require.Error(t, err)
			assert.ErrorIs(t, err, errGpBoom)
			require.Equal(t, 1, runs.total(), "the cut-off tool ran in the failed carry-on")

			msgs := agenttest.Messages(t, a)
			requireValidHistory(t, msgs)
			require.NotEmpty(t, msgs)
			assert.Equal(t, "go", msgs[0].Text(), "the prompt from before the carry-on is kept")
			snap := agenttest.Snapshot(t, a)
			assert.False(t, snap.Pending == nil && describe(msgs[len(msgs)-1]) == "user:text",
				"the cut-off run is lost: the history ends with a user prompt no one answers and nothing is pending (%v)",
				describeAll(msgs))

			// The next prompt waits for the cut-off run, or follows its answer.
			_, err = a.Invoke(ctx, agent.Text("again"))
			if err != nil {
				require.ErrorIs(t, err, agent.ErrIncompleteRun)
				res, err := a.Invoke(ctx, agent.Input{})
				require.NoError(t, err)
				require.Equal(t, agent.StopEndTurn, res.StopReason)
				gpRequireOnePrompt(t, agenttest.Messages(t, a), "go")
				_, err = a.Invoke(ctx, agent.Text("again"))
				require.NoError(t, err)
			}
			// The finished cycle may stay in the history (ending with tool
			// results); what must not happen is a prompt right after the
			// unanswered prompt.
			msgs = agenttest.Messages(t, a)
			requireValidHistory(t, msgs)
			for i := 1; i < len(msgs); i++ {
				assert.False(t, describe(msgs[i-1]) == "user:text" && msgs[i].Role == model.RoleUser,
					"message %d follows the unanswered prompt %d: %v", i, i-1, describeAll(msgs))
			}
			assert.Equal(t, "go", msgs[0].Text())
			prompts := 0
			for _, m := range msgs {
				if describe(m) == "user:text" {
					prompts++
				}
			}
			assert.Equal(t, 2, prompts, "the two prompts, once each: %v", describeAll(msgs))
		})
	}
}

// ---------------------------------------------------------------------------
// SPEC A3: a failed resume

// gpInterrupted is an agent with a session interrupted on its tool's
// BeforeToolCall (approveHook: "y" runs the tool, anything else cancels
// it), with extra hooks.
type gpInterrupted struct {
	gpFixture
	runs   *counter
	in     interrupt.Interrupt
	before []model.Message
}

func gpNewInterrupted(t *testing.T, modelFail func(*model.Request) bool, hooks func(*gpTrap) []hook.Provider) gpInterrupted {
	t.Helper()
	trap := &gpTrap{}
	one, runs := countingTool("one")
	m := gpModel(true, trap, modelFail, false)
	store, sm := gpSession(t)
	hs := []hook.Provider{approveHook("one", "approval")}
	if hooks != nil {
		hs = append(hs, hooks(trap)...)
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Session: sm, System: actorstest.System(t), Hooks: hs})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	before := agenttest.Messages(t, a)
	require.Equal(t, []string{"user:text"}, describeAll(before))
	return gpInterrupted{gpFixture: gpFixture{a: a, m: m, trap: trap, store: store, sm: sm}, runs: runs, in: res.Interrupts[0], before: before}
}

// requireStillInterrupted checks that a failed resume kept the history from
// before the interrupt and the interrupt state (in memory and in the
// session): the agent waits for the same interrupt's answer.
func (x gpInterrupted) requireStillInterrupted(t *testing.T) {
	t.Helper()
	check := func(a *agent.Agent, where string) {
		gpSameMessages(t, x.before, agenttest.Messages(t, a), "%s: the history from before the interrupt is kept", where)
		snap := agenttest.Snapshot(t, a)
		if assert.NotNil(t, snap.Interrupts, where) {
			assert.True(t, snap.Interrupts.Activated(), "%s: the interrupt state stays activated", where)
			_, ok := snap.Interrupts.Get(x.in.ID)
			assert.True(t, ok, "%s: the interrupt is kept", where)
		}
		if assert.NotNil(t, snap.Pending, where) && assert.NotNil(t, snap.Pending.Message, where) {
			assert.Equal(t, "one", snap.Pending.Message.ToolUses()[0].Name, "%s: the pending tool cycle is kept", where)
		}
		st := agenttest.Status(t, a)
		assert.True(t, st.Interrupted() || st.Incomplete(), "%s: the agent waits to be resumed (%v)", where, st.State)
	}
	check(x.a, "in memory")
	check(gpReload(t, x.sm), "in the session")
}

// finish answers the interrupt again and checks that the run completes.
func (x gpInterrupted) finish(t *testing.T, in agent.Input, wantRuns int) {
	t.Helper()
	res, err := x.a.Invoke(context.Background(), in)
	require.NoError(t, err, "the interrupt can still be answered")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, wantRuns, x.runs.total())
	msgs := agenttest.Messages(t, x.a)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	assert.Equal(t, model.ToolSuccess, bhResults(t, msgs)[0].Status, "the tool ran on the new answer")
	gpRequireOnePrompt(t, msgs, "go")
	gpRequireIdle(t, x.a)
	gpSameMessages(t, msgs, gpStored(t, x.store))
}

// SPEC A3, I7: a resume that fails while its interrupt state is still
// activated (a hook error before the tools run again, a hook error in the
// resumed tool call) takes back nothing from before the interrupt: the
// prompt, the interrupt and the pending tool cycle are kept, in memory and
// in the session, and the interrupt can still be answered; the new answer
// is the one used.
func TestResume_FailedWhileActivatedKeepsTheInterrupt(t *testing.T) {
	cases := []struct {
		name  string
		hooks func(*gpTrap) []hook.Provider
		where string
	}{
		{"BeforeInvocation hook error", func(trap *gpTrap) []hook.Provider {
			return []hook.Provider{gpFail(trap, func(ev *agent.BeforeInvocationEvent) bool { return ev.Resuming })}
		}, "BeforeInvocation hook"},
		{"BeforeTools hook error", func(trap *gpTrap) []hook.Provider {
			return []hook.Provider{gpFail[agent.BeforeToolsEvent](trap, nil)}
		}, "BeforeTools hook"},
		{"BeforeToolCall hook error", func(trap *gpTrap) []hook.Provider {
			return []hook.Provider{gpFail[agent.BeforeToolCallEvent](trap, nil)}
		}, "BeforeToolCall hook"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, retry := range []string{"answer again", "carry on with the empty input"} {
				t.Run(retry, func(t *testing.T) {
					x := gpNewInterrupted(t, nil, c.hooks)
					x.trap.arm()
					answer := "n"
					if retry != "answer again" {
						answer = "y" // the saved answer is the one carried on
					}
					_, err := x.a.Invoke(context.Background(), agent.Resume(respond(x.in, answer)))
					require.True(t, x.trap.sprung())
					require.Error(t, err)
					assert.ErrorIs(t, err, errGpBoom)
					assert.Contains(t, err.Error(), c.where)
					assert.Zero(t, x.runs.total(), "the tool did not run")
					x.requireStillInterrupted(t)

					// Resume() with nothing to answer is still rejected.
					_, err = x.a.Invoke(context.Background(), agent.Resume())
					assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
					if retry == "answer again" {
						x.finish(t, agent.Resume(respond(x.in, "y")), 1)
					} else {
						x.finish(t, agent.Input{}, 1)
					}
				})
			}
		})
	}
}

// SPEC A3: a resume that fails after its tool cycle completed (the model
// call after it fails) keeps the history from before the interrupt and
// the finished cycle's messages, valid; the interrupt is over, the run is
// incomplete (its tool results wait for the model: a prompt is refused,
// it would make two user messages in a row), and the empty input carries
// on without running the tool again.
func TestResume_FailedAfterTheCycleKeepsTheHistory(t *testing.T) {
	x := gpNewInterrupted(t, gpAfterTools, nil)
	x.trap.arm()
	_, err := x.a.Invoke(context.Background(), agent.Resume(respond(x.in, "y")))
	require.True(t, x.trap.sprung())
	require.Error(t, err)
	assert.ErrorIs(t, err, errGpBoom)
	assert.Equal(t, 1, x.runs.total())

	for where, a := range map[string]*agent.Agent{"in memory": x.a, "in the session": gpReload(t, x.sm)} {
		msgs := agenttest.Messages(t, a)
		require.GreaterOrEqual(t, len(msgs), len(x.before), where)
		gpSameMessages(t, x.before, msgs[:len(x.before)], "%s: the history from before the interrupt is kept", where)
		requireValidHistory(t, msgs)
		assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult"}, describeAll(msgs),
			"%s: the finished cycle is kept", where)
		st := agenttest.Status(t, a)
		assert.Equal(t, agent.ActivityIncomplete, st.State, "%s: the tool results wait for the model", where)
		assert.Empty(t, st.Interrupts)
		assert.Nil(t, agenttest.Snapshot(t, a).Pending, "no pending work")
	}
	_, err = x.a.Invoke(context.Background(), agent.Resume(respond(x.in, "y")))
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the interrupt is over")
	_, err = x.a.Invoke(context.Background(), agent.Text("another"))
	assert.ErrorIs(t, err, agent.ErrIncompleteRun, "a prompt after the tool results")

	res, err := x.a.Invoke(context.Background(), agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, x.runs.total(), "the tool is not run again")
	msgs := agenttest.Messages(t, x.a)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	gpRequireOnePrompt(t, msgs, "go")
	gpSameMessages(t, msgs, gpStored(t, x.store))
}

// gpFlakyStore is a memory store whose saves fail while it is down.
type gpFlakyStore struct {
	*memory.Store
	down atomic.Bool
}

func (s *gpFlakyStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if s.down.Load() {
		return nil, errGpBoom
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC A3, S1: a fresh invocation that fails because its saves fail (the
// store is down from its start, or goes down in its middle, after the
// prompt was saved) leaves the history as it was; once the store is back,
// the retry of the prompt has it once, in memory and in the session.
func TestInvoke_FailedSaveTakesThePromptBack(t *testing.T) {
	for _, midway := range []bool{false, true} {
		name := "the store is down from the start"
		if midway {
			name = "the store goes down while the tool runs"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := &gpFlakyStore{Store: memory.New()}
			sm, err := persistence.NewSessionManager(store, gpSessionID)
			require.NoError(t, err)
			var armed atomic.Bool
			one := tool.New("one", "takes the store down when armed", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
				if armed.CompareAndSwap(true, false) {
					store.down.Store(true)
				}
				return "one ok", nil
			})
			a := newAgent(t, agent.Config{Model: gpModel(true, &gpTrap{}, nil, false), Tools: []tool.Tool{one},
				Session: sm, System: actorstest.System(t)})
			_, err = a.Invoke(ctx, agent.Text("first"))
			require.NoError(t, err)
			before := agenttest.Messages(t, a)

			if midway {
				armed.Store(true)
			} else {
				store.down.Store(true)
			}
			_, err = a.Invoke(ctx, agent.Text("go"))
			require.Error(t, err)
			assert.ErrorIs(t, err, errGpBoom)
			require.True(t, store.down.Load(), "the store was down")
			gpSameMessages(t, before, agenttest.Messages(t, a), "the history is as it was before the failed invocation")
			store.down.Store(false)

			_, err = a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err, "the retry succeeds once the store is back")
			msgs := agenttest.Messages(t, a)
			gpRequireOnePrompt(t, msgs, "go")
			gpSameMessages(t, msgs, gpStored(t, store.Store), "the session holds what the agent holds")
			gpRequireOnePrompt(t, agenttest.Messages(t, gpReload(t, sm)), "go")
		})
	}
}
