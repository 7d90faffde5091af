package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// stuckSave is a memory store whose first orchestrator save waits, after
// signalling entered, until release is closed or its context ends (a
// store stuck on a lock that honours its context); ended is closed when
// that save has returned, whatever its outcome.
type stuckSave struct {
	*memory.Store
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	ended    chan struct{}
	released sync.Once
}

func newStuckSave() *stuckSave {
	return &stuckSave{Store: memory.New(), entered: make(chan struct{}),
		release: make(chan struct{}), ended: make(chan struct{})}
}

func (s *stuckSave) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	held := false
	if orchestratorSave(opts, changes) {
		s.once.Do(func() { held = true })
	}
	if !held {
		return s.Store.Save(ctx, opts, changes...)
	}
	defer close(s.ended)
	close(s.entered)
	select {
	case <-s.release:
		return s.Store.Save(ctx, opts, changes...)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *stuckSave) let() { s.released.Do(func() { close(s.release) }) }

// SPEC R4, S4 (Close, M10): once Close has returned, the closed graph
// writes nothing more to its session. A graph closed while its save waits
// for the store left that save running behind its back: a graph built
// again on the session (in the same System: the identity was released)
// loaded the run before the late write landed, and its first save then
// failed with ErrConflict.
func TestGraph_R4_CloseReturnsOnlyOnceItsSaveHasEnded(t *testing.T) {
	ctx := context.Background()
	st := newStuckSave()
	t.Cleanup(st.let)
	r := newRecorder()
	sys := actorstest.System(t)
	b := func() *graph.Builder { return graph.NewBuilder().AddNode("a", textAgent(r, "a")) }
	g := build(t, b(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: sys})
	errc := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-st.entered // the launch save waits for the store
	require.NoError(t, g.Close(soon(t)))
	select {
	case <-st.ended:
	default:
		t.Error("Close returned while the closed graph's save was still being written")
	}
	<-errc

	g2 := build(t, b(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: sys})
	st.let()
	<-st.ended
	res, err := g2.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err, "the closed graph's save landed after the new one loaded the session")
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
