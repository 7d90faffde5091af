package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// stubbornAgent is an approval agent on session "s1" of store whose tool,
// once approved, reports on started, waits for its context to end (a
// cancellation reached it), reports on cancelled, and still finishes its
// work when finish is closed, as a tool that cannot stop halfway would.
func stubbornAgent(t *testing.T, sys *actors.System, store persistence.Store, started, cancelled, finish chan struct{}) (*agent.Agent, *counter) {
	t.Helper()
	runs := &counter{}
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		close(started)
		<-ctx.Done()
		close(cancelled)
		<-finish
		return "deleted", nil
	})
	sm, err := persistence.NewSessionManager(store, "s1")
	require.NoError(t, err)
	a, err := agent.New(context.Background(), agent.Config{System: sys, Session: sm, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "approval")},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
	require.NoError(t, err)
	return a, runs
}

// SPEC R3, R5: a Close whose context ends returns at once, and the close
// goes on without its caller: the running tool is cancelled, the agent's
// identity stays bound while the tool finishes (no second agent of the
// session runs beside it), then it is released, the tool's result saved.
// A later Close waits for the same close. Before, a Close whose context
// had ended did nothing but mark the handle closed, and the identity
// stayed bound for the life of the System.
func TestClose_WhoseContextEndsStillClosesAndReleasesTheAgent(t *testing.T) {
	sys := actorstest.System(t)
	store := memory.New()
	started, cancelled, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a, runs := stubbornAgent(t, sys, store, started, cancelled, finish)
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	resumed := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		resumed <- err
	}()
	<-started

	ended, cancel := context.WithCancel(ctx)
	cancel()
	err = a.Close(ended)
	require.ErrorIs(t, err, context.Canceled, "the caller's context ended: Close returns at once")
	select { // the close reaches the running job without the caller
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the close never reached the running job")
	}

	_, err = agent.New(ctx, agent.Config{System: sys, Session: mustManager(t, store), Model: model.Scripted()})
	require.ErrorIs(t, err, actors.ErrBound, "the identity is held while the tool runs")
	_, err = a.Status(ctx)
	require.ErrorIs(t, err, agent.ErrClosed)

	closed := make(chan error, 1)
	go func() { closed <- a.Close(ctx) }()
	close(finish)
	require.NoError(t, <-closed, "a later Close waits for the same close")
	require.ErrorIs(t, <-resumed, agent.ErrClosed)
	assert.Equal(t, 1, runs.total())

	b, err := agent.New(ctx, agent.Config{System: sys, Session: mustManager(t, store), Model: model.Scripted()})
	require.NoError(t, err, "released once the tool returned")
	defer b.Close(ctx)
	msgs := agenttest.Messages(t, b)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult"}, describeAll(msgs), "the finished tool's result is saved")
}

// SPEC R5: Close ends when the agent's System was closed first (its
// Close stopped the actor and released the identity), instead of waiting
// for a reply that cannot come.
func TestClose_AfterTheSystemClosedReturns(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	a, _ := approvalAgent(t, sys, memory.New(), nil, nil)
	require.NoError(t, sys.Close(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, a.Close(ctx))
}

func mustManager(t *testing.T, store persistence.Store) *persistence.SessionManager {
	t.Helper()
	sm, err := persistence.NewSessionManager(store, "s1")
	require.NoError(t, err)
	return sm
}

// SPEC R5: work asked of an agent whose System has closed ends with
// actors.ErrClosed, whatever the caller's context, instead of waiting
// for an answer that cannot come.
func TestAgent_CallsAfterTheSystemClosedReturnErrClosed(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	a, err := agent.New(context.Background(), agent.Config{System: sys, Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	require.NoError(t, sys.Close(context.Background()))
	bg := context.Background()
	timed, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	calls := map[string]func() error{
		"Invoke":           func() error { _, err := a.Invoke(bg, agent.Text("hello")); return err },
		"Invoke, deadline": func() error { _, err := a.Invoke(timed, agent.Text("hello")); return err },
		"SetMessages":      func() error { return a.SetMessages(bg, nil) },
		"SetState":         func() error { return a.SetState(bg, "k", 1) },
		"Stream": func() error {
			for _, err := range a.Stream(timed, agent.Text("hello")) {
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, actors.ErrClosed, name)
		case <-time.After(time.Minute):
			t.Fatalf("%s after System.Close never returned", name)
		}
	}
}

// SPEC R5: a request queued behind a running job when the System closes
// is answered (ErrClosed) as the actor stops, not left waiting for an
// actor that stopped, even while the running job (a tool that ignores its
// context) keeps the System's Close waiting (SPEC R3).
func TestAgent_RequestQueuedWhenTheSystemClosesIsAnswered(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	block, started, cut := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	del := tool.New("delete_files", "delete", func(ctx context.Context, _ *tool.Context, _ pathsIn) (string, error) {
		started <- struct{}{}
		<-ctx.Done() // the actor's stop cancelled the job
		close(cut)
		<-block // and the tool finishes all the same
		return "deleted", nil
	})
	sm, err := persistence.NewSessionManager(memory.New(), "s1")
	require.NoError(t, err)
	a := newAgent(t, agent.Config{System: sys, Session: sm, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "approval")},
		Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}))})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("delete a"))
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		first <- err
	}()
	<-started // the tool runs, and ignores its context
	queued := make(chan error, 1)
	go func() { queued <- a.SetMessages(ctx, nil) }()
	timed, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		st, err := a.Status(timed)
		return err == nil && st.Queued == 1
	}, time.Minute, time.Millisecond, "the SetMessages queues behind the running job")
	closed := make(chan error, 1)
	go func() { closed <- sys.Close(ctx) }()
	select {
	case err := <-queued:
		assert.Error(t, err, "the queued request")
	case <-time.After(time.Minute):
		t.Fatal("the queued request was never answered after the System closed")
	}
	// The queued request may be answered as Close begins, before the
	// actor's stop: the tool is let go only once the stop has cancelled
	// the job, so that the running invocation is cut off, not finished.
	<-cut
	close(block)
	require.NoError(t, <-closed)
	for name, ch := range map[string]chan error{"the running one": first} {
		select {
		case err := <-ch:
			assert.Error(t, err, name)
		case <-time.After(time.Minute):
			t.Fatalf("%s was never answered after the System closed", name)
		}
	}
}

// SPEC R3: an agent's activation (its session's load and its
// AgentInitialized hooks) runs off the registry's goroutine: a slow hook
// does not hold up the other agents of the System, and a hook that builds
// another agent does not deadlock it. Before, the registry ran the
// activation in its own Receive.
func TestAgentInitialized_HooksDoNotHoldUpTheSystem(t *testing.T) {
	sys := actorstest.System(t)
	inHook, release := make(chan struct{}), make(chan struct{})
	slow := hook.Func(func(ctx context.Context, ev *agent.AgentInitializedEvent) error {
		close(inHook)
		<-release
		return nil
	})
	built := make(chan error, 1)
	go func() {
		a, err := agent.New(context.Background(), agent.Config{ID: "slow", System: sys, Model: model.Scripted(), Hooks: []hook.Provider{slow}})
		if err == nil {
			err = a.Close(context.Background())
		}
		built <- err
	}()
	<-inHook
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := agent.New(ctx, agent.Config{ID: "other", System: sys, Model: model.Scripted()})
	require.NoError(t, err, "built while the other agent's hook runs")
	require.NoError(t, other.Close(ctx))
	close(release)
	require.NoError(t, <-built)

	builds := hook.Func(func(ctx context.Context, ev *agent.AgentInitializedEvent) error {
		helper, err := agent.New(ctx, agent.Config{ID: "helper", System: sys, Model: model.Scripted()})
		if err != nil {
			return err
		}
		return helper.Close(ctx)
	})
	done := make(chan error, 1)
	go func() {
		a, err := agent.New(ctx, agent.Config{ID: "main", System: sys, Model: model.Scripted(), Hooks: []hook.Provider{builds}})
		if err == nil {
			err = a.Close(ctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("an AgentInitialized hook that builds an agent deadlocked the System")
	}
}

// SPEC R5: Status, Snapshot and Cancel that race the agent's Close (its
// identity released while they are on their way) end with ErrClosed, as
// Invoke, SetState and every call after Close do. Before, they failed
// with the registry's "identity is not bound".
func TestAgent_QueriesRacingCloseReturnErrClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := agent.New(ctx, agent.Config{System: actorstest.System(t), Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	// What Close does once the actor has stopped, the handle not yet
	// marked closed: the state a query that passed the handle's check
	// finds the identity in.
	require.NoError(t, a.Binding().Unbind(ctx))
	calls := map[string]func() error{
		"Status":   func() error { _, err := a.Status(ctx); return err },
		"Snapshot": func() error { _, err := a.Snapshot(ctx); return err },
		"Cancel":   func() error { _, err := a.Cancel(ctx); return err },
		"Invoke":   func() error { _, err := a.Invoke(ctx, agent.Text("hello")); return err },
		"SetState": func() error { return a.SetState(ctx, "k", 1) },
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(), agent.ErrClosed, name)
	}
	require.NoError(t, a.Close(ctx))
}
