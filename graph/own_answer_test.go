package graph_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC S4, I7: a runtime whose resume failed at its claim (the store
// refused the save: nothing of its answer was stored) does not hold
// that answer as its own. Another runtime's resume then claims the run
// and runs b; the first runtime's retry of the same answer finds the
// other's claim and is refused (the conflict, or as waiting for no
// answer): it does not claim the run a second time, so b runs once and
// the other runtime's resume finishes the run.
func TestGraphSession_S4_AnAnswerWhoseClaimWasNotSavedIsNotOwnOnceAnotherClaims(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	failing := &failingStore{Store: mem}
	r := newRecorder()
	started, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	var runs atomic.Int32
	slowB := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:b")
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return []model.ContentBlock{model.Text("b out")}, nil
	})
	mk := func(st persistence.Store) *graph.Graph {
		b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", slowB).AddEdge("a", "b")
		return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t),
			Hooks: []hook.Provider{gate(r, "b")}})
	}
	g1 := mk(failing)
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	answer := interrupt.Respond(res.Interrupts[0].ID, "y")
	g2 := mk(mem) // holds the interrupted run
	t.Cleanup(func() { released.Do(func() { close(release) }) })

	failing.armed.Store(true)
	_, err = g1.Invoke(ctx, agent.Resume(answer))
	require.ErrorIs(t, err, errDiskFull, "g1's claim was not saved")
	failing.armed.Store(false)
	require.Equal(t, 0, r.count("fn:b"))

	first := invokeAsync(ctx, g2, agent.Resume(answer))
	<-started // g2's resume is taken and b runs

	_, err = g1.Invoke(ctx, agent.Resume(answer))
	if assert.Error(t, err, "g1's retry took g2's claim") {
		assert.True(t, errorsIsAny(err, persistence.ErrConflict, interrupt.ErrNotInterrupted), "got %v", err)
	}

	released.Do(func() { close(release) })
	out := <-first
	if assert.NoError(t, out.err, "g2's resume, taken, is not cut off") {
		assert.Equal(t, multiagent.StatusCompleted, out.res.Status)
	}
	assert.Equal(t, 1, r.count("fn:b"), "b ran once")
}

// SPEC S4, I7: a resume whose claim was saved, but whose run a later save
// cut off (the store failed when b's report came), may be given again by
// the same runtime: the answer is its own, and the run goes on from it.
func TestGraphSession_S4_AResumeCutOffByItsOwnFailedSaveMayBeGivenAgain(t *testing.T) {
	ctx := context.Background()
	failing := &failingStore{Store: memory.New()}
	r := newRecorder()
	var once sync.Once
	b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).
		AddNode("b", agentFn(func() { once.Do(func() { failing.armed.Store(true) }) })).
		AddNode("c", fn(r, "c", nil)).AddEdge("a", "b").AddEdge("b", "c")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, failing, "s"), System: actorstest.System(t),
		Hooks: []hook.Provider{gate(r, "b")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	answer := interrupt.Respond(res.Interrupts[0].ID, "y")

	_, err = g.Invoke(ctx, agent.Resume(answer))
	require.ErrorIs(t, err, errDiskFull)
	failing.armed.Store(false)

	res, err = g.Invoke(ctx, agent.Resume(answer))
	require.NoError(t, err, "its own answer, given again")
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("fn:c"))
}

// errorsIsAny reports whether err matches one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
