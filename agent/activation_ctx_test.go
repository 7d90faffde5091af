package agent_test

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
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC R5: a caller whose context ends while the agent's activation waits
// for its store (the session load blocked) gets the context's error at
// once, not when the load ends; the activation is not left half done:
// once the store answers, the next call works.
func TestNew_R5_ACancelledContextEndsTheWaitForABlockedLoad(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := persistencetest.NewGatedLoads("")
	release := make(chan struct{})
	st.Gate.Store(&release)
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	built := make(chan error, 1)
	go func() {
		_, err := agent.New(ctx, agent.Config{ID: "a", System: sys, Session: sm, Model: model.Scripted(model.TextTurn("hi"))})
		built <- err
	}()
	<-st.Loading
	cancel()
	select {
	case err := <-built:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("New waited for the blocked load after its context was cancelled")
	}
	close(release)
	lc.AwaitNoneLive(t) // the cut-short activation ends with its load
	go func() {
		for range st.Loading { // later loads go through
		}
	}()
	a, err := agent.New(deadline(t), agent.Config{ID: "a", System: sys, Session: sm, Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err, "the identity was released: a new agent of it is built")
	defer func() { _ = a.Close(context.Background()) }()
	res, err := a.Invoke(deadline(t), agent.Text("hello"))
	require.NoError(t, err)
	assert.Equal(t, "hi", res.String())
}

// deadline is a test's context: a call that deadlocks fails the test
// instead of hanging it.
func deadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// SPEC R4, R5: a call to a passivated agent whose re-activation waits for
// a blocked load ends with its context's error as soon as the context
// ends; once the store answers, the agent is back with its history.
func TestStatus_R5_ACancelledContextEndsTheWaitForABlockedReactivation(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := persistencetest.NewGatedLoads("")
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	a, err := agent.New(deadline(t), agent.Config{ID: "a", System: sys, Session: sm, IdleTimeout: time.Millisecond,
		Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	defer func() { _ = a.Close(context.Background()) }()
	_, err = a.Invoke(deadline(t), agent.Text("hello"))
	require.NoError(t, err)
	lc.AwaitNoneLive(t)

	release := make(chan struct{})
	st.Gate.Store(&release)
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan error, 1)
	go func() { _, err := a.Status(ctx); asked <- err }()
	<-st.Loading
	cancel()
	select {
	case err := <-asked:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Status waited for the blocked load after its context was cancelled")
	}
	st.Gate.Store(nil)
	close(release)
	s, err := a.Status(deadline(t))
	require.NoError(t, err)
	assert.Equal(t, 2, s.Messages)
}

// SPEC R5: an invocation whose caller's context ended while the agent's
// re-activation waited for its store never runs: the caller was told the
// context's error before the agent took the request, so no hook fires and
// the history does not change.
func TestInvoke_R5_AbandonedWhileTheActivationWaitsNeverRuns(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := persistencetest.NewGatedLoads("")
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	var invocations atomic.Int32
	counted := hook.Func(func(context.Context, *agent.BeforeInvocationEvent) error { invocations.Add(1); return nil })
	a, err := agent.New(deadline(t), agent.Config{ID: "a", System: sys, Session: sm, IdleTimeout: time.Millisecond,
		Hooks: []hook.Provider{counted},
		Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn("hi"), nil })})
	require.NoError(t, err)
	defer func() { _ = a.Close(context.Background()) }()
	_, err = a.Invoke(deadline(t), agent.Text("hello"))
	require.NoError(t, err)
	lc.AwaitNoneLive(t)

	release := make(chan struct{})
	st.Gate.Store(&release)
	ctx, cancel := context.WithCancel(context.Background())
	invoked := make(chan error, 1)
	go func() { _, err := a.Invoke(ctx, agent.Text("never mind")); invoked <- err }()
	<-st.Loading
	cancel()
	select {
	case err := <-invoked:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Invoke waited for the blocked load after its context was cancelled")
	}
	st.Gate.Store(nil)
	close(release)

	_, err = a.Invoke(deadline(t), agent.Text("again")) // runs after anything before it
	require.NoError(t, err)
	assert.EqualValues(t, 2, invocations.Load(), "the abandoned invocation fired no hook")
	s, err := a.Status(deadline(t))
	require.NoError(t, err)
	assert.Equal(t, 4, s.Messages, "the abandoned invocation left nothing in the history")
}
