package agent_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence/memory"
)

// waitingInitHook is an AgentInitialized hook that, from activation
// number from on, reports on entered and waits for its context to end
// (reported on returned with the context's error) or for release.
func waitingInitHook(from int, entered chan struct{}, release chan struct{}, returned chan error) hook.Provider {
	n := 0
	return hook.Func(func(ctx context.Context, _ *agent.AgentInitializedEvent) error {
		if n++; n < from {
			return nil
		}
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
}

// SPEC R3, R5: the context of an AgentInitialized hook ends when the
// agent's System closes: a System's Close during an activation whose
// hook waits on its context returns nil once the hook has returned,
// without waiting for its own context to end; the New that activated
// the agent fails.
func TestSystemClose_EndsTheContextOfAnActivationHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		built := make(chan error, 1)
		go func() {
			_, err := agent.New(context.Background(), agent.Config{System: sys, Model: model.Scripted(),
				Hooks: []hook.Provider{waitingInitHook(1, entered, release, returned)}})
			built <- err
		}()
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
			t.Error("Close waits for an AgentInitialized hook whose context never ends")
			close(release)
			<-returned
			cancel()
			<-closed
		}
		assert.Error(t, <-built, "the agent's System closed while it was built")
		drainBubble()
	})
}

// SPEC R3, R5: the context of an AgentInitialized hook ends when its
// agent is closed: Agent.Close while the agent comes back from
// passivation, its hook waiting on its context, returns nil once the
// hook has returned, and the agent's identity is released (a new agent
// of the session can be built).
func TestClose_EndsTheContextOfAnActivationHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lc := actorstest.NewLifecycles()
		sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
		require.NoError(t, err)
		defer func() {
			assert.NoError(t, sys.Close(context.Background()))
			drainBubble()
		}()
		store := memory.New()
		entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		a, err := agent.New(context.Background(), agent.Config{ID: "a", System: sys, Session: mustManager(t, store),
			Model: model.Scripted(), Hooks: []hook.Provider{waitingInitHook(2, entered, release, returned)}})
		require.NoError(t, err)
		a.Binding().Send(&actor.PoisonPill{}) // stopped; the next message activates it
		lc.AwaitNoneLive(t)
		go func() { _, _ = a.Status(context.Background()) }()
		<-entered

		closeCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- a.Close(closeCtx) }()
		synctest.Wait()
		select {
		case err := <-closed:
			assert.NoError(t, err)
			assert.Error(t, <-returned, "the hook's context ended")
		default:
			t.Error("Close waits for an AgentInitialized hook whose context never ends")
			close(release)
			<-returned
			cancel()
			<-closed
		}
		b, err := agent.New(context.Background(), agent.Config{ID: "a", System: sys, Session: mustManager(t, store), Model: model.Scripted()})
		require.NoError(t, err, "the identity was released")
		assert.NoError(t, b.Close(context.Background()))
	})
}
