package agent_test

// SPEC S6 in cycles of several tools: what a crash in the middle of a
// cycle leaves, and what recovery runs again.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// watchStore calls after once each save has committed (a test's view of
// what a crash at that moment would leave).
type watchStore struct {
	*memory.Store
	after func(ctx context.Context)
}

func (s *watchStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil && s.after != nil {
		s.after(ctx)
	}
	return v, err
}

// storedText returns the session's records as one string.
func storedText(ctx context.Context, t *testing.T, store persistence.Store, session string) string {
	t.Helper()
	exp, err := export.Read(ctx, store, session)
	require.NoError(t, err)
	b, err := json.Marshal(exp)
	require.NoError(t, err)
	return string(b)
}

// mixedRig: one cycle of four tools, t1 once_done (at most once) and t2
// plain_done finish; t3 once_cut (at most once) and t4 plain_cut are both
// running when the process is killed, after the results of t1 and t2 were
// saved.
type mixedRig struct {
	runs     counter
	crashing atomic.Bool
	crash    *export.Session
}

func (r *mixedRig) agent(t *testing.T, store persistence.Store, hooks ...func(*agent.Config)) *agent.Agent {
	t.Helper()
	bothDone := make(chan struct{})
	var doneOnce sync.Once
	if ws, ok := store.(*watchStore); ok {
		ws.after = func(ctx context.Context) {
			s := storedText(ctx, t, ws.Store, crashSession)
			if strings.Contains(s, "once_done ok") && strings.Contains(s, "plain_done ok") {
				doneOnce.Do(func() { close(bothDone) })
			}
		}
	}
	plainArrived := make(chan struct{})
	exported := make(chan struct{})
	mk := func(name string, opts ...tool.Option) tool.Tool {
		return tool.New(name, name, func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			r.runs.inc(name)
			if r.crashing.Load() {
				switch name {
				case "once_cut":
					<-bothDone
					<-plainArrived
					exp, err := export.Read(ctx, store, crashSession)
					if err != nil {
						return "", err
					}
					r.crash = exp
					close(exported)
				case "plain_cut":
					<-bothDone
					close(plainArrived)
					<-exported
				}
			}
			return name + " ok", nil
		}, opts...)
	}
	m, err := persistence.NewSessionManager(store, crashSession)
	require.NoError(t, err)
	cfg := agent.Config{
		Model: toolThenText("done",
			model.Call("t1", "once_done", pathsIn{}), model.Call("t2", "plain_done", pathsIn{}),
			model.Call("t3", "once_cut", pathsIn{Paths: []string{"x"}}), model.Call("t4", "plain_cut", pathsIn{})),
		Tools:   []tool.Tool{mk("once_done", tool.AtMostOnce()), mk("plain_done"), mk("once_cut", tool.AtMostOnce()), mk("plain_cut")},
		Session: m, System: actorstest.System(t)}
	for _, h := range hooks {
		h(&cfg)
	}
	return newAgent(t, cfg)
}

func (r *mixedRig) afterCrash(t *testing.T) persistence.Store {
	t.Helper()
	ctx := context.Background()
	r.crashing.Store(true)
	_, err := r.agent(t, &watchStore{Store: memory.New()}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	r.crashing.Store(false)
	return restoreCrash(t, r.crash)
}

// SPEC S6, A6, A3: a crash in a cycle of four tools, two finished (one of
// them at most once) and two cut off (one at most once): recovery runs
// neither finished tool again, runs the plain cut-off tool again, and
// stops with one braid.recovery interrupt for the at-most-once one; a JSON
// null answer gives it an error result saying the run was cut off by a
// crash, and the history has one result per use, in order.
func TestAtMostOnce_S6_RecoveryOfAMixedCycleRunsOnlyTheCutOffPlainTool(t *testing.T) {
	ctx := context.Background()
	r := &mixedRig{}
	st := r.afterCrash(t)
	a := r.agent(t, st)
	require.True(t, agenttest.Incomplete(t, a))

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, agent.RecoveryInterrupt, in.Name)
	var reason agent.RecoveryReason
	require.NoError(t, in.DecodeReason(&reason))
	assert.Equal(t, "once_cut", reason.Tool)
	assert.JSONEq(t, `{"paths":["x"]}`, string(reason.Input))

	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, nil)))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, r.runs.get("once_done"))
	assert.Equal(t, 1, r.runs.get("plain_done"))
	assert.Equal(t, 1, r.runs.get("once_cut"), "not run again without rerun")
	assert.Equal(t, 2, r.runs.get("plain_cut"), "at least once")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 4)
	for i, want := range []string{"once_done ok", "plain_done ok", "cut off by a crash", "plain_cut ok"} {
		assert.Contains(t, rs[i].Text(), want)
	}
	assert.Equal(t, model.ToolError, rs[2].Status)
}

// SPEC S6: only the answer "rerun" runs a cut-off at-most-once tool again;
// JSON null, a number, an object, a list, another string give the model an
// error result saying the run was cut off by a crash.
func TestAtMostOnce_S6_AnyAnswerButRerunGivesACutOffError(t *testing.T) {
	for name, ans := range map[string]any{
		"null": nil, "number": 42, "object": map[string]any{"answer": "rerun"},
		"list": []string{"rerun"}, "capitalised": "Rerun", "empty": "",
		"raw null": json.RawMessage("null"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := &crashRig{}
			st := r.afterCrash(t, tool.AtMostOnce())
			a := r.agent(t, st, tool.AtMostOnce())
			res, err := a.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			require.Len(t, res.Interrupts, 1)
			res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, ans)))
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason)
			assert.Equal(t, 1, r.runs)
			msgs := agenttest.Messages(t, a)
			rs := msgs[len(msgs)-2].ToolResults()
			require.Len(t, rs, 1)
			assert.Equal(t, model.ToolError, rs[0].Status)
			assert.Contains(t, rs[0].Text(), "cut off by a crash")
		})
	}
}

var errStartBoom = errors.New("durable save refused")

// startFailStore refuses durable saves while down.
type startFailStore struct {
	*memory.Store
	down atomic.Bool
}

func (s *startFailStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if opts.Durable && s.down.Load() {
		return nil, errStartBoom
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC S6, R6: an at-most-once tool whose durable start mark fails to save
// does not run, and the invocation fails with the store's error. Carried
// on once the store is back (in this runtime, or in a fresh one), the tool
// was never started: it runs, once, without a recovery question.
func TestAtMostOnce_S6_AToolWhoseStartMarkFailsToSaveDoesNotRun(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		name := "same runtime"
		if fresh {
			name = "fresh runtime"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := &startFailStore{Store: memory.New()}
			var runs atomic.Int32
			build := func() *agent.Agent {
				del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
					runs.Add(1)
					return "deleted", nil
				}, tool.AtMostOnce())
				m, err := persistence.NewSessionManager(store, crashSession)
				require.NoError(t, err)
				return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{})),
					Tools: []tool.Tool{del}, Session: m, System: actorstest.System(t)})
			}
			a := build()
			store.down.Store(true)
			_, err := a.Invoke(ctx, agent.Text("go"))
			require.ErrorIs(t, err, errStartBoom)
			assert.Equal(t, int32(0), runs.Load(), "not run without its start mark saved")
			store.down.Store(false)
			if fresh {
				require.NoError(t, a.Close(ctx))
				a = build()
			}
			in := agent.Text("go") // a failed fresh invocation takes its prompt back (SPEC A3)
			if agenttest.Incomplete(t, a) {
				in = agent.Input{}
			}
			res, err := a.Invoke(ctx, in)
			require.NoError(t, err)
			assert.Equal(t, agent.StopEndTurn, res.StopReason, "never started: no recovery question (%v)", res.Interrupts)
			assert.Equal(t, int32(1), runs.Load())
		})
	}
}

// SPEC S6, I6, A7: a braid.recovery question asked together with another
// interrupt (a BeforeToolCall approval of another tool of the cycle) may be
// left unanswered while the other is answered: the approved tool runs,
// and the agent stops again with the same recovery question; answered then
// with an object, the cut-off tool gets the cut-off error result, and no
// tool ran twice.
func TestAtMostOnce_S6_ARecoveryQuestionLeftUnansweredIsAskedAgain(t *testing.T) {
	ctx := context.Background()
	var crash *export.Session
	var runs counter
	build := func(store persistence.Store) *agent.Agent {
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			runs.inc("delete_files")
			if crash == nil {
				exp, err := export.Read(ctx, store, crashSession)
				if err != nil {
					return "", err
				}
				crash = exp
			}
			return "deleted", nil
		}, tool.AtMostOnce())
		inspect := tool.New("inspect", "inspect", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			runs.inc("inspect")
			return "inspected", nil
		})
		m, err := persistence.NewSessionManager(store, crashSession)
		require.NoError(t, err)
		return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{}), model.Call("t2", "inspect", pathsIn{})),
			Tools: []tool.Tool{del, inspect}, Session: m, System: actorstest.System(t),
			Hooks: []hook.Provider{approveHook("inspect", "approval")}})
	}
	res, err := build(memory.New()).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.NotNil(t, crash)
	st := memory.New()
	require.NoError(t, export.Write(ctx, st, crash))

	a := build(st)
	res, err = a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	byName := map[string]interrupt.Interrupt{}
	for _, in := range res.Interrupts {
		byName[in.Name] = in
	}
	require.Len(t, byName, 2, "%v", res.Interrupts)
	rec, ok := byName[agent.RecoveryInterrupt]
	require.True(t, ok)
	approval, ok := byName["approval"]
	require.True(t, ok)

	res, err = a.Invoke(ctx, agent.Resume(respond(approval, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, rec.ID, res.Interrupts[0].ID, "the same question")
	assert.Equal(t, 1, runs.get("inspect"))
	assert.Equal(t, 1, runs.get("delete_files"))

	res, err = a.Invoke(ctx, agent.Resume(respond(rec, map[string]any{"rerun": true})))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.get("inspect"))
	assert.Equal(t, 1, runs.get("delete_files"))
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 2)
	assert.Contains(t, rs[0].Text(), "cut off by a crash")
	assert.Equal(t, "inspected", rs[1].Text())
}
