// Package hook is Braid's typed hook registry. Callbacks are registered per
// event type with Add (or bundled by a Provider) and dispatched with Run.
//
// Dispatch rules:
//   - callbacks run in registration order; events that implement Reversed
//     (the After* events) run them in reverse order;
//   - on an Interruptible event every callback runs even after one has
//     interrupted, their interrupts are collected in callback order, and a
//     name used by two callbacks is an error (SPEC I4);
//   - any other error from a callback, or a panic, stops the remaining
//     callbacks and is returned.
//
// The event types themselves live with the component that fires them
// (package agent for the agent loop, package multiagent for orchestrators).
// An owner refuses, when it is built, a callback for an event type it never
// fires (Registry.Check, ErrNotFired): an agent's BeforeToolCallEvent
// approval given to a graph would otherwise never run. It refuses as well
// a registry a nil callback was added to (ErrNilCallback), and a config
// refuses a nil provider (Missing): a hook left out by mistake would leave
// what it guards unguarded.
package hook
