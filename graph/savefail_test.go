package graph_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// failingStore fails the saves of orchestrator records once armed.
type failingStore struct {
	persistence.Store
	armed atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (s *failingStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if s.armed.Load() {
		for _, c := range changes {
			if c.Key.Kind == persistence.KindMultiAgent {
				return nil, errDiskFull
			}
		}
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC S4, R5: a save that fails when nodes start ends the invocation
// with the error (nothing waits for runs never sent), and the graph runs
// again once the store works.
func TestGraph_FailedSaveAtLaunchEndsTheInvocationWithItsError(t *testing.T) {
	r := newRecorder()
	st := &failingStore{Store: memory.New()}
	b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", fn(r, "b", nil)).AddEdge("a", "b")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	st.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := g.Invoke(ctx, agent.Text("go"))
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the invocation hung")
	require.ErrorIs(t, err, errDiskFull)
	// and the graph still answers, and can run again
	st.armed.Store(false)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	_, err = g.Invoke(ctx2, agent.Text("go"))
	require.NoError(t, err)
}

// Same, when the failing save is the one that starts the second node
// (launch from a report).
func TestGraph_FailedSaveAfterANodeEndsTheInvocationWithItsError(t *testing.T) {
	r := newRecorder()
	st := &failingStore{Store: memory.New()}
	b := graph.NewBuilder().AddNode("a", agentFn(func() { st.armed.Store(true) })).AddNode("b", fn(r, "b", nil)).AddEdge("a", "b")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := g.Invoke(ctx, agent.Text("go"))
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the invocation hung")
	require.ErrorIs(t, err, errDiskFull)
}

// agentFn is a function node that calls f, then answers.
func agentFn(f func()) actorsNode {
	return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		f()
		return []model.ContentBlock{model.Text("ok")}, nil
	})
}

type actorsNode = actors.Node

// SPEC S4: two resumes of one interrupted run from two processes: one
// proceeds, the other gets ErrConflict before anything runs; the loser
// then sees the winner's run.
func TestGraph_LosingConcurrentResumeGetsErrConflictBeforeAnythingRuns(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	mk := func() *graph.Graph {
		b := graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which"))
		return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	}
	g1 := mk()
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	g2 := mk() // another process, loaded the same interrupted run
	_, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = g2.Invoke(tctx, agent.Resume(interrupt.Respond(id, "x")))
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the second resume hung")
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, 1, r.count("tool:ask"), "the losing resume ran the tool")
	_, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.Error(t, err, "the loser reloads the stored run: the interrupt is answered already")
	assert.Equal(t, 1, r.count("tool:ask"))
}

// racedStore makes the next durable save of an orchestrator record, once
// armed, lose a race: another writer updates the record just before it
// (as another process would), so the save fails with a real conflict.
type racedStore struct {
	persistence.Store
	armed atomic.Bool
}

func (s *racedStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	for _, c := range changes {
		if c.Key.Kind == persistence.KindMultiAgent && opts.Durable && s.armed.CompareAndSwap(true, false) {
			rec, err := s.Store.Load(ctx, c.Key)
			if err != nil {
				return nil, err
			}
			if _, err := s.Store.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: c.Key, Base: rec.Version,
				Data: rec.Data, From: len(rec.Messages), Incarnation: rec.Incarnation}); err != nil {
				return nil, err
			}
		}
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC S4: an invocation whose last save loses to another writer ends
// with ErrConflict, and the next invocation starts from the stored run
// (here the other writer's: the run as its launch left it, cut off, which
// the empty input carries on to its end), where it used to fail with
// ErrConflict again and again (its saves were based on the version the
// actor held).
func TestGraph_S4_AfterItsLastSaveConflictsTheNextInvocationStartsFromTheStoredRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := &racedStore{Store: memory.New()}
	g := build(t, graph.NewBuilder().AddNode("a", fn(r, "a", nil)), graph.Config{ID: "g", Session: manager(t, st, "s")})
	_, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	st.armed.Store(true)
	_, err = g.Invoke(ctx, agent.Text("again"))
	require.ErrorIs(t, err, persistence.ErrConflict)
	_, err = g.Invoke(ctx, agent.Text("once more"))
	require.ErrorIs(t, err, actors.ErrIncompleteRun, "the stored run is cut off")
	res, err := g.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	res, err = g.Invoke(ctx, agent.Text("once more"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
