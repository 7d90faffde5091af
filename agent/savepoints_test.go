package agent_test

// SPEC S1, S6: the saves of a tool cycle. A finished tool's result is saved
// before anyone hears of it, so that a crash never runs it again; the last
// result of a cycle is saved by the save of the tool-use/result pair when
// nothing but Braid's code runs, and nothing is told of it, in between (no
// AfterToolCall or AfterTools callback, no stream consumer, Braid's
// executor). The store below describes what each save left and copies the
// session before and after it: the store changes only at saves, so these
// copies are every state a crash (kill -9) can leave.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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

const spSession = "sp"

// spStore is a memory store that describes each save (spDescribe) and
// copies the session just before and just after it (nil: no session yet).
type spStore struct {
	*memory.Store
	mu     sync.Mutex
	saves  []string
	before []*export.Session
	after  []*export.Session
	// onSave, when set, hears of each save (its description) once it is
	// committed, outside the store's lock.
	onSave func(desc string)
	// beforeSave, when set, runs before save k (from 0) is made, outside
	// the store's lock: it may hold the save back.
	beforeSave func(k int)
}

func newSpStore() *spStore { return &spStore{Store: memory.New()} }

func (s *spStore) manager(t *testing.T) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(s, spSession)
	require.NoError(t, err)
	return m
}

func (s *spStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	if before := s.beforeSave; before != nil {
		k := len(s.saves)
		s.mu.Unlock()
		before(k)
		s.mu.Lock()
	}
	pre, err := spExport(ctx, s.Store)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	v, err := s.Store.Save(ctx, opts, changes...)
	if err != nil {
		s.mu.Unlock()
		return v, err
	}
	post, err := spExport(ctx, s.Store)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	desc, err := spDescribe(post)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.saves, s.before, s.after = append(s.saves, desc), append(s.before, pre), append(s.after, post)
	on := s.onSave
	s.mu.Unlock()
	if on != nil {
		on(desc)
	}
	return v, nil
}

// list returns the descriptions of the saves so far.
func (s *spStore) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.saves...)
}

// last describes the last save ("" before any).
func (s *spStore) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saves) == 0 {
		return ""
	}
	return s.saves[len(s.saves)-1]
}

// spExport copies the session; nil when the store holds none of it yet.
func spExport(ctx context.Context, st persistence.Store) (*export.Session, error) {
	exp, err := export.Read(ctx, st, spSession)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	return exp, err
}

// spDescribe says what a copy of the session holds for the agent:
// "h<n>" for n stored messages, then " cycle[<ids>]" for pending tool work
// with the results of ids (and " started[<ids>]" for at-most-once start
// marks), then " asking" or " answered" for an interrupt state that waits
// for answers or has them all. "none": no session.
func spDescribe(exp *export.Session) (string, error) {
	if exp == nil {
		return "none", nil
	}
	for _, r := range exp.Records {
		if r.Kind != persistence.KindAgent {
			continue
		}
		var d struct {
			Interrupts *interrupt.State `json:"interrupts"`
			Pending    *agent.Pending   `json:"pending"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return "", err
		}
		desc := fmt.Sprintf("h%d", len(r.Messages))
		if p := d.Pending; p != nil {
			var done, started []string
			for _, c := range p.Completed {
				done = append(done, c.ToolUseID)
			}
			for _, s := range p.Started {
				started = append(started, s.ToolUseID)
			}
			desc += " cycle[" + strings.Join(done, ",") + "]"
			if len(started) > 0 {
				desc += " started[" + strings.Join(started, ",") + "]"
			}
		}
		if d.Interrupts != nil && d.Interrupts.Activated() {
			if len(d.Interrupts.Unanswered()) > 0 {
				desc += " asking"
			} else {
				desc += " answered"
			}
		}
		return desc, nil
	}
	return "none", nil
}

// spRig runs the b4 cycle of the benchmarks: a hook asks approval before
// delete_files runs, the caller answers "y", the tool runs, the model
// answers. It counts the tool's runs; atEnd, when set, runs as the last
// thing the tool does.
type spRig struct {
	atMostOnce bool
	hooks      []hook.Provider
	executor   tool.Executor
	runs       atomic.Int32
	atEnd      func(ctx context.Context)
}

func (r *spRig) agent(t *testing.T, st persistence.Store) *agent.Agent {
	t.Helper()
	var opts []tool.Option
	if r.atMostOnce {
		opts = append(opts, tool.AtMostOnce())
	}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.runs.Add(1)
		if r.atEnd != nil {
			r.atEnd(ctx)
		}
		return "deleted", nil
	}, opts...)
	m, err := persistence.NewSessionManager(st, spSession)
	require.NoError(t, err)
	return newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{del}, Session: m, System: actorstest.System(t), Executor: r.executor,
		Hooks: append([]hook.Provider{approveHook("delete_files", "myapp-approval")}, r.hooks...)})
}

// interrupted runs the first half of the cycle: the prompt, stopped by
// the approval hook.
func (r *spRig) interrupted(t *testing.T, a *agent.Agent) interrupt.Interrupt {
	t.Helper()
	res, err := a.Invoke(context.Background(), agent.Text("delete old files"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	return res.Interrupts[0]
}

// b4 runs the whole cycle with Invoke.
func (r *spRig) b4(t *testing.T, a *agent.Agent) {
	t.Helper()
	in := r.interrupted(t, a)
	res, err := a.Invoke(context.Background(), agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	require.Equal(t, int32(1), r.runs.Load())
}

// The saves of the b4 cycle's first invocation: the prompt, the interrupt.
var spAsked = []string{"h1", "h1 cycle[] asking"}

// SPEC S1, S6: in the b4 cycle (approval interrupt, resume, one tool, the
// model's answer) the tool's result is saved by the save of the
// tool-use/result pair: 5 saves, where the result's own save made 6. The
// resume's saves are the claim, the pair with the result, the answer.
func TestToolCycle_LastResultIsSavedByThePairSave(t *testing.T) {
	st := newSpStore()
	r := &spRig{}
	r.b4(t, r.agent(t, st))
	assert.Equal(t, append(spAsked, "h1 cycle[] answered", "h3", "h4"), st.list(),
		"one save fewer: no save of the pending cycle with t1's result")
	msgs := agenttest.Messages(t, gpReload(t, st.manager(t)))
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs),
		"the stored history holds the result")
}

func spRestore(t *testing.T, exp *export.Session) persistence.Store {
	t.Helper()
	out := memory.New()
	if exp != nil {
		require.NoError(t, export.Write(context.Background(), out, exp))
	}
	return out
}

// The resume's saves when the result must be saved before the pair.
var spResultSaved = []string{"h1 cycle[] answered", "h1 cycle[t1] answered", "h3", "h4"}

// SPEC S1, S6, I9: when user code could run, or someone be told of the
// result, between the tool's end and the pair's save (an AfterToolCall or
// AfterTools callback, a stream consumer, an executor of the caller's),
// the result is saved on its own before any of it, as before.
func TestToolCycle_ResultIsSavedAloneWhenSomeoneCanSeeIt(t *testing.T) {
	t.Run("AfterToolCall hook", func(t *testing.T) {
		st := newSpStore()
		r := &spRig{hooks: []hook.Provider{hook.Func(func(context.Context, *agent.AfterToolCallEvent) error { return nil })}}
		r.b4(t, r.agent(t, st))
		assert.Equal(t, append(spAsked, spResultSaved...), st.list())
	})
	t.Run("AfterTools hook", func(t *testing.T) {
		st := newSpStore()
		var atHook []string
		r := &spRig{hooks: []hook.Provider{hook.Func(func(_ context.Context, e *agent.AfterToolsEvent) error {
			if len(e.Message.ToolResults()) > 0 { // not the first invocation's, stopped before the tool
				atHook = append(atHook, st.last())
			}
			return nil
		})}}
		r.b4(t, r.agent(t, st))
		assert.Equal(t, append(spAsked, spResultSaved...), st.list())
		assert.Equal(t, []string{"h1 cycle[t1] answered"}, atHook, "the result is saved before AfterTools runs")
	})
	t.Run("stream consumer", func(t *testing.T) {
		st := newSpStore()
		r := &spRig{}
		a := r.agent(t, st)
		in := r.interrupted(t, a)
		// The saves after the result's (the pair's, the answer's) wait
		// until the consumer has the result: what is saved when it gets
		// it is what was saved before it was sent.
		received := make(chan struct{})
		resultSave := len(spAsked) + 1 // after the resume's claim
		st.beforeSave = func(k int) {
			if k > resultSave {
				<-received
			}
		}
		var atEvent []string
		var res *agent.Result
		for ev, err := range a.Stream(context.Background(), agent.Resume(respond(in, "y"))) {
			require.NoError(t, err)
			switch e := ev.(type) {
			case *agent.ToolResultEvent:
				atEvent = append(atEvent, st.last())
				close(received)
			case *agent.ResultEvent:
				res = e.Result
			}
		}
		require.NotNil(t, res)
		assert.Equal(t, agent.StopEndTurn, res.StopReason)
		assert.Equal(t, append(spAsked, spResultSaved...), st.list())
		assert.Equal(t, []string{"h1 cycle[t1] answered"}, atEvent, "the result is saved before it is streamed")
	})
	t.Run("executor of the caller's", func(t *testing.T) {
		st := newSpStore()
		var atReturn []string
		r := &spRig{executor: spExecutor(func() { atReturn = append(atReturn, st.last()) })}
		r.b4(t, r.agent(t, st))
		assert.Equal(t, append(spAsked, spResultSaved...), st.list())
		assert.Equal(t, []string{"h1", "h1 cycle[t1] answered"}, atReturn,
			"the result is saved before the executor's own code after its last task")
	})
}

// spExecutor is a caller's executor: tool.Concurrent, then code of its own.
type spExecutor func()

func (e spExecutor) Execute(ctx context.Context, tasks []tool.Task) {
	tool.Concurrent{}.Execute(ctx, tasks)
	e()
}

// SPEC S1, S6, A6: of two tools of one cycle, the first to finish is not
// the last result: its result is saved before the second finishes (the
// second waits for that save); only the second is saved by the pair.
func TestToolCycle_FirstOfTwoResultsIsSavedBeforeTheSecondFinishes(t *testing.T) {
	st := newSpStore()
	firstSaved := make(chan struct{})
	var once sync.Once
	st.onSave = func(desc string) {
		if desc == "h1 cycle[t1]" {
			once.Do(func() { close(firstSaved) })
		}
	}
	one, _ := countingTool("one")
	two := tool.New("two", "waits for one's result to be saved", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		select {
		case <-firstSaved:
			return "two ok", nil
		case <-time.After(30 * time.Second): // a guard against a hang, not a synchronisation
			return "", errors.New("the first result was never saved on its own")
		}
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "one", pathsIn{}), model.Call("t2", "two", pathsIn{})),
		Tools: []tool.Tool{one, two}, Session: st.manager(t)})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"h1", "h1 cycle[]", "h1 cycle[t1]", "h3", "h4"}, st.list(),
		"the prompt, the cycle before its tools, t1's result, the pair with t2's, the answer")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	rs := msgs[2].ToolResults()
	require.Len(t, rs, 2)
	assert.Equal(t, "two ok", rs[1].Text())
}

// SPEC S1, S6, A3: a failed save of the pair that carries the last result
// fails the invocation as a failed save of that result does: the same
// error from the store, the same state left (the pair not in the history,
// the cycle pending with the result, the answered interrupt), nothing in
// the store, and carried on once the store is back, the tool is not run
// again. The reference agent has an AfterTools callback, so its result is
// saved on its own, and that save fails.
func TestToolCycle_FailedPairSaveFailsLikeAFailedResultSave(t *testing.T) {
	type outcome struct {
		err      error
		snap     []byte
		status   agent.Status
		stored   string
		runs     int32
		final    []string
		reloaded []string
	}
	run := func(t *testing.T, hooks ...hook.Provider) outcome {
		ctx := context.Background()
		store := &gpFlakyStore{Store: memory.New()}
		r := &spRig{hooks: hooks, atEnd: func(context.Context) { store.down.Store(true) }}
		a := r.agent(t, store)
		in := r.interrupted(t, a)
		var o outcome
		_, o.err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
		snap := agenttest.Snapshot(t, a)
		if snap.Pending != nil {
			snap.Pending.Cycle = "" // random in each run
		}
		var err error
		o.snap, err = json.Marshal(snap)
		require.NoError(t, err)
		o.status = agenttest.Status(t, a)
		exp, err := spExport(ctx, store.Store)
		require.NoError(t, err)
		o.stored, err = spDescribe(exp)
		require.NoError(t, err)
		store.down.Store(false)
		r.atEnd = nil
		res, err := a.Invoke(ctx, agent.Input{})
		require.NoError(t, err, "carried on once the store is back")
		require.Equal(t, agent.StopEndTurn, res.StopReason)
		o.runs = r.runs.Load()
		o.final = describeAll(agenttest.Messages(t, a))
		m, err := persistence.NewSessionManager(store, spSession)
		require.NoError(t, err)
		o.reloaded = describeAll(agenttest.Messages(t, gpReload(t, m)))
		return o
	}
	merged := run(t)
	alone := run(t, hook.Func(func(context.Context, *agent.AfterToolsEvent) error { return nil }))

	require.Error(t, merged.err)
	assert.ErrorIs(t, merged.err, errGpBoom)
	assert.ErrorIs(t, alone.err, errGpBoom)
	assert.Contains(t, merged.err.Error(), "save session (message)", "the failed save is the pair's")
	assert.Contains(t, alone.err.Error(), "save session (tool_result)", "the reference's failed save is the result's")
	assert.JSONEq(t, string(alone.snap), string(merged.snap), "the same state is left")
	assert.Contains(t, string(merged.snap), `"completedToolResults":[{"toolUseId":"t1"`, "the result is kept, pending")
	assert.Equal(t, alone.status, merged.status)
	assert.Equal(t, alone.stored, merged.stored, "the same is stored")
	assert.Equal(t, "h1 cycle[] answered", merged.stored, "the store holds the resume's claim")
	assert.Equal(t, int32(1), merged.runs, "not run again")
	assert.Equal(t, alone.runs, merged.runs)
	want := []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}
	assert.Equal(t, want, merged.final)
	assert.Equal(t, want, alone.final)
	assert.Equal(t, want, merged.reloaded)
}

// SPEC I9, S1: a stream consumer is told only of what is saved: when the
// save of a tool's result fails, no ToolResultEvent is sent for it, and
// the stream ends with the store's error; the tool ran once.
func TestToolCycle_ResultIsNotStreamedWhenItsSaveFails(t *testing.T) {
	store := &gpFlakyStore{Store: memory.New()}
	r := &spRig{atEnd: func(context.Context) { store.down.Store(true) }}
	a := r.agent(t, store)
	in := r.interrupted(t, a)
	var results int
	var streamErr error
	for ev, err := range a.Stream(context.Background(), agent.Resume(respond(in, "y"))) {
		if err != nil {
			streamErr = err
			break
		}
		if _, ok := ev.(*agent.ToolResultEvent); ok {
			results++
		}
	}
	require.ErrorIs(t, streamErr, errGpBoom)
	assert.Contains(t, streamErr.Error(), "save session (tool_result)", "a consumer makes the result's save its own")
	assert.Zero(t, results, "the result whose save failed is not streamed")
	assert.Equal(t, int32(1), r.runs.Load())
}

// spCarryOn is a new process on a store holding exp (nil: empty): it
// drives the agent to the model's last answer the way an application does
// after a restart (start the task, answer interrupts, carry on cut-off
// work), answering a recovery interrupt "rerun". It returns the tool's runs
// in the new process, whether braid.recovery was raised, and the history.
func spCarryOn(t *testing.T, exp *export.Session, atMostOnce bool) (runs int32, recovered bool, msgs []model.Message) {
	t.Helper()
	ctx := context.Background()
	r := &spRig{atMostOnce: atMostOnce}
	a := r.agent(t, spRestore(t, exp))
	for range 8 {
		st := agenttest.Status(t, a)
		msgs = agenttest.Messages(t, a)
		var in agent.Input
		switch {
		case st.Interrupted():
			var rs []interrupt.Response
			for _, i := range st.Interrupts {
				ans := "y"
				if i.Name == agent.RecoveryInterrupt {
					recovered, ans = true, agent.RecoveryRerun
				}
				rs = append(rs, respond(i, ans))
			}
			in = agent.Resume(rs...)
		case len(msgs) == 0:
			in = agent.Text("delete old files")
		case !st.Incomplete() && msgs[len(msgs)-1].Role == model.RoleAssistant && len(msgs[len(msgs)-1].ToolUses()) == 0:
			return r.runs.Load(), recovered, msgs
		}
		_, err := a.Invoke(ctx, in)
		require.NoError(t, err)
	}
	t.Fatalf("the run did not finish: %v", describeAll(msgs))
	return
}

// SPEC S5, S6: a crash (kill -9) at any point of the b4 cycle with the
// merged save, the window from the tool's end to the pair's commit
// included, leaves what it left before: a new process never runs a tool
// whose result is stored (in the pending cycle or the history), runs again
// one cut off before its result was stored (at least once), and, for an
// at-most-once tool whose start mark is stored without a result, stops
// with braid.recovery instead (answered "rerun", it runs once more). The
// store changes only at saves, so the copies taken before and after each
// save, and one taken by the tool as it returns, are every state a crash
// can leave.
func TestToolCycle_CrashAroundTheMergedSaveLeavesTheSameOutcomes(t *testing.T) {
	for _, atMostOnce := range []bool{false, true} {
		name := "at least once"
		resumeSaves := []string{"h1 cycle[] answered", "h3", "h4"}
		if atMostOnce {
			name = "at most once"
			resumeSaves = []string{"h1 cycle[] answered", "h1 cycle[] started[t1] answered", "h3", "h4"}
		}
		t.Run(name, func(t *testing.T) {
			st := newSpStore()
			var atToolEnd *export.Session
			var exportErr error
			r := &spRig{atMostOnce: atMostOnce}
			r.atEnd = func(ctx context.Context) { // the process is killed as the tool returns
				atToolEnd, exportErr = spExport(ctx, st.Store)
			}
			r.b4(t, r.agent(t, st))
			require.NoError(t, exportErr)
			saves := st.list()
			require.Equal(t, append(spAsked, resumeSaves...), saves, "the result is saved by the pair's save")

			// The window: from the tool's end to the pair's commit the store
			// holds what the last save before the tool's end left.
			pair := len(saves) - 2
			require.Equal(t, "h3", saves[pair])
			assert.Equal(t, st.after[pair-1], st.before[pair], "no save between the tool's end and the pair's")
			assert.Equal(t, st.after[pair-1], atToolEnd, "the tool's end is in the window")

			states := map[string]*export.Session{"before any save": nil, "at the tool's end": atToolEnd,
				"just before the pair's commit": st.before[pair]}
			for k, exp := range st.after {
				states[fmt.Sprintf("after save %d (%s)", k+1, saves[k])] = exp
			}
			for where, exp := range states {
				t.Run(where, func(t *testing.T) {
					desc, err := spDescribe(exp)
					require.NoError(t, err)
					runs, recovered, msgs := spCarryOn(t, exp, atMostOnce)
					requireValidHistory(t, msgs)
					assert.Equal(t, "done", msgs[len(msgs)-1].Text())
					stored := strings.Contains(desc, "cycle[t1]") || strings.HasPrefix(desc, "h3") || strings.HasPrefix(desc, "h4")
					cutOff := strings.Contains(desc, "started[t1]")
					switch {
					case stored:
						assert.Equal(t, int32(0), runs, "%s: a tool whose result is stored is not run again", desc)
						assert.False(t, recovered, desc)
					case cutOff:
						assert.True(t, recovered, "%s: an at-most-once tool cut off raises braid.recovery", desc)
						assert.Equal(t, int32(1), runs, "%s: run again on the answer rerun, once", desc)
					default:
						assert.False(t, recovered, desc)
						assert.Equal(t, int32(1), runs, "%s: a tool without a stored result runs (again), once", desc)
					}
				})
			}
			// The window's crash is one a crash just before the old result
			// save's commit left: the tool runs again, or braid.recovery.
			desc, err := spDescribe(atToolEnd)
			require.NoError(t, err)
			if atMostOnce {
				assert.Equal(t, "h1 cycle[] started[t1] answered", desc)
			} else {
				assert.Equal(t, "h1 cycle[] answered", desc)
			}
		})
	}
}

// SPEC I7, S4: a resume whose claim (its first save) fails takes none of
// its answers: the agent's state is exactly as before it (it waits for
// the same interrupts, unanswered), the empty input has nothing to carry
// on, and the caller answers again, another answer included. Before, the
// unsaved answers stayed in memory: the agent said INCOMPLETE, and
// carrying on would have run the tool on an answer no store held.
func TestResume_AClaimThatFailsToSaveTakesNoAnswer(t *testing.T) {
	ctx := context.Background()
	store := &gpFlakyStore{Store: memory.New()}
	r := &spRig{}
	a := r.agent(t, store)
	in := r.interrupted(t, a)
	before, err := json.Marshal(agenttest.Snapshot(t, a))
	require.NoError(t, err)

	store.down.Store(true)
	_, err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.ErrorIs(t, err, errGpBoom)
	after, err := json.Marshal(agenttest.Snapshot(t, a))
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the state is as before the resume")
	st := agenttest.Status(t, a)
	require.True(t, st.Interrupted(), "it waits for its answer")
	assert.Equal(t, []string{in.ID}, ids(st.Interrupts))

	store.down.Store(false)
	_, err = a.Invoke(ctx, agent.Input{})
	require.Error(t, err, "no answer was taken: nothing to carry on")
	res, err := a.Invoke(ctx, agent.Resume(respond(in, "n")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Zero(t, r.runs.Load(), "denied: the tool never ran")
}
