package graph_test

import (
	"context"
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

// SPEC S4, M5, I7: two runtimes (two processes) hold the same run, which
// waits at b's gate, and both resume it. The first's resume is taken
// (its claim is saved) and b runs; the second gets ErrConflict and takes
// the stored run, in which b's gate is answered and the run goes on. Its
// retry of the same answer, while the first still runs b, is refused as
// waiting for no answer: it does not claim the run again, so b runs once
// and the first runtime's resume finishes the run.
func TestGraphSession_S4_ARetriedResumeDoesNotTakeARunAnotherWriterResumed(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
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
	mk := func() *graph.Graph {
		b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", slowB).AddEdge("a", "b")
		return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t),
			Hooks: []hook.Provider{gate(r, "b")}})
	}
	g1 := mk()
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	answer := interrupt.Respond(res.Interrupts[0].ID, "y")
	g2 := mk() // holds the interrupted run
	// Before the graphs close: a failed check does not leave b waiting.
	t.Cleanup(func() { released.Do(func() { close(release) }) })

	first := invokeAsync(ctx, g1, agent.Resume(answer))
	<-started // g1's resume is taken and b runs

	_, err = g2.Invoke(ctx, agent.Resume(answer))
	require.ErrorIs(t, err, persistence.ErrConflict, "the run g2 holds is stale")
	_, err = g2.Invoke(ctx, agent.Resume(answer))
	if assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "the answer was taken by g1's resume") {
		assert.NotErrorIs(t, err, persistence.ErrConflict)
		assert.Contains(t, err.Error(), answer.ID, "the refusal names the id")
	}
	now, err := g2.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusExecuting, now.Status, "g1 still runs b")

	released.Do(func() { close(release) })
	out := <-first
	if assert.NoError(t, out.err, "g1's resume, taken, is not cut off") {
		assert.Equal(t, multiagent.StatusCompleted, out.res.Status)
	}
	assert.Equal(t, 1, r.count("fn:b"), "b ran once")
	assert.Equal(t, 1, r.count("fn:a"))
}
