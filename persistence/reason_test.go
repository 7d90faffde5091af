package persistence_test

// SPEC I3 ("a reason that cannot be encoded as JSON is an error at the call,
// not later at save"), I7 and S5 at the persistence level: the bad reason
// fails the invocation before anything about it reaches the stored session,
// and the session stays usable by a fresh agent.

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

const reasonSession = "reason"

// badReasons cannot be encoded as JSON.
var badReasons = []struct {
	name   string
	reason func() any
}{
	{"channel", func() any { return map[string]any{"ch": make(chan int)} }},
	{"func", func() any { return func() {} }},
	{"NaN", func() any { return math.NaN() }},
}

// reasonRig is a session in a store shared by the rig's agents and the
// pieces of an agent on it: the model asks for delete_files (t1) and
// inspect_files (t2), then answers "done".
type reasonRig struct {
	store *reasonStore
	runs  *goldenRuns
}

func newReasonRig(t *testing.T) *reasonRig {
	return &reasonRig{store: &reasonStore{Store: memory.New()}, runs: &goldenRuns{}}
}

// reasonStore is a memory store that keeps the JSON of every change it is
// asked to save, so a test sees that nothing of a failed interrupt was ever
// sent to the store, not only that none of it is there at the end.
type reasonStore struct {
	*memory.Store
	mu   sync.Mutex
	sent []string
}

func (s *reasonStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	for _, c := range changes {
		s.sent = append(s.sent, string(c.Data))
		for _, m := range c.Messages {
			s.sent = append(s.sent, string(m))
		}
	}
	s.mu.Unlock()
	return s.Store.Save(ctx, opts, changes...)
}

// requireNeverSent checks that no save ever carried id.
func (s *reasonStore) requireNeverSent(t *testing.T, id string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.sent)
	for _, b := range s.sent {
		assert.NotContains(t, b, id, "a save carried the failed interrupt")
	}
}

// export is the stored session (nil when there is none yet), from
// goroutines other than the test's too (hooks).
func (r *reasonRig) export() (*export.Session, error) {
	return exportErr(r.store, reasonSession)
}

// agent builds a fresh agent over a fresh session manager on the rig's
// store, as a new process or request would; approve is its
// BeforeToolCallEvent hook for delete_files.
func (r *reasonRig) agent(t *testing.T, approve func(ev *agent.BeforeToolCallEvent) error) *agent.Agent {
	t.Helper()
	counting := func(name string) tool.Tool {
		return tool.New(name, name, func(ctx context.Context, tc *tool.Context, in goldenPaths) (string, error) {
			r.runs.inc(tc.ToolUse.ToolUseID)
			return name + " ok", nil
		})
	}
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		a := goldenPaths{Paths: []string{"a.txt"}}
		return model.ToolTurn(model.Call("t1", "delete_files", a), model.Call("t2", "inspect_files", a)), nil
	})
	h := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		return approve(ev)
	})
	a, err := agent.New(context.Background(), agent.Config{
		Model:   m,
		Tools:   []tool.Tool{counting("delete_files"), counting("inspect_files")},
		Hooks:   []hook.Provider{h},
		Session: goldenManager(t, r.store, reasonSession),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

// load reads the stored record through a fresh manager.
func (r *reasonRig) load(t *testing.T) *persistence.AgentRecord {
	t.Helper()
	_, rec, err := goldenManager(t, r.store, reasonSession).OpenAgent(context.Background(), agent.DefaultID)
	require.NoError(t, err)
	return rec
}

// askApproval is a good hook: it asks "approval" with a JSON reason.
func askApproval(ev *agent.BeforeToolCallEvent) error {
	_, err := ev.Interrupt("approval", map[string]any{"paths": []string{"a.txt"}})
	return err
}

// requireSessionAsBefore checks that the stored session is exactly what it
// was at the snapshot (every record's version, timestamp, data and
// messages: export.Read, compared whole), and that nothing stored
// mentions the interrupt the bad reason was given to.
func requireSessionAsBefore(t *testing.T, before, after *export.Session, badID string) {
	t.Helper()
	assert.Equal(t, before, after, "the stored session is as it was before the call")
	b, err := json.Marshal(after)
	require.NoError(t, err)
	assert.NotContains(t, string(b), badID, "the stored session mentions the failed interrupt")
}

// requireReasonError checks the error of an invocation failed by a bad reason.
func requireReasonError(t *testing.T, err error, name string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrReason)
	assert.NotErrorIs(t, err, interrupt.ErrInterrupted)
	assert.NotErrorIs(t, err, persistence.ErrDamaged)
	assert.Contains(t, err.Error(), "not JSON-encodable")
	assert.Contains(t, err.Error(), name, "the message names the interrupt")
	assert.Contains(t, err.Error(), "BeforeToolCall", "the message says where")
}

// SPEC I3, S5, A3: in a first invocation, a hook's Interrupt with a reason
// that cannot be encoded fails the invocation at the call: no save ever
// carries anything of the interrupt, the failed invocation takes its
// prompt back (the session holds no message again, nor the failed pass's
// tool cycle), no tool gated by it runs, and a fresh agent on the session
// is given the prompt again and finishes.
func TestReason_NotJSONInHookFailsInvocationSessionUnchanged(t *testing.T) {
	for _, bad := range badReasons {
		t.Run(bad.name, func(t *testing.T) {
			r := newReasonRig(t)
			var before *export.Session
			var callErr error
			a := r.agent(t, func(ev *agent.BeforeToolCallEvent) error {
				var err error
				if before, err = r.export(); err != nil {
					return err
				}
				_, callErr = ev.Interrupt("approval", bad.reason())
				return callErr
			})
			_, err := a.Invoke(context.Background(), agent.Text("delete a.txt"))
			requireReasonError(t, err, "approval")
			assert.ErrorIs(t, callErr, interrupt.ErrReason, "the error comes from the Interrupt call itself")
			assert.False(t, agenttest.Interrupted(t, a))
			assert.Empty(t, agenttest.Messages(t, a), "the prompt is taken back in memory")
			require.NoError(t, a.Close(context.Background()))

			require.NotNil(t, before, "the hook ran, and the prompt was saved before it")
			require.Len(t, before.Records, 1)
			assert.Len(t, before.Records[0].Messages, 1, "the prompt was saved at its message save point")
			after, err := r.export()
			require.NoError(t, err)
			all, err := json.Marshal(after)
			require.NoError(t, err)
			assert.NotContains(t, string(all), interrupt.BeforeToolCallID("t1", "approval"), "the stored session mentions the failed interrupt")
			r.store.requireNeverSent(t, interrupt.BeforeToolCallID("t1", "approval"))
			rec := r.load(t)
			require.NotNil(t, rec)
			assert.Empty(t, rec.Messages, "the prompt is taken back in the session")
			assert.Equal(t, 0, rec.Interrupts.Len(), "nothing recorded for the bad reason")
			assert.False(t, rec.Interrupts.Activated())
			assert.Empty(t, rec.Pending)
			assert.Empty(t, r.runs.all(), "no tool ran: the gated one was stopped, the other never started")

			// A fresh agent on the same session is given the prompt again,
			// asks with a good reason, and finishes.
			b := r.agent(t, askApproval)
			assert.False(t, agenttest.Interrupted(t, b))
			assert.False(t, agenttest.Incomplete(t, b))
			res := invokeOK(t, b, agent.Text("delete a.txt"), agent.StopInterrupt)
			require.Len(t, res.Interrupts, 1)
			assert.Equal(t, interrupt.BeforeToolCallID("t1", "approval"), res.Interrupts[0].ID)
			res = invokeOK(t, b, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")), agent.StopEndTurn)
			assert.Equal(t, "done", res.Message.Text())
			assert.Equal(t, 1, r.runs.all()["t1"])
			msgs := agenttest.Messages(t, b)
			requireGoodHistory(t, msgs)
			assert.Equal(t, []string{"user:delete a.txt", "assistant:", "user:", "assistant:done"}, texts(msgs))
			assert.Equal(t, texts(msgs), texts(r.load(t).Messages))
		})
	}
}

// SPEC I3, I7, S4, S5: while resuming an interrupted session in a fresh
// agent, a hook that gets its answer and then interrupts again with a reason
// that cannot be encoded fails the invocation: no save ever carries the new
// interrupt, the stored session is exactly what it was just before the call
// (the accepted answer, saved when the resume was claimed, and the finished
// sibling; same version, data and messages), and a third agent carries on
// without running the finished tool again.
func TestReason_NotJSONDuringResumeSessionUnchanged(t *testing.T) {
	for _, bad := range badReasons {
		t.Run(bad.name, func(t *testing.T) {
			r := newReasonRig(t)
			ctx := context.Background()

			// 1: interrupted at delete_files (t1); inspect_files (t2) finished.
			a := r.agent(t, askApproval)
			res := invokeOK(t, a, agent.Text("delete a.txt"), agent.StopInterrupt)
			require.Len(t, res.Interrupts, 1)
			approvalID := res.Interrupts[0].ID
			require.NoError(t, a.Close(ctx))
			require.Equal(t, map[string]int{"t2": 1}, r.runs.all())

			// 2: a fresh agent resumes; the hook gets "y", then raises
			// "confirm" with a bad reason.
			var before *export.Session
			var mu sync.Mutex
			b := r.agent(t, func(ev *agent.BeforeToolCallEvent) error {
				ans, err := ev.Interrupt("approval", map[string]any{"paths": []string{"a.txt"}})
				if err != nil {
					return err
				}
				if s, _ := ans.String(); s != "y" {
					ev.CancelTool("denied")
					return nil
				}
				snap, err := r.export()
				if err != nil {
					return err
				}
				mu.Lock()
				before = snap
				mu.Unlock()
				_, err = ev.Interrupt("confirm", bad.reason())
				return err
			})
			_, err := b.Invoke(ctx, agent.Resume(interrupt.Respond(approvalID, "y")))
			requireReasonError(t, err, "confirm")
			require.NoError(t, b.Close(ctx))

			mu.Lock()
			require.NotNil(t, before, "the hook got its answer")
			after, err := r.export()
			require.NoError(t, err)
			requireSessionAsBefore(t, before, after, interrupt.BeforeToolCallID("t1", "confirm"))
			r.store.requireNeverSent(t, interrupt.BeforeToolCallID("t1", "confirm"))
			mu.Unlock()
			rec := r.load(t)
			require.NotNil(t, rec)
			require.Equal(t, 1, rec.Interrupts.Len(), "no interrupt recorded for the bad reason")
			stored, ok := rec.Interrupts.Get(approvalID)
			require.True(t, ok)
			assert.True(t, stored.Answered, "the accepted answer was kept")
			assert.NotEmpty(t, rec.Pending, "the cycle with the finished sibling was kept")
			assert.Equal(t, map[string]int{"t2": 1}, r.runs.all(), "nothing ran in the failed resume")

			// 3: a fresh agent carries on (all answers are in); its hook asks
			// "confirm" properly, is answered, and the run finishes.
			confirmID := interrupt.BeforeToolCallID("t1", "confirm")
			c := r.agent(t, func(ev *agent.BeforeToolCallEvent) error {
				if _, err := ev.Interrupt("approval", nil); err != nil {
					return err
				}
				_, err := ev.Interrupt("confirm", map[string]any{"really": true})
				return err
			})
			assert.False(t, agenttest.Interrupted(t, c))
			assert.True(t, agenttest.Incomplete(t, c))
			res = invokeOK(t, c, agent.Input{}, agent.StopInterrupt)
			require.Len(t, res.Interrupts, 1)
			assert.Equal(t, confirmID, res.Interrupts[0].ID)
			assert.JSONEq(t, `{"really":true}`, string(res.Interrupts[0].Reason))
			res = invokeOK(t, c, agent.Resume(interrupt.Respond(confirmID, "ok")), agent.StopEndTurn)
			assert.Equal(t, "done", res.Message.Text())
			assert.Equal(t, map[string]int{"t1": 1, "t2": 1}, r.runs.all(), "t2 was not run again")
			msgs := agenttest.Messages(t, c)
			requireGoodHistory(t, msgs)
			assert.Equal(t, []string{"user:delete a.txt", "assistant:", "user:", "assistant:done"}, texts(msgs))
			assert.Equal(t, []string{"t1=delete_files ok", "t2=inspect_files ok"}, toolResultTexts(msgs[2]))
		})
	}
}

// SPEC I3, A13: inside a tool, tc.Interrupt with a reason that cannot be
// encoded returns the error at the call; a tool that returns it gets an
// error result (as for any tool error) and the loop goes on. Nothing of
// the interrupt reaches the session.
func TestReason_NotJSONInToolIsErrorAtCall(t *testing.T) {
	st := memory.New()
	var callErr error
	bad := tool.New("bad", "bad", func(ctx context.Context, tc *tool.Context, in goldenPaths) (string, error) {
		_, callErr = tc.Interrupt("confirm", math.NaN())
		return "", callErr
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("t1", "bad", goldenPaths{})), nil
	})
	a, err := agent.New(context.Background(), agent.Config{Model: m, Tools: []tool.Tool{bad}, Session: goldenManager(t, st, reasonSession)})
	require.NoError(t, err)
	defer a.Close(context.Background())

	res := invokeOK(t, a, agent.Text("go"), agent.StopEndTurn)
	assert.Empty(t, res.Interrupts)
	require.ErrorIs(t, callErr, interrupt.ErrReason)
	assert.NotErrorIs(t, callErr, interrupt.ErrInterrupted)
	msgs := agenttest.Messages(t, a)
	requireGoodHistory(t, msgs)
	require.Len(t, msgs, 4)
	rs := msgs[2].ToolResults()
	require.Len(t, rs, 1)
	assert.Equal(t, model.ToolError, rs[0].Status)
	assert.Contains(t, rs[0].Text(), "not JSON-encodable")

	_, rec, err := goldenManager(t, st, reasonSession).OpenAgent(context.Background(), agent.DefaultID)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, texts(msgs), texts(rec.Messages))
	assert.Equal(t, 0, rec.Interrupts.Len())
	assert.Empty(t, rec.Pending)
}
