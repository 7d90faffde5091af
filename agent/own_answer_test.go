package agent_test

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
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

var errHookDown = errors.New("hook down")

// ownAnswerAgent is an agent with a session, interrupted at one tool's
// approval, whose BeforeInvocation hook fails the resume once armed (after
// the resume's claim was saved). idle is its IdleTimeout (0: none).
func ownAnswerAgent(t *testing.T, sys *actors.System, idle time.Duration, fail *atomic.Bool, runs *atomic.Int32) (*agent.Agent, interrupt.Response) {
	t.Helper()
	sm, err := persistence.NewSessionManager(memory.New(), "own")
	require.NoError(t, err)
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.Add(1)
		return "deleted", nil
	})
	before := hook.Func(func(_ context.Context, ev *agent.BeforeInvocationEvent) error {
		if ev.Resuming && fail.CompareAndSwap(true, false) {
			return errHookDown
		}
		return nil
	})
	a := newAgent(t, agent.Config{ID: "assistant", Session: sm, System: sys, IdleTimeout: idle,
		Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval"), before},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
	res, err := a.Invoke(context.Background(), agent.Text("clean up"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	return a, respond(res.Interrupts[0], "y")
}

// SPEC S4, I7: a resume whose claim was saved but whose BeforeInvocation
// hook then failed may be given again by the same agent: the answer is
// its own, and the run goes on from it (the tool runs once).
func TestSession_S4_AResumeCutOffByItsOwnFailedHookMayBeGivenAgain(t *testing.T) {
	var fail atomic.Bool
	var runs atomic.Int32
	a, answer := ownAnswerAgent(t, nil, 0, &fail, &runs)
	fail.Store(true)
	_, err := a.Invoke(context.Background(), agent.Resume(answer))
	require.ErrorIs(t, err, errHookDown)
	res, err := a.Invoke(context.Background(), agent.Resume(answer))
	require.NoError(t, err, "its own answer, given again")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, int32(1), runs.Load())
}

// SPEC S4, R4, I7: as above, with the agent passivated between the failed
// resume and its retry (its IdleTimeout passed): passivation is not seen
// by the caller, so the retry of its own answer goes on as it would have.
func TestSession_S4_AResumeCutOffByItsOwnFailedHookMayBeGivenAgainAfterPassivation(t *testing.T) {
	events := make(chan actors.Lifecycle, 16)
	sys, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) { events <- l }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	var fail atomic.Bool
	var runs atomic.Int32
	a, answer := ownAnswerAgent(t, sys, 10*time.Millisecond, &fail, &runs)
	fail.Store(true)
	passivated(t, a, events)
	_, err = a.Invoke(context.Background(), agent.Resume(answer))
	require.ErrorIs(t, err, errHookDown)
	passivated(t, a, events)
	res, err := a.Invoke(context.Background(), agent.Resume(answer))
	if assert.NoError(t, err, "its own answer, given again after passivation") {
		assert.Equal(t, agent.StopEndTurn, res.StopReason)
	}
	assert.Equal(t, int32(1), runs.Load())
}

// passivated waits until a has no live actor (its IdleTimeout passed).
func passivated(t *testing.T, a *agent.Agent, events <-chan actors.Lifecycle) {
	t.Helper()
	for {
		live, err := a.Binding().Live(context.Background())
		require.NoError(t, err)
		if !live {
			return
		}
		waitLifecycle(t, events)
	}
}
