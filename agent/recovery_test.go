package agent_test

// SPEC S6: what a crash does to tools. A crash is simulated exactly: the
// tool copies the store (export.Read) while it runs, which is what a
// process killed at that moment leaves behind; a fresh store imported from
// the copy and a fresh agent on it are the new process.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

const crashSession = "crash"

// crashRig builds agents whose delete_files tool records its runs and
// idempotency keys, and, the first time it runs, copies the store: the
// state a crash at that moment leaves.
type crashRig struct {
	mu    sync.Mutex
	runs  int
	keys  []string
	crash *export.Session
	// again: copy the store at the next run too (a second crash).
	again bool
	// clock, if set, is the agents' clock of start marks.
	clock func() time.Time
}

// startClocks are the clocks the recovery tests run with: the real one,
// and one that never moves, as a coarse clock (Windows' ticks every few
// milliseconds) reads across starts that come quickly, or a clock set
// back between two processes: every start mark of a call then has the
// same time.
var startClocks = []struct {
	name  string
	clock func() time.Time
}{
	{"clock", nil},
	{"clock that does not move", func() time.Time { return time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC) }},
}

func (r *crashRig) agent(t *testing.T, store persistence.Store, opts ...tool.Option) *agent.Agent {
	t.Helper()
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.runs++
		r.keys = append(r.keys, tc.IdempotencyKey())
		if r.crash == nil || r.again {
			r.again = false
			exp, err := export.Read(ctx, store, crashSession)
			if err != nil {
				return "", err
			}
			r.crash = exp
		}
		return "deleted", nil
	}, opts...)
	m, err := persistence.NewSessionManager(store, crashSession)
	require.NoError(t, err)
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{del}, Session: m, System: actorstest.System(t)})
	if r.clock != nil {
		agent.SetClock(a, r.clock)
	}
	return a
}

// restoreCrash returns a fresh store holding exp, what a crash left: the
// new process's store.
func restoreCrash(t *testing.T, exp *export.Session) persistence.Store {
	t.Helper()
	require.NotNil(t, exp, "the run copied the store")
	st := memory.New()
	require.NoError(t, export.Write(context.Background(), st, exp))
	return st
}

// afterCrash runs the tool once (copying the store mid-tool) and returns a
// fresh store holding what the crash left.
func (r *crashRig) afterCrash(t *testing.T, opts ...tool.Option) persistence.Store {
	t.Helper()
	ctx := context.Background()
	first := memory.New()
	res, err := r.agent(t, first, opts...).Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	return restoreCrash(t, r.crash)
}

// SPEC S6: an at-most-once tool cut off by a crash is not run again on
// recovery: the agent stops with a braid.recovery interrupt (source tool,
// reason with tool, input and start time); an answer other than "rerun"
// gives the model an error result saying the run was cut off.
func TestAtMostOnce_CutOffToolStopsWithRecoveryInterrupt(t *testing.T) {
	ctx := context.Background()
	r := &crashRig{}
	st := r.afterCrash(t, tool.AtMostOnce())
	a := r.agent(t, st, tool.AtMostOnce())
	require.True(t, agenttest.Incomplete(t, a), "the crash cut the cycle off")

	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, agent.RecoveryInterrupt, in.Name)
	assert.Equal(t, interrupt.SourceTool, in.Source)
	var reason agent.RecoveryReason
	require.NoError(t, in.DecodeReason(&reason))
	assert.Equal(t, interrupt.ToolCallID("t1", agent.RecoveryInterrupt+"@"+reason.StartedAt.Format(time.RFC3339Nano)), in.ID,
		"one recovery per cut-off start")
	assert.Equal(t, "delete_files", reason.Tool)
	assert.JSONEq(t, `{"paths":["a"]}`, string(reason.Input))
	assert.False(t, reason.StartedAt.IsZero())
	assert.Equal(t, 1, r.runs, "not run again without an answer")

	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "skip")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, r.runs, "any answer but rerun does not run it")
	msgs := agenttest.Messages(t, a)
	rs := msgs[len(msgs)-2].ToolResults()
	require.Len(t, rs, 1)
	assert.Equal(t, model.ToolError, rs[0].Status)
	assert.Contains(t, rs[0].Text(), "cut off by a crash")
}

// SPEC S6: answered "rerun", the cut-off at-most-once tool runs again, once,
// with the same idempotency key.
func TestAtMostOnce_RerunAnswerRunsTheToolAgain(t *testing.T) {
	ctx := context.Background()
	r := &crashRig{}
	st := r.afterCrash(t, tool.AtMostOnce())
	a := r.agent(t, st, tool.AtMostOnce())
	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, agent.RecoveryRerun)))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, r.runs)
	require.Len(t, r.keys, 2)
	assert.Equal(t, r.keys[0], r.keys[1], "the idempotency key is stable across runs")
	assert.Equal(t, crashSession+"/"+agent.DefaultID+"/t1", r.keys[0])
	rec, err := st.Load(ctx, persistence.Key{SessionID: crashSession, Kind: persistence.KindAgent, ID: agent.DefaultID})
	require.NoError(t, err)
	assert.NotContains(t, string(rec.Data), "startedTools", "no start mark is left once the tool finished")
}

// SPEC S6: a tool not declared at-most-once, cut off by a crash, is run
// again on recovery (at least once), with the same idempotency key.
func TestAtLeastOnce_CutOffToolRunsAgainWithTheSameKey(t *testing.T) {
	ctx := context.Background()
	r := &crashRig{}
	st := r.afterCrash(t)
	a := r.agent(t, st)
	require.True(t, agenttest.Incomplete(t, a))
	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, r.runs)
	assert.Equal(t, r.keys[0], r.keys[1])
}

// SPEC S6: the start of an at-most-once tool is saved durably before it
// runs; a finished one leaves no mark.
func TestAtMostOnce_StartIsSavedDurablyBeforeTheToolRuns(t *testing.T) {
	saver := newSaver()
	var atRun []rsSave
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		atRun = saver.list()
		return "deleted", nil
	}, tool.AtMostOnce())
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{})),
		Tools: []tool.Tool{del}, Session: saver.session(t)})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.NotEmpty(t, atRun)
	last := atRun[len(atRun)-1]
	assert.True(t, last.durable, "the start mark is durable")
	assert.Contains(t, string(last.snap), `"startedTools":[{"startedAt":`)
	assert.True(t, tool.RunsAtMostOnce(del))
	plain, _ := countingTool("x")
	assert.False(t, tool.RunsAtMostOnce(plain))
}

// SPEC S6: an at-most-once tool re-run after "rerun" and cut off again is
// not run a third time on the old answer: the recovery is a new interrupt,
// whatever the clock reads at each start.
func TestAtMostOnce_SecondCrashAsksAgain(t *testing.T) {
	for _, c := range startClocks {
		t.Run(c.name, func(t *testing.T) { secondCrashAsksAgain(t, c.clock) })
	}
}

func secondCrashAsksAgain(t *testing.T, clock func() time.Time) {
	ctx := context.Background()
	r := &crashRig{clock: clock}
	st := r.afterCrash(t, tool.AtMostOnce())
	a := r.agent(t, st, tool.AtMostOnce())
	res, err := a.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	first := res.Interrupts[0].ID
	r.again = true // the re-run is cut off too
	_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(first, agent.RecoveryRerun)))
	require.NoError(t, err)
	require.Equal(t, 2, r.runs)

	st2 := memory.New()
	require.NoError(t, export.Write(ctx, st2, r.crash))
	b := r.agent(t, st2, tool.AtMostOnce())
	res, err = b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "not run a third time on the first answer")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
	assert.NotEqual(t, first, res.Interrupts[0].ID)
	assert.Equal(t, 2, r.runs)
	res, err = b.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "no")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, r.runs)
}

// SPEC S6: an at-most-once tool re-run after "rerun" that interrupts, is
// answered, and is cut off again is not run on the old "rerun": each
// cut-off start has a recovery interrupt of its own, whatever the clock
// reads at each start.
func TestAtMostOnce_RerunThatInterruptsThenIsCutOffAsksAgain(t *testing.T) {
	for _, c := range startClocks {
		t.Run(c.name, func(t *testing.T) { rerunThatInterruptsThenIsCutOffAsksAgain(t, c.clock) })
	}
}

func rerunThatInterruptsThenIsCutOffAsksAgain(t *testing.T, clock func() time.Time) {
	ctx := context.Background()
	var mu sync.Mutex
	runs := 0
	var crash *export.Session
	mk := func(store persistence.Store) *agent.Agent {
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			mu.Lock()
			runs++
			n := runs
			mu.Unlock()
			if n >= 2 { // from the re-run on, the tool asks before it deletes
				v, err := tc.Interrupt("confirm", "delete?")
				if err != nil || tc.Interrupted() {
					return "", err
				}
				_ = v
			}
			if n == 1 || n == 3 { // the process is killed while the tool runs
				exp, err := export.Read(ctx, store, crashSession)
				if err != nil {
					return "", err
				}
				crash = exp
			}
			return "deleted", nil
		}, tool.AtMostOnce())
		m, err := persistence.NewSessionManager(store, crashSession)
		require.NoError(t, err)
		a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
			Tools: []tool.Tool{del}, Session: m, System: actorstest.System(t)})
		if clock != nil {
			agent.SetClock(a, clock)
		}
		return a
	}
	restart := func() persistence.Store {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, crash))
		return st
	}

	// Process A: run 1, cut off.
	_, err := mk(memory.New()).Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	// Process B: recovery, answered "rerun"; the re-run (run 2) asks "confirm".
	b := mk(restart())
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
	res, err = b.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, agent.RecoveryRerun)))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, "confirm", res.Interrupts[0].Name)
	// Answered, run 3 is cut off by a crash.
	_, err = b.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "yes")))
	require.NoError(t, err)
	require.Equal(t, 3, runs)
	// Process C: recovery must ask again, not run the tool a fourth time.
	c := mk(restart())
	res, err = c.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	if runs != 3 {
		t.Errorf("the at-most-once tool cut off by a crash ran again without a new answer (runs %d, stop %s)", runs, res.StopReason)
	}
}
