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
)

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
			close(entered)
			select {
			case <-ctx.Done():
				returned <- ctx.Err()
				return ctx.Err()
			case <-release:
				returned <- nil
				return nil
			}
		})
		r := newRecorder()
		g, err := graph.NewBuilder().AddNode("a", textAgent(r, "a")).
			Build(context.Background(), graph.Config{System: sys, Hooks: []hook.Provider{h}})
		require.NoError(t, err)
		invoked := make(chan error, 1)
		go func() { _, err := g.Invoke(context.Background(), agent.Text("go")); invoked <- err }()
		<-entered

		closeCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- sys.Close(closeCtx) }()
		synctest.Wait() // all that can run has run
		select {
		case err := <-closed:
			assert.NoError(t, err)
			assert.Error(t, <-returned, "the hook's context ended")
		default:
			t.Error("Close waits for an invocation hook whose context never ends")
			close(release)
			<-returned
			cancel()
			<-closed
		}
		<-invoked
		// Proto.Actor's dead-letter throttle waits on a ticker of its own; a
		// bubble must end with no goroutine left: its fake clock runs on.
		time.Sleep(time.Minute)
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
			close(entered)
			select {
			case <-ctx.Done():
				returned <- ctx.Err()
			case <-release:
				returned <- nil
			}
			return nil
		})
		r := newRecorder()
		g, err := graph.NewBuilder().AddNode("a", textAgent(r, "a")).
			Build(context.Background(), graph.Config{System: sys, Hooks: []hook.Provider{h}})
		require.NoError(t, err)
		invoked := make(chan error, 1)
		go func() { _, err := g.Invoke(context.Background(), agent.Text("go")); invoked <- err }()
		<-entered

		closeCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- sys.Close(closeCtx) }()
		synctest.Wait() // all that can run has run
		select {
		case err := <-closed:
			assert.NoError(t, err)
			assert.Error(t, <-returned, "the hook's context ended")
		default:
			t.Error("Close waits for an AfterNodeCall hook whose context never ends")
			close(release)
			<-returned
			cancel()
			<-closed
		}
		<-invoked
		// Proto.Actor's dead-letter throttle waits on a ticker of its own; a
		// bubble must end with no goroutine left: its fake clock runs on.
		time.Sleep(time.Minute)
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
		st := &blockingLoads{Store: persistence.NewMemoryStore(), entered: make(chan struct{})}
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

		closeCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- sys.Close(closeCtx) }()
		synctest.Wait() // all that can run has run
		select {
		case err := <-closed:
			assert.NoError(t, err)
		default:
			t.Error("Close waits for an orchestrator's load whose context never ends")
			cancel()
			<-closed
		}
		assert.Error(t, <-built)
		time.Sleep(time.Minute) // Proto.Actor's dead-letter throttle, as above
	})
}
