package actors

import (
	"context"
	"errors"
)

// ErrReentrant is returned when a node or hook of an orchestrator's run (or
// of a node nested in it, at any depth, agents' tools included) asks that
// same orchestrator for an invocation. The invocation would wait for the
// run, which waits for the node: a deadlock. Status and Cancel are answered
// while a run goes on; new work waits until the invocation returns.
var ErrReentrant = errors.New("an orchestrator's own node or hook cannot invoke it while it runs: read it with Status, or invoke it again once the run returns")

// runKey is the context key of a runChain.
type runKey struct{}

// runChain is the orchestrators an invocation's work runs for: its own,
// then, up the chain, the orchestrator whose node or hook asked for it,
// and so on. It reaches nodes and hooks as one of the caller's values
// (WithCallerValues), and through them the agents and nested
// orchestrators they call.
type runChain struct {
	o  *Orchestrator
	up *runChain
}

// runsIn reports whether ctx is the context of work done for a run of o.
func runsIn(ctx context.Context, o *Orchestrator) bool {
	c, _ := ctx.Value(runKey{}).(*runChain)
	for ; c != nil; c = c.up {
		if c.o == o {
			return true
		}
	}
	return false
}

// withRun returns the caller's context for an invocation of o: ctx, with
// o added to the chain of runs it is part of.
func withRun(ctx context.Context, o *Orchestrator) context.Context {
	up, _ := ctx.Value(runKey{}).(*runChain)
	return context.WithValue(ctx, runKey{}, &runChain{o: o, up: up})
}
