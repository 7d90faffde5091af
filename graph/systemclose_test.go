package graph_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// closeWhileWaiting closes sys while something of it waits on a context
// only the Close can end, and reports whether Close returned (nil) once
// all that can run has run. If it did not, it reports that Close waits
// for what, lets the wait end (unblock) and ends Close through its own
// context.
func closeWhileWaiting(t *testing.T, sys *actors.System, what string, unblock func()) bool {
	t.Helper()
	closeCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- sys.Close(closeCtx) }()
	synctest.Wait() // all that can run has run
	select {
	case err := <-closed:
		assert.NoError(t, err)
		return true
	default:
		t.Errorf("Close waits for %s whose context never ends", what)
		unblock()
		cancel()
		<-closed
		return false
	}
}

// waitForEnd reports on entered, then waits for ctx to end or for
// release, and reports ctx's error (nil on release) on returned.
func waitForEnd(ctx context.Context, entered, release chan struct{}, returned chan error) error {
	close(entered)
	select {
	case <-ctx.Done():
		returned <- ctx.Err()
		return ctx.Err()
	case <-release:
		returned <- nil
		return nil
	}
}

// endBubble lets a synctest bubble end with no goroutine left:
// Proto.Actor's dead-letter throttle waits on a ticker of its own, which
// the bubble's fake clock runs on.
func endBubble() { time.Sleep(time.Minute) }

// SPEC R3, R5: an orchestrator's invocation hook runs as one of its
// System's jobs, with a context that ends once its orchestrator stops: a
// System's Close ends the wait of a hook that watches its context, and
// returns nil once the hook has returned, without waiting for its own
// context to end.
func TestSystemClose_EndsTheContextOfARunningInvocationHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		h := hook.Func(func(ctx context.Context, _ *multiagent.BeforeMultiAgentInvocationEvent) error {
			return waitForEnd(ctx, entered, release, returned)
		})
		r := newRecorder()
		g, err := graph.NewBuilder().AddNode("a", textAgent(r, "a")).
			Build(context.Background(), graph.Config{System: sys, Hooks: []hook.Provider{h}})
		require.NoError(t, err)
		invoked := make(chan error, 1)
		go func() { _, err := g.Invoke(context.Background(), agent.Text("go")); invoked <- err }()
		<-entered
		if closeWhileWaiting(t, sys, "an invocation hook", func() { close(release) }) {
			assert.Error(t, <-returned, "the hook's context ended")
		} else {
			<-returned
		}
		<-invoked
		endBubble()
	})
}

// SPEC R3, R5, M3: a node's AfterNodeCall hooks run in the node's job,
// which a System's Close waits for: when Close stops the node while they
// run, their context ends (it does not end with the node's run, which is
// over), so a hook that watches it returns and Close returns nil, without
// waiting for its own context to end.
func TestSystemClose_EndsTheContextOfARunningAfterNodeCallHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		h := hook.Func(func(ctx context.Context, _ *multiagent.AfterNodeCallEvent) error {
			_ = waitForEnd(ctx, entered, release, returned)
			return nil
		})
		r := newRecorder()
		g, err := graph.NewBuilder().AddNode("a", textAgent(r, "a")).
			Build(context.Background(), graph.Config{System: sys, Hooks: []hook.Provider{h}})
		require.NoError(t, err)
		invoked := make(chan error, 1)
		go func() { _, err := g.Invoke(context.Background(), agent.Text("go")); invoked <- err }()
		<-entered
		if closeWhileWaiting(t, sys, "an AfterNodeCall hook", func() { close(release) }) {
			assert.Error(t, <-returned, "the hook's context ended")
		} else {
			<-returned
		}
		<-invoked
		endBubble()
	})
}

// blockingLoads is a store whose loads of orchestrator records report on
// entered and wait for their context to end.
type blockingLoads struct {
	persistence.Store
	entered chan struct{}
}

func (s *blockingLoads) Load(ctx context.Context, k persistence.Key) (*persistence.Record, error) {
	if k.Kind != persistence.KindMultiAgent {
		return s.Store.Load(ctx, k)
	}
	close(s.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

// SPEC R3, R5: the load of an orchestrator's session on activation has a
// context that ends when its System closes: a System's Close during a
// load that waits for a store that does not answer returns nil once the
// load has given up, without waiting for LoadTimeout or its own context;
// the Build that activated the graph fails.
func TestSystemClose_EndsTheLoadOfAnOrchestratorsActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		st := &blockingLoads{Store: memory.New(), entered: make(chan struct{})}
		sm, err := persistence.NewSessionManager(st, "s")
		require.NoError(t, err)
		r := newRecorder()
		built := make(chan error, 1)
		go func() {
			_, err := graph.NewBuilder().AddNode("a", textAgent(r, "a")).
				Build(context.Background(), graph.Config{System: sys, Session: sm})
			built <- err
		}()
		<-st.entered
		closeWhileWaiting(t, sys, "an orchestrator's load", func() {})
		assert.Error(t, <-built)
		endBubble()
	})
}
