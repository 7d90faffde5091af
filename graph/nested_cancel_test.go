package graph_test

import (
	"context"
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
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// blockingNode blocks its first call until its context ends (recording
// "cancelled:<id>"); later calls answer at once.
func blockingNode(r *recorder, id string, started chan<- struct{}) actors.Node {
	var calls atomic.Int32
	return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		if calls.Add(1) > 1 {
			r.add("fn:" + id)
			return []model.ContentBlock{model.Text(id + " out")}, nil
		}
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		r.add("cancelled:" + id)
		return nil, ctx.Err()
	})
}

// nestedSlow is top → mid (a nested graph: slow → next).
func nestedSlow(r *recorder, started chan<- struct{}) *graph.Builder {
	inner := graph.NewBuilder().AddNode("slow", blockingNode(r, "slow", started)).
		AddNode("next", fn(r, "next", nil)).AddEdge("slow", "next")
	return graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{}))
}

// SPEC M3, M11: Cancel cancels the running nodes, also inside a nested
// orchestrator, and the parent's result waits for the nested run to end:
// nothing of it goes on behind the parent's back.
func TestGraph_CancelStopsTheRunningNodeOfANestedGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := newRecorder()
	started := make(chan struct{})
	g := build(t, nestedSlow(r, started), graph.Config{ID: "top"})
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(ctx, agent.Text("go"))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	ok, err := g.Cancel(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusCancelled, res.Status, res.Message)
	assert.Equal(t, 1, r.count("cancelled:slow"), "the nested graph's running node was not cancelled")
	assert.Zero(t, r.count("fn:next"), "the nested graph ran on after its parent was cancelled")
	mid := res.Node("mid")
	require.NotNil(t, mid)
	assert.Equal(t, multiagent.StatusCancelled, mid.Status)
	require.NotNil(t, mid.Multi, "the nested run's result is the node's (SPEC M7, M11)")
	assert.Equal(t, multiagent.StatusCancelled, mid.Multi.Status)
	require.NotNil(t, mid.Multi.Node("slow"))
	assert.Equal(t, multiagent.StatusCancelled, mid.Multi.Node("slow").Status)
}

// SPEC M11: a nested graph node that runs past NodeTimeout fails with the
// timeout, its nested run is stopped before the node's result is taken,
// and the parent runs again afterwards.
func TestGraph_NodeTimeoutStopsANestedGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := newRecorder()
	// Only slow's first run is meant to reach the timeout: the nested
	// graph's start and the whole second run must end well within it, on
	// a busy machine too.
	g := build(t, nestedSlow(r, nil), graph.Config{ID: "top", NodeTimeout: time.Second})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Equal(t, 1, r.count("cancelled:slow"), "the nested graph's running node was not stopped")
	assert.Zero(t, r.count("fn:next"), "the nested graph ran on after its node timed out")
	res, err = g.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("fn:next"))
}

// SPEC M10, M11, S6: a crash after any save of a resumed nested run keeps
// the accepted answer: every copy of the store finishes, and none sits
// INTERRUPTED with nothing to answer.
func TestGraph_CrashAfterAnySaveOfANestedResumeKeepsTheAnswer(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "crash"}
	mk := func(r *recorder) *graph.Builder {
		inner := graph.NewBuilder().AddNode("deep", toolAgent(r, "deep", "lookup", "which"))
		return graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{})).
			AddNode("after", textAgent(r, "after")).AddEdge("mid", "after")
	}
	g := build(t, mk(newRecorder()), graph.Config{ID: "top", Session: manager(t, cs, "crash")})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	from := cs.made()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(from)
	require.NotEmpty(t, copies)
	for i, exp := range copies {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		g2 := build(t, mk(newRecorder()), graph.Config{ID: "top", Session: manager(t, st, "crash")})
		s, err := g2.Status(ctx)
		require.NoError(t, err)
		if s.Status == multiagent.StatusExecuting {
			s, err = g2.Invoke(ctx, agent.Input{})
			require.NoError(t, err, "copy %d", i)
		}
		assert.NotEqual(t, multiagent.StatusInterrupted, s.Status,
			"copy %d: the accepted answer is lost (%d interrupts to answer)", i, len(s.Interrupts))
		assert.Equal(t, multiagent.StatusCompleted, s.Status, "copy %d: %s", i, s.Message)
		require.NoError(t, g2.Close(ctx))
	}
}
