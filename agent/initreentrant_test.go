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
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC R7, R4: an AgentInitialized hook that calls its own agent's handle
// with the context it was given (Status, Snapshot, Cancel, Close, Invoke)
// while the agent comes back from passivation gets ErrReentrant at once:
// the actor answers nothing until its activation, which waits for the
// hook, has ended. The activation, and the call that caused it, go on.
func TestAgentInitialized_R7_AHookThatCallsItsOwnAgentGetsErrReentrant(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	sm, err := persistence.NewSessionManager(memory.New(), "s1")
	require.NoError(t, err)
	var self atomic.Pointer[agent.Agent]
	type calls struct{ status, snapshot, cancel, close, invoke error }
	got := make(chan calls, 1)
	h := hook.Func(func(ctx context.Context, ev *agent.AgentInitializedEvent) error {
		a := self.Load()
		if a == nil {
			return nil // the first activation, in New: no handle yet
		}
		// The test's limit turns a deadlock into a failure; the hook's
		// own context cannot end.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var c calls
		_, c.status = a.Status(ctx)
		_, c.snapshot = a.Snapshot(ctx)
		_, c.cancel = a.Cancel(ctx)
		_, c.invoke = a.Invoke(ctx, agent.Text("again"))
		c.close = a.Close(ctx)
		got <- c
		return nil
	})
	a, err := agent.New(deadline(t), agent.Config{ID: "a", System: sys, Session: sm, IdleTimeout: time.Millisecond,
		Hooks: []hook.Provider{h}, Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	defer func() { _ = a.Close(context.Background()) }()
	self.Store(a)
	lc.AwaitNoneLive(t)

	res, err := a.Invoke(deadline(t), agent.Text("hello"))
	require.NoError(t, err, "the call that activated the agent is answered")
	assert.Equal(t, "hi", res.String())
	c := <-got
	assert.ErrorIs(t, c.status, agent.ErrReentrant)
	assert.ErrorIs(t, c.snapshot, agent.ErrReentrant)
	assert.ErrorIs(t, c.cancel, agent.ErrReentrant)
	assert.ErrorIs(t, c.invoke, agent.ErrReentrant)
	assert.ErrorIs(t, c.close, agent.ErrReentrant)
	s, err := a.Status(deadline(t))
	require.NoError(t, err, "the agent was not closed by the refused Close")
	assert.Equal(t, 2, s.Messages)
}
