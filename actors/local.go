package actors

import (
	"context"

	"github.com/braidhq/braid/proto/braidv1"
)

// Locals are the in-process forms of what a run's protobuf result
// carries, for a Go caller in the orchestrator's process (SPEC R2: what
// crosses a process is the protobuf form alone, and nothing behaves
// otherwise; in process, the caller is spared the decoding and gets what
// the wire form cannot carry). Each is keyed by the protobuf value it
// stands for, so a value a node result no longer holds (replaced by a
// timeout's failure, a cancel) is never taken for it; a nested run's
// own Locals are merged in, so its node results and errors are found
// too. A Locals from InvokeLocal is the caller's; the zero Locals has
// none.
type Locals struct {
	// Results are the runners' in-process results (SetLocalResult; for
	// an agent node its *agent.Result), by the node result they stand
	// for.
	Results map[*braidv1.NodeResult]any
	// Errors are the Go errors of FAILED node results (SetLocalError, the
	// orchestrator's own failures of a node), by their wire form: their
	// messages are the wire form's, and errors.Is and errors.As reach
	// everything they wrap, the user's own errors included.
	Errors map[*braidv1.Error]error
}

// Error returns the Go error w stands for, or nil when there is none
// or its message is not w's.
func (l Locals) Error(w *braidv1.Error) error {
	if w == nil {
		return nil
	}
	if err := l.Errors[w]; err != nil && err.Error() == w.GetMessage() {
		return err
	}
	return nil
}

func (l Locals) empty() bool { return len(l.Results) == 0 && len(l.Errors) == 0 }

// addResult records v as the in-process form of r.
func (l *Locals) addResult(r *braidv1.NodeResult, v any) {
	if r == nil || v == nil {
		return
	}
	if l.Results == nil {
		l.Results = make(map[*braidv1.NodeResult]any)
	}
	l.Results[r] = v
}

// addError records err as the Go form of w.
func (l *Locals) addError(w *braidv1.Error, err error) {
	if w == nil || err == nil {
		return
	}
	if l.Errors == nil {
		l.Errors = make(map[*braidv1.Error]error)
	}
	l.Errors[w] = err
}

// merge adds every value of o to l.
func (l *Locals) merge(o Locals) {
	for r, v := range o.Results {
		l.addResult(r, v)
	}
	for w, err := range o.Errors {
		l.addError(w, err)
	}
}

// setLocals merges l into the in-process forms of the running node
// run's result (a nested run's own); outside a node run it does nothing.
func setLocals(ctx context.Context, l Locals) {
	if o, ok := ctx.Value(localOutKey{}).(*localOut); ok {
		o.locals.merge(l)
	}
}

// localEvent is an event of a run streamed in process, sent instead of
// the bare event when the event carries FAILED node results whose Go
// errors are known: locals holds them, keyed by the event's own
// braidv1.Error values. A receiver of the protobuf form (another process,
// Orchestrator.Stream's yield) gets ev alone.
type localEvent struct {
	ev     *braidv1.MultiAgentEvent
	locals Locals
}

// eventErrors returns the Go errors of l that stand for the errors of r
// and of its nested run's results at any depth, keyed by the errors of
// c, a copy of r (cloneResult): what an event carrying c needs.
func eventErrors(r, c *braidv1.NodeResult, l Locals) Locals {
	var out Locals
	out.copyErrors(r, c, l)
	return out
}

func (o *Locals) copyErrors(r, c *braidv1.NodeResult, from Locals) {
	if err := from.Error(r.GetError()); err != nil {
		o.addError(c.GetError(), err)
	}
	rs, cs := r.GetMultiAgent().GetResults(), c.GetMultiAgent().GetResults()
	for i := range min(len(rs), len(cs)) {
		o.copyErrors(rs[i], cs[i], from)
	}
}
