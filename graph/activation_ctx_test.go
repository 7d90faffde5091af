package graph_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC R5: a Build whose context ends while the graph's activation waits
// for its store (the run's load blocked) returns the context's error at
// once; once the store answers, the identity is released, and the graph
// is built again and runs.
func TestBuild_R5_ACancelledContextEndsTheWaitForABlockedLoad(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := persistencetest.NewGatedLoads(persistence.KindMultiAgent)
	release := make(chan struct{})
	st.Gate.Store(&release)
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	builder := func() *graph.Builder {
		return graph.NewBuilder().AddNode("n", agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
			return []model.ContentBlock{model.Text("done")}, nil
		}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	built := make(chan error, 1)
	go func() {
		_, err := builder().Build(ctx, graph.Config{ID: "g", System: sys, Session: sm})
		built <- err
	}()
	<-st.Loading
	cancel()
	select {
	case err := <-built:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Build waited for the blocked load after its context was cancelled")
	}
	st.Gate.Store(nil)
	close(release)
	lc.AwaitNoneLive(t)

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := builder().Build(ctx, graph.Config{ID: "g", System: sys, Session: sm})
	require.NoError(t, err, "the identity was released: the graph is built again")
	defer func() { _ = g.Close(context.Background()) }()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC R5: an invocation whose caller's context ended while the graph's
// re-activation waited for its store never runs: its caller had the
// context's error before the graph took it, as for one that waits behind
// another run.
func TestInvoke_R5_AbandonedWhileTheActivationWaitsNeverRuns(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := persistencetest.NewGatedLoads(persistence.KindMultiAgent)
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	var runs atomic.Int32
	g, err := graph.NewBuilder().AddNode("n", agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		runs.Add(1)
		return []model.ContentBlock{model.Text("done")}, nil
	})).Build(context.Background(), graph.Config{ID: "g", System: sys, Session: sm, IdleTimeout: time.Millisecond})
	require.NoError(t, err)
	defer func() { _ = g.Close(context.Background()) }()
	_, err = g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	lc.AwaitNoneLive(t)

	release := make(chan struct{})
	st.Gate.Store(&release)
	ctx, cancel := context.WithCancel(context.Background())
	invoked := make(chan error, 1)
	go func() { _, err := g.Invoke(ctx, agent.Text("never mind")); invoked <- err }()
	<-st.Loading
	cancel()
	assert.ErrorIs(t, <-invoked, context.Canceled)
	st.Gate.Store(nil)
	close(release)

	_, err = g.Invoke(context.Background(), agent.Text("again")) // after anything sent before it
	require.NoError(t, err)
	assert.EqualValues(t, 2, runs.Load(), "the abandoned invocation ran no node")
}

// silentLoads is a store whose gated loads never answer: they return only
// once their context ends, as a database that stopped answering does.
type silentLoads struct {
	*memory.Store
	gated   atomic.Bool
	loading chan struct{}
}

func (s *silentLoads) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if s.gated.Load() && key.Kind == persistence.KindMultiAgent {
		s.loading <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Load(ctx, key)
}

// SPEC R5: closing a graph whose activation waits for a store that does
// not answer ends that wait: the load's context ends with the Close, which
// returns without waiting out LoadTimeout (30 s by default), and the
// invocation that activated it fails instead of waiting.
func TestClose_R5_EndsTheWaitOfAnActivationForASilentStore(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := &silentLoads{Store: memory.New(), loading: make(chan struct{}, 1)}
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	g, err := graph.NewBuilder().AddNode("n", agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})).Build(context.Background(), graph.Config{ID: "g", System: sys, Session: sm, IdleTimeout: time.Millisecond})
	require.NoError(t, err)
	_, err = g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	lc.AwaitNoneLive(t) // passivated: the next call activates it again

	st.gated.Store(true)
	invoked := make(chan error, 1)
	go func() { _, err := g.Invoke(context.Background(), agent.Text("again")); invoked <- err }()
	<-st.loading
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, g.Close(ctx), "Close waited for the silent store's load")
	assert.Error(t, <-invoked, "the invocation that activated it ends with the Close")
}
