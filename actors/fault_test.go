package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/proto/braidv1"
)

// resetPanics is a one-node stateful policy whose ResetPolicy, which the
// orchestrator's actor calls when a fresh run starts, panics once armed.
type resetPanics struct{ armed bool }

func (p *resetPanics) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	return []actors.NodeStart{{Node: "n", Input: v.Task()}}, nil
}
func (p *resetPanics) Next(*actors.RunView, string) ([]actors.NodeStart, string) { return nil, "" }
func (p *resetPanics) MarshalPolicy() (json.RawMessage, error)                   { return json.RawMessage(`{}`), nil }
func (p *resetPanics) UnmarshalPolicy(json.RawMessage) error                     { return nil }
func (p *resetPanics) ResetPolicy() {
	if p.armed {
		panic("boom in ResetPolicy")
	}
}

// SPEC R6: an orchestrator without a session whose actor stops after a
// fault in its own Receive is never re-activated with a fresh, empty run
// behind its callers' backs: the caller of the failed step gets an error
// naming the fault, and every later call ErrOrchestratorFaulted.
func TestOrchestrator_WithoutSessionFaultedIsNotRestartedWithFreshState(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	pol := &resetPanics{}
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o",
		Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
	require.NoError(t, err)
	defer o.Close(ctx)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	res, err := o.Invoke(ctx, task)
	require.NoError(t, err)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())

	pol.armed = true
	_, err = o.Invoke(ctx, task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom in ResetPolicy")
	assert.NotErrorIs(t, err, actors.ErrOrchestratorClosed, "nobody closed it")

	// At once: a call sent while the faulted actor stops reaches the next
	// activation (SPEC R5: nothing is lost in the meantime).
	_, err = o.Status(ctx)
	assert.ErrorIs(t, err, actors.ErrOrchestratorFaulted, "not a fresh, empty run")
	_, err = o.Invoke(ctx, task)
	assert.ErrorIs(t, err, actors.ErrOrchestratorFaulted)
}

// SPEC R5, R6: a protobuf MultiAgentInvoke whose run faults is answered
// with an error naming the fault, streamed or not: its sender (another
// actor, another process) never waits for nothing.
func TestOrchestrator_ProtobufInvokeThatFaultsIsAnsweredWithTheFault(t *testing.T) {
	for _, stream := range []bool{false, true} {
		sys := newSystem(t)
		ctx := ctxT(t)
		pol := &resetPanics{armed: true}
		node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			return []model.ContentBlock{model.Text("done")}, nil
		})
		o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o",
			Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
		require.NoError(t, err)
		task, err := agent.InputToWire(agent.Text("go"))
		require.NoError(t, err)
		inbox := actors.NewInbox(sys)
		o.Binding().Request(&braidv1.MultiAgentInvoke{Input: task, Stream: stream}, inbox)
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err, "stream %v", stream)
		e, ok := rep.(*braidv1.Error)
		require.True(t, ok, "stream %v: %T", stream, rep)
		assert.Contains(t, e.GetMessage(), "boom in ResetPolicy", "stream %v", stream)
		inbox.Close()
		require.NoError(t, o.Close(ctx))
	}
}

// SPEC R2: a MultiAgentInvoke sent without a sender (fire and forget, as
// a plain Send from another process does) runs, and its outcome, which
// has nobody to go to, is dropped without harm.
func TestOrchestrator_ProtobufInvokeWithoutSenderRuns(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	ran := make(chan struct{}, 2)
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		ran <- struct{}{}
		return []model.ContentBlock{model.Text("done")}, nil
	})
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o",
		Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: &resetPanics{}})
	require.NoError(t, err)
	defer o.Close(ctx)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	o.Binding().Send(&braidv1.MultiAgentInvoke{Input: task})
	<-ran
	// The next invocation is queued behind it, so it returns after it.
	res, err := o.Invoke(ctx, task)
	require.NoError(t, err)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
}

// SPEC R4, R5: an orchestrator whose run fails to load on activation
// answers the call with the load's error and passivates, so that the next
// call loads again: once the store is back the orchestrator works, with
// no idle timeout and without being built again.
func TestOrchestrator_FailedLoadIsTriedAgainByTheNextCall(t *testing.T) {
	events := make(chan actors.Lifecycle, 64)
	cfg := actors.DefaultConfig()
	cfg.Observer = func(id actors.Identity, l actors.Lifecycle) {
		if id.Kind == "test" {
			events <- l
		}
	}
	sys, err := actors.NewSystem(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	ctx := ctxT(t)
	next := func() actors.Lifecycle {
		t.Helper()
		select {
		case l := <-events:
			return l
		case <-ctx.Done():
			t.Fatal("no lifecycle event")
			return 0
		}
	}
	store := persistencetest.NewFailingLoads()
	sm, err := persistence.NewSessionManager(store, "flaky-orch")
	require.NoError(t, err)
	pol := &resetPanics{}
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o", Session: sm,
		Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
	require.NoError(t, err)
	defer o.Close(ctx)
	require.Equal(t, actors.Activated, next())
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	_, err = o.Invoke(ctx, task)
	require.NoError(t, err)

	// A fault stops the actor; its next activation must load the run.
	pol.armed = true
	_, err = o.Invoke(ctx, task)
	require.ErrorContains(t, err, "boom in ResetPolicy")
	require.Equal(t, actors.Stopped, next())
	pol.armed = false

	store.Failing.Store(true)
	_, err = o.Status(ctx)
	require.ErrorIs(t, err, persistencetest.ErrLoadsFail)
	require.Equal(t, actors.Activated, next())
	require.Equal(t, actors.Passivated, next(), "passivated at once, not left answering the error")

	store.Failing.Store(false)
	res, err := o.Invoke(ctx, task)
	require.NoError(t, err)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
	require.Equal(t, actors.Activated, next())
}

// failingSaves fails the saves of orchestrator records while failing is
// set.
type failingSaves struct {
	*memory.Store
	failing atomic.Bool
}

func (s *failingSaves) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if s.failing.Load() {
		for _, c := range changes {
			if c.Key.Kind == persistence.KindMultiAgent {
				return nil, errors.New("disk full")
			}
		}
	}
	return s.Store.Save(ctx, opts, changes...)
}

// SPEC R5, R6: a protobuf MultiAgentInvoke whose start faults (here:
// after a failed save the orchestrator reloads its stored run first, and
// with none stored that resets its policy, which panics) is answered with
// the fault, streamed or not: it is still queued while it starts, so the
// actor's stop answers it, rather than its sender (and the goroutine that
// waits to answer it) waiting for ever. The orchestrator then works again.
func TestOrchestrator_ProtobufInvokeWhoseStartFaultsIsAnsweredWithTheFault(t *testing.T) {
	for _, stream := range []bool{false, true} {
		sys := newSystem(t)
		ctx := ctxT(t)
		store := &failingSaves{Store: memory.New()}
		sm, err := persistence.NewSessionManager(store, "faulty-start")
		require.NoError(t, err)
		pol := &resetPanics{}
		node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			return []model.ContentBlock{model.Text("done")}, nil
		})
		o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o", Session: sm,
			Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
		require.NoError(t, err)
		task, err := agent.InputToWire(agent.Text("go"))
		require.NoError(t, err)
		store.failing.Store(true)
		_, err = o.Invoke(ctx, task)
		require.ErrorContains(t, err, "disk full", "stream %v", stream)
		store.failing.Store(false)

		pol.armed = true // the reload before the next invocation resets the policy
		inbox := actors.NewInbox(sys)
		o.Binding().Request(&braidv1.MultiAgentInvoke{Input: task, Stream: stream}, inbox)
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err, "stream %v: a reply", stream)
		e, ok := rep.(*braidv1.Error)
		require.True(t, ok, "stream %v: %T", stream, rep)
		assert.Contains(t, e.GetMessage(), "boom in ResetPolicy", "stream %v", stream)
		inbox.Close()

		pol.armed = false
		res, err := o.Invoke(ctx, task)
		require.NoError(t, err, "stream %v", stream)
		assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus(), "stream %v", stream)
		require.NoError(t, o.Close(ctx))
	}
}

// unmarshalPanics is a one-node stateful policy whose UnmarshalPolicy,
// which the orchestrator's actor calls when it restores a stored run as
// it starts, panics once armed.
type unmarshalPanics struct{ resetPanics }

func (p *unmarshalPanics) UnmarshalPolicy(json.RawMessage) error {
	if p.armed {
		panic("boom in UnmarshalPolicy")
	}
	return nil
}

// SPEC R5, R6: an orchestrator whose actor panics while it starts (here:
// its policy panics restoring the stored run) has its identity released,
// and every call waiting on it ends with ErrUnbound wrapping the
// *FaultError, whatever the caller's context: NewOrchestrator, and the
// Invoke, Stream, Status and Cancel of a handle whose actor faults on
// re-activation. Before, their waits watched only their context, the
// handle's Close and the System's: with a context that cannot end, they
// hung for ever.
func TestOrchestrator_ActorThatPanicsWhileStartingEndsEveryWait(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	defer sys.Close(context.Background())
	store := memory.New()
	sm, err := persistence.NewSessionManager(store, "s")
	require.NoError(t, err)
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	ctx := context.Background() // cannot end: only the fix ends the waits
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	build := func(pol actors.Policy, idle time.Duration) (*actors.Orchestrator, error) {
		return actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o", Session: sm,
			IdleTimeout: idle, Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
	}
	requireFault := func(err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, actors.ErrUnbound, what)
		var fe *actors.FaultError
		require.ErrorAs(t, err, &fe, what)
		assert.True(t, fe.Starting, what)
		assert.Contains(t, err.Error(), "boom in UnmarshalPolicy", what)
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		return next(t, done, what)
	}

	o, err := build(&unmarshalPanics{}, 0)
	require.NoError(t, err)
	_, err = o.Invoke(ctx, task) // a run and its policy state are stored
	require.NoError(t, err)
	require.NoError(t, o.Close(ctx))

	err = within("NewOrchestrator", func() error { _, err := build(&unmarshalPanics{resetPanics{armed: true}}, 0); return err })
	requireFault(err, "NewOrchestrator")

	// A handle whose actor is passivated, then faults on re-activation.
	pol := &unmarshalPanics{}
	o, err = build(pol, idle)
	require.NoError(t, err)
	defer o.Close(ctx)
	lc.AwaitNoneLive(t)
	pol.armed = true
	calls := map[string]func() error{
		"Invoke": func() error { _, err := o.Invoke(ctx, task); return err },
		"Stream": func() error {
			_, err := o.Stream(ctx, task, func(*braidv1.MultiAgentEvent) bool { return true })
			return err
		},
		"Status": func() error { _, err := o.Status(ctx); return err },
		"Cancel": func() error { _, err := o.Cancel(ctx); return err },
	}
	for _, name := range []string{"Invoke", "Stream", "Status", "Cancel"} {
		requireFault(within(name, calls[name]), name)
	}
}
