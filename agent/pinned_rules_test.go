package agent_test

// Each test here pins a behaviour of the SPEC (or of a documented limit)
// that a small change to the code could break without another test
// noticing.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// SPEC I4: the same name raised by two callbacks of BeforeTools is an
// error, raised before any further work: no tool, no extra model call, no
// interrupt state left behind.
func TestDuplicateInterruptNames_OnBeforeToolsFailTheInvocation(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	same := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		_, err := ev.Interrupt("same", nil)
		return err
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{same, same}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, interrupt.ErrDuplicateName, "result: %+v", res)
	assert.Equal(t, 1, m.Calls(), "no model call after the clash")
	assert.Equal(t, 0, runs.total())
	assert.False(t, agenttest.Interrupted(t, a))
}

// auditSession returns a session manager over a fresh memory store, and
// the store.
func auditSession(t *testing.T, id string) (*persistence.SessionManager, *memory.Store) {
	t.Helper()
	store := memory.New()
	sm, err := persistence.NewSessionManager(store, id)
	require.NoError(t, err)
	return sm, store
}

// storedMessages is how many messages the store holds for the agent, -1
// when it has no record of it. Hooks call it, off the test's goroutine.
func storedMessages(store *memory.Store, session, agentID string) int {
	rec, err := store.Load(context.Background(), persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: agentID})
	if err != nil {
		return -1
	}
	return len(rec.Messages)
}

// SPEC A1, A2, S1: MessageAdded fires after its message is appended to the
// history and saved: the callback sees it as the last message of its
// agent, and the session already holds it.
func TestMessageAdded_FiresAfterTheMessageIsAppendedAndSaved(t *testing.T) {
	sm, store := auditSession(t, "msg-added")
	t1, _ := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	type seen struct{ inHistory, stored int }
	var got []seen
	var inHistory []bool
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Session: sm, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.MessageAddedEvent) error {
			h := ev.Agent.Messages()
			got = append(got, seen{len(h), storedMessages(store, "msg-added", agent.DefaultID)})
			in := false
			for _, x := range h {
				in = in || assert.ObjectsAreEqual(x, ev.Message)
			}
			inHistory = append(inHistory, in)
			return nil
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	// user; the tool-use/result pair (appended together, SPEC A3), one
	// event each; the assistant's text.
	assert.Equal(t, []seen{{1, 1}, {3, 3}, {3, 3}, {4, 4}}, got)
	assert.Equal(t, []bool{true, true, true, true}, inHistory)
}

// SPEC A7 (with the BeforeModelCall extension of A1): once the model call
// an interrupt gated has passed, the interrupt state is cleared, so the
// next prompt is accepted and the same gate asks again, with a fresh
// interrupt of the same id.
func TestBeforeModelCallInterrupt_AnsweredGateIsClearedForTheNextPrompt(t *testing.T) {
	m := model.Scripted(model.TextTurn("first"), model.TextTurn("second"))
	var answers []string
	a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeModelCallEvent) error {
			ans, err := ev.Interrupt("budget", nil)
			if err != nil {
				return err
			}
			s, _ := ans.String()
			answers = append(answers, s)
			return nil
		}),
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("one"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	first := res.Interrupts[0]
	res, err = a.Invoke(ctx, agent.Resume(respond(first, "yes")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.False(t, agenttest.Interrupted(t, a))
	assert.Empty(t, agenttest.Snapshot(t, a).Interrupts.All(), "the interrupt state is cleared")

	res, err = a.Invoke(ctx, agent.Text("two"))
	require.NoError(t, err, "a prompt is accepted once the gated call has run")
	require.Equal(t, agent.StopInterrupt, res.StopReason, "the gate asks again: the earlier answer is gone")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, first.ID, res.Interrupts[0].ID)
	assert.False(t, res.Interrupts[0].Answered)
	assert.Equal(t, 1, m.Calls())
	assert.Equal(t, []string{"yes"}, answers)
}

// reopen builds, in a System of its own (another process, as far as the
// agent can tell), the agent of session id over store, after closing
// first: it loads what the store holds.
func reopen(t *testing.T, first *agent.Agent, store persistence.Store, id string, cfg agent.Config) *agent.Agent {
	t.Helper()
	require.NoError(t, first.Close(context.Background()))
	sm, err := persistence.NewSessionManager(store, id)
	require.NoError(t, err)
	cfg.Session, cfg.System = sm, actorstest.System(t)
	return newAgent(t, cfg)
}

// SPEC A9: AfterInvocation fires on every return, a failed invocation's
// included: its callbacks get the error and no result.
func TestAfterInvocation_FiresForAFailedInvocation(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	boom := assert.AnError
	var gotErr error
	var gotRes *agent.Result
	fired := 0
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { return boom }),
		hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
			fired++
			gotErr, gotRes = ev.Err, ev.Result
			return nil
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 0, runs.total())
	assert.Equal(t, 1, fired, "AfterInvocation fires once for the failed invocation")
	assert.ErrorIs(t, gotErr, boom)
	assert.Nil(t, gotRes)
}

// SPEC A9 (Config.MaxAutoResumes): AfterInvocation callbacks may resume
// at most MaxAutoResumes times within one Invoke; the next Resume fails
// the invocation with ErrTooManyResumes, and nothing more runs.
func TestAfterInvocation_AutoResumesAreBoundedByMaxAutoResumes(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	passes := 0
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, MaxAutoResumes: 2, Hooks: []hook.Provider{
		// A new question on every pass: never done.
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			passes++
			for i := 0; ; i++ {
				if _, err := ev.Interrupt(string(rune('a'+i)), nil); err != nil {
					return err
				}
			}
		}),
		hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
			if ev.Result == nil || ev.Result.StopReason != agent.StopInterrupt {
				return nil
			}
			var rs []interrupt.Response
			for _, in := range ev.Result.Interrupts {
				rs = append(rs, respond(in, "ok"))
			}
			ev.Resume(agent.Resume(rs...))
			return nil
		}),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, agent.ErrTooManyResumes)
	assert.Equal(t, 3, passes, "the first pass and two automatic resumes")
	assert.Equal(t, 0, runs.total())
}

// SPEC S1, A11: the end of every invocation is a save point: a change an
// AfterInvocation callback makes to the key/value state is in the session,
// so a new process finds it.
func TestAfterInvocation_StateChangeIsSavedWithTheInvocation(t *testing.T) {
	sm, store := auditSession(t, "after-inv-state")
	cfg := agent.Config{Model: model.Scripted(model.TextTurn("hi")), Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
			return ev.Agent.State().Set("greeted", true)
		}),
	}}
	first := cfg
	first.Session = sm
	a := newAgent(t, first)
	_, err := a.Invoke(context.Background(), agent.Text("hello"))
	require.NoError(t, err)

	b := reopen(t, a, store, "after-inv-state", agent.Config{Model: model.Scripted()})
	var greeted bool
	ok, err := agenttest.State(t, b).GetInto("greeted", &greeted)
	require.NoError(t, err)
	assert.True(t, ok && greeted, "the state the callback set is in the session")
	assert.Len(t, agenttest.Messages(t, b), 2)
}

// SPEC A11, S1: SetState is saved with the session before it returns.
func TestSetState_IsSavedInTheSession(t *testing.T) {
	sm, store := auditSession(t, "set-state")
	a := newAgent(t, agent.Config{Model: model.Scripted(), Session: sm})
	require.NoError(t, a.SetState(context.Background(), "trust", "t"))

	b := reopen(t, a, store, "set-state", agent.Config{Model: model.Scripted()})
	s, ok := agenttest.State(t, b).GetString("trust")
	assert.True(t, ok)
	assert.Equal(t, "t", s)
}

// SPEC S1: replacing the history (SetMessages) is an explicit rewrite of
// the stored history, not an append: a new process loads exactly the new
// history, also when it is as long as the old one or longer.
func TestSetMessages_RewritesTheStoredHistory(t *testing.T) {
	sm, store := auditSession(t, "set-messages")
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("old answer")), Session: sm})
	_, err := a.Invoke(context.Background(), agent.Text("old question"))
	require.NoError(t, err)

	replaced := []model.Message{
		model.UserText("new 1"), model.AssistantText("new 2"),
		model.UserText("new 3"), model.AssistantText("new 4"),
	}
	require.NoError(t, a.SetMessages(context.Background(), replaced))
	assert.Equal(t, replaced, agenttest.Messages(t, a))

	b := reopen(t, a, store, "set-messages", agent.Config{Model: model.Scripted()})
	assert.Equal(t, replaced, agenttest.Messages(t, b))
}

// SPEC A9, I7: an AfterInvocation Resume is validated like any input: on
// an invocation that ended without interrupts, interrupt responses are
// rejected with ErrNotInterrupted (they are not silently dropped), and a
// prompt runs the agent again at once, in the same Invoke.
func TestAfterInvocation_ResumeAfterAnUninterruptedEndIsValidatedAndRun(t *testing.T) {
	t.Run("responses are rejected", func(t *testing.T) {
		m := model.Scripted(model.TextTurn("hi"))
		a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{
			hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
				if ev.Err == nil {
					ev.Resume(agent.Resume(interrupt.Respond("v1:before_tools:nope", "y")))
				}
				return nil
			}),
		}})
		_, err := a.Invoke(context.Background(), agent.Text("hello"))
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		assert.Equal(t, 1, m.Calls())
	})
	t.Run("a prompt runs again", func(t *testing.T) {
		m := model.Scripted(model.TextTurn("first"), model.TextTurn("second"))
		n := 0
		a := newAgent(t, agent.Config{Model: m, Hooks: []hook.Provider{
			hook.Func(func(_ context.Context, ev *agent.AfterInvocationEvent) error {
				if n++; n == 1 {
					ev.Resume(agent.Text("and more"))
				}
				return nil
			}),
		}})
		res, err := a.Invoke(context.Background(), agent.Text("hello"))
		require.NoError(t, err)
		assert.Equal(t, "second", res.Message.Text())
		assert.Equal(t, 2, m.Calls())
		assert.Equal(t, []string{"user:text", "assistant:text", "user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
	})
}

// Agent.Cancel (stop reason cancelled, SPEC A9; Strands' "Tool execution
// cancelled", reference §3.11): an invocation cancelled after its model
// call and before its tools runs none of them: each gets an error result
// with DefaultCancelled, the history stays valid, and the model is not
// called again.
func TestAgentCancel_BeforeToolsGivesEveryToolACancelledResult(t *testing.T) {
	t1, runs := countingTool("one")
	t2, _ := countingTool("two")
	m := toolThenText("never", model.Call("t1", "one", nil), model.Call("t2", "two", nil))
	var a *agent.Agent
	a = newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1, t2}, Hooks: []hook.Provider{
		hook.Func(func(ctx context.Context, ev *agent.AfterModelCallEvent) error {
			_, err := a.Cancel(context.WithoutCancel(ctx))
			return err
		}),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopCancelled, res.StopReason)
	assert.Equal(t, 0, runs.total(), "no tool runs after the cancel")
	assert.Equal(t, 1, m.Calls())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	require.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	for _, r := range msgs[2].ToolResults() {
		assert.Equal(t, model.ToolError, r.Status)
		require.Len(t, r.Content, 1)
		require.NotNil(t, r.Content[0].Text)
		assert.Equal(t, agent.DefaultCancelled, *r.Content[0].Text)
	}
}

// Config.MaxToolRetries (SPEC A1, AfterToolCallEvent.Retry): a callback
// that always asks for a retry gets MaxToolRetries of them, then the last
// result is recorded and the loop goes on.
func TestAfterToolCallRetry_IsBoundedByMaxToolRetries(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, MaxToolRetries: 2, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error { ev.Retry(); return nil }),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 3, runs.total(), "the first run and two retries")
	requireValidHistory(t, agenttest.Messages(t, a))
}

// Config.MaxModelRetries (SPEC A1, AfterModelCallEvent.Retry): a callback
// that always asks for a retry gets MaxModelRetries of them.
func TestAfterModelCallRetry_IsBoundedByMaxModelRetries(t *testing.T) {
	m := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("again"), nil })
	a := newAgent(t, agent.Config{Model: m, MaxModelRetries: 2, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.AfterModelCallEvent) error { ev.Retry(); return nil }),
	}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 3, m.Calls(), "the first call and two retries")
}

// SPEC A12: an agent processes its work one at a time, in the order it was
// asked for: work queued behind a running invocation runs first come,
// first served (SetState "runs after the invocations asked for before
// it").
func TestSerialInvocations_QueuedWorkRunsInTheOrderItWasAskedFor(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	hold := tool.New("hold", "holds the first invocation", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		close(started)
		<-release
		return "held", nil
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "hold", nil)), Tools: []tool.Tool{hold}})
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		first <- err
	}()
	<-started
	queued := make(chan error, 3)
	for i, v := range []string{"b", "c", "d"} {
		go func() { queued <- a.SetState(ctx, "last", v) }()
		for agenttest.Status(t, a).Queued < i+1 { // answered at once: no sleep
		}
	}
	close(release)
	require.NoError(t, <-first)
	for range 3 {
		require.NoError(t, <-queued)
	}
	s, _ := agenttest.State(t, a).GetString("last")
	assert.Equal(t, "d", s, "the last asked for runs last")
}

// SPEC A6 (sequential executor), A4: a BeforeToolCall interrupt stops the
// sequential executor at that tool: later tools do not start, and their
// BeforeToolCall hooks do not fire, until the resume.
func TestSequentialExecutor_StopsAtAHookInterrupt(t *testing.T) {
	rec := &recorder{}
	a1, runsA := countingTool("A")
	b1, runsB := countingTool("B")
	m := toolThenText("done", model.Call("t1", "A", nil), model.Call("t2", "B", nil))
	a := newAgent(t, agent.Config{Model: m, Executor: tool.Sequential{}, Tools: []tool.Tool{a1, b1},
		Hooks: []hook.Provider{approveHook("A", "approve"), rec}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, 0, runsA.total())
	assert.Equal(t, 0, runsB.total(), "later tools do not start")
	assert.Equal(t, 0, rec.count("BeforeToolCall(t2)"))

	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runsA.total())
	assert.Equal(t, 1, runsB.total())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC S6: a tool's IdempotencyKey is the same on every re-run of its tool
// use: after an AfterToolCall retry, and after an interrupt it raised was
// answered.
func TestIdempotencyKey_IsTheSameOnEveryRerun(t *testing.T) {
	sm, _ := auditSession(t, "idem")
	var mu sync.Mutex
	var keys []string
	pay := tool.New("pay", "pays once", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		mu.Lock()
		keys = append(keys, tc.IdempotencyKey())
		mu.Unlock()
		if _, err := tc.Interrupt("confirm", nil); err != nil {
			return "", err
		}
		return "paid", nil
	})
	retried := false
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "pay", nil)), Tools: []tool.Tool{pay}, Session: sm,
		Hooks: []hook.Provider{hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
			if !retried {
				retried = true
				ev.Retry()
			}
			return nil
		})}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, 3, "interrupted, answered, retried")
	for _, k := range keys {
		assert.Equal(t, "idem/"+agent.DefaultID+"/t1", k)
	}
}

// SPEC S6: an at-most-once tool has its start saved durably before each
// run, an AfterToolCall retry included: cut off by a crash during the
// retry, the recovery interrupt's reason gives the retry's start time,
// not the first run's.
func TestAtMostOnce_RetryHasItsOwnStartMark(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	var mu sync.Mutex
	runs := 0
	var firstEnded time.Time
	var crash *export.Session
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		runs++
		if runs == 1 {
			firstEnded = time.Now().UTC().Round(0)
			return "deleted", nil
		}
		exp, err := export.Read(ctx, store, "retry-crash") // a crash during the retry
		crash = exp
		return "deleted", err
	}, tool.AtMostOnce())
	retried := false
	build := func(st persistence.Store) *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "retry-crash")
		require.NoError(t, err)
		return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
			Tools: []tool.Tool{del}, Session: sm, System: actorstest.System(t),
			Hooks: []hook.Provider{hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
				if !retried {
					retried = true
					ev.Retry()
				}
				return nil
			})}})
	}
	_, err := build(store).Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, 2, runs)
	require.NotNil(t, crash)

	after := memory.New()
	require.NoError(t, export.Write(ctx, after, crash))
	a := build(after)
	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	var reason agent.RecoveryReason
	require.NoError(t, res.Interrupts[0].DecodeReason(&reason))
	// Not before: a coarse clock (Windows') may read the same at both.
	assert.False(t, reason.StartedAt.Before(firstEnded), "the start of the run cut off (%v), not of the first run (ended %v)", reason.StartedAt, firstEnded)
	assert.Equal(t, 2, runs, "not run again without an answer")
}

// SPEC A3, I9: a prompt whose tool cycle stops for an interrupt and whose
// AfterTools callback then fails is a failed fresh invocation: the caller
// gets the hook's error, the prompt is taken back (in the session too),
// and the interrupts nobody was told of are void, so the next prompt is
// accepted and asks again.
func TestFreshInvocationFailingInAfterToolsAfterAnInterruptTakesItAllBack(t *testing.T) {
	sm, store := auditSession(t, "a3-after-tools")
	t1, runs := countingTool("one")
	t2, _ := countingTool("two")
	m := toolThenText("done", model.Call("t1", "one", nil), model.Call("t2", "two", nil))
	failed := false
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1, t2}, Session: sm, Hooks: []hook.Provider{
		approveHook("one", "approve"),
		hook.Func(func(_ context.Context, ev *agent.AfterToolsEvent) error {
			if failed {
				return nil
			}
			failed = true
			return assert.AnError
		}),
	}})
	var streamed []agent.Event
	for ev, err := range a.Stream(context.Background(), agent.Text("go")) {
		if err != nil {
			require.ErrorIs(t, err, assert.AnError)
			break
		}
		streamed = append(streamed, ev)
	}
	for _, ev := range streamed {
		_, isInterrupt := ev.(*agent.InterruptEvent)
		assert.False(t, isInterrupt, "no interrupt event for a void interrupt")
	}
	assert.Equal(t, 0, runs.total())
	assert.Empty(t, agenttest.Messages(t, a), "the prompt is taken back")
	assert.Equal(t, 0, storedMessages(store, "a3-after-tools", agent.DefaultID), "in the session too")
	assert.False(t, agenttest.Interrupted(t, a))

	res, err := a.Invoke(context.Background(), agent.Text("go again"))
	require.NoError(t, err, "a retry is a prompt, not a resume")
	assert.Equal(t, agent.StopInterrupt, res.StopReason, "the retry asks again")
	require.Len(t, res.Interrupts, 1)

	// A new process sees the same: one interrupt, of the retry.
	b := reopen(t, a, store, "a3-after-tools", agent.Config{Model: m, Tools: []tool.Tool{t1, t2}})
	st, err := b.Status(context.Background())
	require.NoError(t, err)
	require.Len(t, st.Interrupts, 1)
	assert.Equal(t, res.Interrupts[0].ID, st.Interrupts[0].ID)
}

// SPEC A3, I7: SetMessages is refused while the agent is interrupted;
// with DropUnfinished it drops the interrupted invocation in the same
// save (its interrupts can no longer be answered) and the next prompt
// runs, in this process and in a new one; the protobuf form does the same.
func TestSetMessages_DropUnfinishedDropsTheInterruptedInvocation(t *testing.T) {
	for _, wire := range []bool{false, true} {
		id := fmt.Sprintf("drop-unfinished-%v", wire)
		sm, store := auditSession(t, id)
		t1, runs := countingTool("one")
		m := toolThenText("done", model.Call("t1", "one", nil))
		cfg := agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{approveHook("one", "approve")}}
		cfg.Session = sm
		sys := actorstest.System(t)
		cfg.System = sys
		a := newAgent(t, cfg)
		ctx := context.Background()
		res, err := a.Invoke(ctx, agent.Text("first"))
		require.NoError(t, err)
		require.Equal(t, agent.StopInterrupt, res.StopReason)
		require.ErrorIs(t, a.SetMessages(ctx, nil), agent.ErrInterruptedReset)

		if wire {
			inbox := actors.NewInbox(sys)
			a.Binding().Request(&braidv1.AgentSetMessages{DropUnfinished: true}, inbox)
			rep, err := inbox.Receive(ctx)
			inbox.Close()
			require.NoError(t, err)
			require.IsType(t, &braidv1.AgentDone{}, rep)
		} else {
			require.NoError(t, a.SetMessages(ctx, nil, agent.DropUnfinished()))
		}
		assert.False(t, agenttest.Interrupted(t, a), "wire %v", wire)
		assert.Empty(t, agenttest.Messages(t, a))
		_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the dropped interrupt cannot be answered")

		b := reopen(t, a, store, id, cfg)
		assert.False(t, agenttest.Interrupted(t, b), "in a new process too")
		res, err = b.Invoke(ctx, agent.Text("second"))
		require.NoError(t, err)
		require.Equal(t, agent.StopInterrupt, res.StopReason, "a prompt, asked again")
		assert.Equal(t, 0, runs.total())
	}
}

// SPEC A3, A9, R2: a result says how many messages the history holds when
// the invocation returns (a pending tool cycle's are not in it yet), and
// its protobuf form carries it.
func TestResult_HistoryIsTheHistorysLengthOnReturn(t *testing.T) {
	ctx := context.Background()
	t1, _ := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{approveHook("one", "approve")}})
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, 1, res.History, "the prompt; the tool use waits in the interrupt state")
	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, len(agenttest.Messages(t, a)), res.History)
	assert.Equal(t, 4, res.History)
	w, err := agent.ResultToWire(res)
	require.NoError(t, err)
	back, err := agent.ResultFromWire(w)
	require.NoError(t, err)
	assert.Equal(t, 4, back.History)
}
