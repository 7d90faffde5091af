package hook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/interrupt"
)

// Callback handles one event type.
type Callback[E any] func(ctx context.Context, ev *E) error

// Reversed is implemented by events whose callbacks run in reverse
// registration order (the After* events).
type Reversed interface {
	HookReversed()
}

// Interruptible is implemented by events whose callbacks may raise
// interrupts. The scope is where they are recorded.
type Interruptible interface {
	InterruptScope() *interrupt.Scope
}

// Provider registers a bundle of callbacks (the Strands HookProvider).
type Provider interface {
	RegisterHooks(r *Registry)
}

// ProviderFunc adapts a function to a Provider.
type ProviderFunc func(r *Registry)

// RegisterHooks calls f; a nil f registers nothing.
func (f ProviderFunc) RegisterHooks(r *Registry) {
	if f != nil {
		f(r)
	}
}

// Func returns a Provider that registers one callback. For a nil fn it
// returns a nil ProviderFunc, which the agent, graph and swarm configs
// refuse (see Missing).
func Func[E any](fn Callback[E]) Provider {
	if fn == nil {
		return ProviderFunc(nil)
	}
	return ProviderFunc(func(r *Registry) { Add(r, fn) })
}

// Missing returns the index of the first provider of ps that is nil (a
// nil interface, or one holding a nil pointer, function or channel, such as
// Func(nil)), or -1. Configs refuse such a provider rather than run
// without it: a hook left out by mistake would leave what it guards (an
// approval, say) unguarded. A nil slice or map of a provider type is an
// empty bundle, not a hook left out: it is not Missing.
func Missing(ps []Provider) int {
	for i, p := range ps {
		if p == nil {
			return i
		}
		switch v := reflect.ValueOf(p); v.Kind() {
		case reflect.Pointer, reflect.Func, reflect.Chan:
			if v.IsNil() {
				return i
			}
		}
	}
	return -1
}

// Registry holds callbacks by event type. It is safe for concurrent use;
// callbacks added while an event is being dispatched take effect from the
// next dispatch.
type Registry struct {
	mu sync.RWMutex
	// byType holds the callbacks of each event type, in registration
	// order. A list, not a map: an agent registers a handful of types,
	// which a scan finds as fast as a map and in a fraction of its memory.
	byType []typeCallbacks
	// nilFor holds the event types a nil callback was added for (Add),
	// which Check refuses.
	nilFor []reflect.Type
}

type typeCallbacks struct {
	t   reflect.Type
	cbs []any
}

// callbacks returns the callbacks for t. The caller holds mu.
func (r *Registry) callbacks(t reflect.Type) []any {
	for i := range r.byType {
		if r.byType[i].t == t {
			return r.byType[i].cbs
		}
	}
	return nil
}

// NewRegistry returns an empty registry, with the providers registered.
func NewRegistry(providers ...Provider) *Registry {
	r := &Registry{}
	for _, p := range providers {
		if p != nil {
			p.RegisterHooks(r)
		}
	}
	return r
}

// Add registers fn for events of type E. A nil fn (a hook left out by
// mistake, such as a provider's callback field not set) registers no
// callback, and the registry remembers it: Check then fails with a
// *NilCallbackError, so that the owner refuses the registry rather than
// run without the hook.
func Add[E any](r *Registry, fn Callback[E]) {
	t := reflect.TypeFor[E]()
	r.mu.Lock()
	defer r.mu.Unlock()
	if fn == nil {
		if !slices.Contains(r.nilFor, t) {
			r.nilFor = append(r.nilFor, t)
		}
		return
	}
	for i := range r.byType {
		if r.byType[i].t == t {
			// A new slice, not an append in place: Run reads the old one
			// without the lock.
			cbs := make([]any, len(r.byType[i].cbs), len(r.byType[i].cbs)+1)
			copy(cbs, r.byType[i].cbs)
			r.byType[i].cbs = append(cbs, fn)
			return
		}
	}
	r.byType = append(r.byType, typeCallbacks{t: t, cbs: []any{fn}})
}

// Has reports whether any callback is registered for E.
func Has[E any](r *Registry) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.callbacks(reflect.TypeFor[E]())) > 0
}

// ErrNilCallback reports that a nil callback was added to a registry
// (Add): a hook left out by mistake, which Check refuses rather than let
// what it guards run unguarded.
var ErrNilCallback = errors.New("a nil callback was added")

// NilCallbackError is the error of Check for a registry a nil callback
// was added to: the event type it was added for, and the owner.
type NilCallbackError struct {
	Event reflect.Type
	Owner string
}

func (e *NilCallbackError) Error() string {
	return fmt.Sprintf("hook for %s: %s to the %s's hooks (a hook left out would leave what it guards unguarded)", e.Event, ErrNilCallback, e.Owner)
}

func (e *NilCallbackError) Unwrap() error { return ErrNilCallback }

// ErrNotFired reports that a callback is registered for an event type that
// the owner it was given to never fires (an agent's BeforeToolCallEvent
// given to a graph, say): it would never run, and an approval it implements
// would be skipped without a word.
var ErrNotFired = errors.New("the owner never fires this event")

// NotFiredError is the error of Check: the event type with callbacks, the
// owner that never fires it, and where such a hook belongs.
type NotFiredError struct {
	Event reflect.Type
	Owner string
	Hint  string
}

func (e *NotFiredError) Error() string {
	article := "a"
	if e.Owner != "" && strings.ContainsRune("aeiouAEIOU", rune(e.Owner[0])) {
		article = "an"
	}
	msg := fmt.Sprintf("hook for %s: %s: %s %s fires none", e.Event, ErrNotFired, article, e.Owner)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *NotFiredError) Unwrap() error { return ErrNotFired }

// Check returns a *NilCallbackError when a nil callback was added to r
// (Add), naming the first event type one was added for; otherwise a
// *NotFiredError for the first event type, in registration order, that
// has callbacks in r and is not one of fired (the events of owner,
// described by hint). Owners check their registry when they are built.
func (r *Registry) Check(owner, hint string, fired ...reflect.Type) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.nilFor) > 0 {
		return &NilCallbackError{Event: r.nilFor[0], Owner: owner}
	}
	for _, tc := range r.byType {
		if !slices.Contains(fired, tc.t) {
			return &NotFiredError{Event: tc.t, Owner: owner, Hint: hint}
		}
	}
	return nil
}

// PanicError is the error of a callback that panicked.
type PanicError struct {
	Event string
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("hook for %s panicked: %v", e.Event, e.Value) }

// ErrForeignInterrupt reports that a callback returned an interrupt error
// that was not raised through the event it handles.
var ErrForeignInterrupt = errors.New("callback returned an interrupt not raised on this event")

// Run dispatches ev to the callbacks registered for E, by the rules in the
// package doc. For an Interruptible event, a nil error with interrupts
// recorded in its scope means "stop for those interrupts"; the caller reads
// them from the scope.
func Run[E any](ctx context.Context, r *Registry, ev *E) error {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	cbs := r.callbacks(reflect.TypeFor[E]())
	r.mu.RUnlock()
	if len(cbs) == 0 {
		return nil
	}
	_, reversed := any(ev).(Reversed)
	var scope *interrupt.Scope
	if ie, ok := any(ev).(Interruptible); ok {
		scope = ie.InterruptScope()
	}
	n := len(cbs)
	for k := 0; k < n; k++ {
		i := k
		if reversed {
			i = n - 1 - k
		}
		if scope != nil {
			scope.BeginCallback(i)
		}
		err := call(ctx, cbs[i].(Callback[E]), ev)
		if err == nil {
			continue
		}
		if scope != nil && errors.Is(err, interrupt.ErrInterrupted) && raisedHere(scope, err) {
			continue
		}
		return err
	}
	if scope != nil {
		return scope.Err()
	}
	return nil
}

func raisedHere(scope *interrupt.Scope, err error) bool {
	var re *interrupt.RaisedError
	if !errors.As(err, &re) {
		return false
	}
	for _, in := range scope.Raised() {
		if in.ID == re.Interrupt.ID {
			return true
		}
	}
	return false
}

func call[E any](ctx context.Context, cb Callback[E], ev *E) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Event: reflect.TypeFor[E]().Name(), Value: r}
		}
	}()
	return cb(ctx, ev)
}
