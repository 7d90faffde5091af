package hook_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
)

// pingEvent is a plain event.
type pingEvent struct{ log []string }

// pongEvent is another plain event type.
type pongEvent struct{}

// afterEvent runs its callbacks in reverse order.
type afterEvent struct{ log []string }

func (*afterEvent) HookReversed() {}

// gateEvent is interruptible.
type gateEvent struct {
	scope *interrupt.Scope
	log   []string
}

func (e *gateEvent) InterruptScope() *interrupt.Scope { return e.scope }

func (e *gateEvent) Interrupt(name string, reason any) (interrupt.Value, error) {
	return e.scope.Interrupt(name, reason)
}

func newGate(st *interrupt.State) *gateEvent {
	return &gateEvent{scope: interrupt.NewScope(st, interrupt.SourceHook, func(name string) string { return "gate:" + name })}
}

func logTo[E any](get func(*E) *[]string, s string) hook.Callback[E] {
	return func(_ context.Context, ev *E) error {
		p := get(ev)
		*p = append(*p, s)
		return nil
	}
}

func pingLog(e *pingEvent) *[]string   { return &e.log }
func afterLog(e *afterEvent) *[]string { return &e.log }

// SPEC A1: callbacks run in registration order.
func TestRun_RegistrationOrder(t *testing.T) {
	r := hook.NewRegistry()
	for i := range 4 {
		hook.Add(r, logTo(pingLog, fmt.Sprint(i)))
	}
	ev := &pingEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"0", "1", "2", "3"}, ev.log)
}

// SPEC A1: an event implementing hook.Reversed runs its callbacks in reverse.
func TestRun_ReversedEventRunsInReverse(t *testing.T) {
	r := hook.NewRegistry()
	for i := range 4 {
		hook.Add(r, logTo(afterLog, fmt.Sprint(i)))
	}
	ev := &afterEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"3", "2", "1", "0"}, ev.log)
}

// SPEC A1: callbacks are per event type; others do not run.
func TestRun_OnlyCallbacksOfThatEventType(t *testing.T) {
	r := hook.NewRegistry()
	pongs := 0
	hook.Add(r, func(_ context.Context, ev *pongEvent) error { pongs++; return nil })
	hook.Add(r, logTo(pingLog, "ping"))
	ev := &pingEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"ping"}, ev.log)
	assert.Equal(t, 0, pongs)
	require.NoError(t, hook.Run(context.Background(), r, &pongEvent{}))
	assert.Equal(t, 1, pongs)
	require.NoError(t, hook.Run(context.Background(), r, &afterEvent{}), "no callbacks is fine")
	require.NoError(t, hook.Run[pingEvent](context.Background(), nil, &pingEvent{}), "a nil registry is fine")
}

// SPEC A1: providers register bundles; Func registers one callback; nil is ignored.
func TestNewRegistry_ProvidersAndFunc(t *testing.T) {
	r := hook.NewRegistry(
		hook.Func(logTo(pingLog, "func")),
		hook.ProviderFunc(func(r *hook.Registry) {
			hook.Add(r, logTo(pingLog, "bundle 1"))
			hook.Add(r, logTo(pingLog, "bundle 2"))
		}),
		nil,
	)
	hook.Add[pingEvent](r, nil)
	ev := &pingEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"func", "bundle 1", "bundle 2"}, ev.log)
}

// SPEC A1: a callback added during a dispatch takes effect from the next one.
func TestRun_CallbackAddedDuringDispatch(t *testing.T) {
	r := hook.NewRegistry()
	added := false
	hook.Add(r, func(_ context.Context, ev *pingEvent) error {
		ev.log = append(ev.log, "first")
		if !added {
			added = true
			hook.Add(r, logTo(pingLog, "late"))
		}
		return nil
	})
	ev := &pingEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"first"}, ev.log)
	ev = &pingEvent{}
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Equal(t, []string{"first", "late"}, ev.log)
}

// SPEC I4: on an interruptible event every callback runs even after one has
// interrupted; the interrupts are collected in callback order.
func TestRun_InterruptibleAllCallbacksRun(t *testing.T) {
	r := hook.NewRegistry()
	hook.Add(r, func(_ context.Context, ev *gateEvent) error {
		ev.log = append(ev.log, "0")
		_, err := ev.Interrupt("a", "first")
		return err
	})
	hook.Add(r, func(_ context.Context, ev *gateEvent) error {
		ev.log = append(ev.log, "1")
		return nil
	})
	hook.Add(r, func(_ context.Context, ev *gateEvent) error {
		ev.log = append(ev.log, "2")
		_, err := ev.Interrupt("b", nil)
		return err
	})
	st := interrupt.NewState()
	ev := newGate(st)
	require.NoError(t, hook.Run(context.Background(), r, ev), "an interrupt is not an error of Run")
	assert.Equal(t, []string{"0", "1", "2"}, ev.log)
	raised := ev.scope.Raised()
	require.Len(t, raised, 2)
	assert.Equal(t, "gate:a", raised[0].ID)
	assert.Equal(t, "gate:b", raised[1].ID)
	assert.True(t, ev.scope.Interrupted())
	assert.Equal(t, 2, st.Len(), "recorded in the owner's state")
}

// SPEC I4: the same name from two callbacks is a *DuplicateNameError.
func TestRun_DuplicateNameError(t *testing.T) {
	third := 0
	r := hook.NewRegistry()
	same := func(_ context.Context, ev *gateEvent) error { _, err := ev.Interrupt("same", nil); return err }
	hook.Add(r, same)
	hook.Add(r, same)
	hook.Add(r, func(_ context.Context, ev *gateEvent) error { third++; return nil })
	err := hook.Run(context.Background(), r, newGate(interrupt.NewState()))
	require.Error(t, err)
	var dup *interrupt.DuplicateNameError
	require.ErrorAs(t, err, &dup)
	assert.Equal(t, "same", dup.Name)
	assert.ErrorIs(t, err, interrupt.ErrDuplicateName)
	assert.Equal(t, 0, third, "the clash stops the remaining callbacks")
}

// SPEC I4: a clash is reported even when the callback swallows its error.
func TestRun_DuplicateNameSwallowedStillError(t *testing.T) {
	r := hook.NewRegistry()
	hook.Add(r, func(_ context.Context, ev *gateEvent) error { _, err := ev.Interrupt("same", nil); return err })
	hook.Add(r, func(_ context.Context, ev *gateEvent) error { _, _ = ev.Interrupt("same", nil); return nil })
	err := hook.Run(context.Background(), r, newGate(interrupt.NewState()))
	var dup *interrupt.DuplicateNameError
	require.ErrorAs(t, err, &dup)
}

// SPEC I5: one callback may raise the same name again (the re-run of a
// resumed pass) without a clash.
func TestRun_SameCallbackSameNameIsNoClash(t *testing.T) {
	r := hook.NewRegistry()
	hook.Add(r, func(_ context.Context, ev *gateEvent) error {
		_, _ = ev.Interrupt("x", nil)
		_, err := ev.Interrupt("x", nil)
		return err
	})
	ev := newGate(interrupt.NewState())
	require.NoError(t, hook.Run(context.Background(), r, ev))
	assert.Len(t, ev.scope.Raised(), 1)
}

// SPEC I4: any other error stops the remaining callbacks and is returned.
func TestRun_PlainErrorStopsLaterCallbacks(t *testing.T) {
	boom := errors.New("boom")
	for _, ev := range []string{"plain", "interruptible"} {
		t.Run(ev, func(t *testing.T) {
			later := 0
			r := hook.NewRegistry()
			var err error
			if ev == "plain" {
				hook.Add(r, func(_ context.Context, e *pingEvent) error { return fmt.Errorf("wrapped: %w", boom) })
				hook.Add(r, func(_ context.Context, e *pingEvent) error { later++; return nil })
				err = hook.Run(context.Background(), r, &pingEvent{})
			} else {
				hook.Add(r, func(_ context.Context, e *gateEvent) error { _, err := e.Interrupt("a", nil); return err })
				hook.Add(r, func(_ context.Context, e *gateEvent) error { return boom })
				hook.Add(r, func(_ context.Context, e *gateEvent) error { later++; return nil })
				err = hook.Run(context.Background(), r, newGate(interrupt.NewState()))
			}
			assert.ErrorIs(t, err, boom)
			assert.Equal(t, 0, later)
		})
	}
}

// SPEC I4: an interrupt error that was not raised through the event's own
// scope is not swallowed: it stops the dispatch.
func TestRun_ForeignInterruptErrorIsReturned(t *testing.T) {
	other := interrupt.NewScope(interrupt.NewState(), interrupt.SourceHook, func(n string) string { return "other:" + n })
	_, foreign := other.Interrupt("elsewhere", nil)
	require.ErrorIs(t, foreign, interrupt.ErrInterrupted)
	later := 0
	r := hook.NewRegistry()
	hook.Add(r, func(_ context.Context, e *gateEvent) error { return foreign })
	hook.Add(r, func(_ context.Context, e *gateEvent) error { later++; return nil })
	err := hook.Run(context.Background(), r, newGate(interrupt.NewState()))
	assert.ErrorIs(t, err, interrupt.ErrInterrupted)
	assert.Equal(t, 0, later)

	r2 := hook.NewRegistry()
	hook.Add(r2, func(_ context.Context, e *pingEvent) error { return foreign })
	assert.ErrorIs(t, hook.Run(context.Background(), r2, &pingEvent{}), interrupt.ErrInterrupted,
		"an interrupt on a non-interruptible event is an error")
}

// SPEC A13, I4: a panicking callback becomes a *hook.PanicError and stops the rest.
func TestRun_PanicBecomesPanicError(t *testing.T) {
	later := 0
	r := hook.NewRegistry()
	hook.Add(r, func(_ context.Context, e *pingEvent) error { panic("kaboom") })
	hook.Add(r, func(_ context.Context, e *pingEvent) error { later++; return nil })
	err := hook.Run(context.Background(), r, &pingEvent{})
	require.Error(t, err)
	var pe *hook.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "kaboom", pe.Value)
	assert.Equal(t, "pingEvent", pe.Event)
	assert.Contains(t, err.Error(), "panicked")
	assert.Equal(t, 0, later)
}

// SPEC A1: Has reports registered callbacks per event type.
func TestHas(t *testing.T) {
	r := hook.NewRegistry()
	assert.False(t, hook.Has[pingEvent](r))
	hook.Add(r, logTo(pingLog, "x"))
	assert.True(t, hook.Has[pingEvent](r))
	assert.False(t, hook.Has[pongEvent](r))
	assert.False(t, hook.Has[pingEvent](nil))
}

// Check names the first event type with callbacks that the owner never
// fires, with the owner and the hint; callbacks only for fired events pass.
func TestCheck_NamesTheFirstEventTypeItsOwnerNeverFires(t *testing.T) {
	type fired struct{}
	type other struct{}
	r := hook.NewRegistry(hook.Func(func(context.Context, *fired) error { return nil }))
	require.NoError(t, r.Check("thing", "", reflect.TypeFor[fired]()))
	require.NoError(t, hook.NewRegistry().Check("thing", ""))

	hook.Add(r, func(context.Context, *other) error { return nil })
	err := r.Check("thing", "give it elsewhere", reflect.TypeFor[fired]())
	require.ErrorIs(t, err, hook.ErrNotFired)
	var nf *hook.NotFiredError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, reflect.TypeFor[other](), nf.Event)
	assert.Equal(t, "thing", nf.Owner)
	assert.Contains(t, err.Error(), "hook_test.other")
	assert.Contains(t, err.Error(), "a thing fires none (give it elsewhere)")
}

// The refusal reads as a sentence whatever the owner's name: "an" before a
// vowel ("an agent"), "a" otherwise ("a graph", "a swarm").
func TestNotFiredError_NamesTheOwnerWithItsArticle(t *testing.T) {
	type other struct{}
	r := hook.NewRegistry(hook.Func(func(context.Context, *other) error { return nil }))
	for owner, want := range map[string]string{
		"agent": "an agent fires none",
		"graph": "a graph fires none",
		"swarm": "a swarm fires none",
	} {
		err := r.Check(owner, "")
		require.ErrorIs(t, err, hook.ErrNotFired)
		assert.Contains(t, err.Error(), want, owner)
	}
}
