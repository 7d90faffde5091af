package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// NestedRunner runs a nested orchestrator (a Graph or Swarm inside
// another) as a node: its run's status is the node's, its interrupts
// (ids carrying the node's path) are the node's, and answers routed to
// the node resume it.
type NestedRunner struct{ O *Orchestrator }

// RunNode implements actors.NodeRunner: the nested run's status is the
// node's, and so are its interrupts.
func (r *NestedRunner) RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	return r.runNode(ctx, run, nil)
}

// StreamNode implements actors.StreamingRunner: the nested run's events
// (their node paths name the nested nodes) go to emit.
func (r *NestedRunner) StreamNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	return r.runNode(ctx, run, emit)
}

func (r *NestedRunner) runNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult {
	in := run.GetInput()
	fresh := !run.GetRecover() && !run.GetResume()
	if run.GetRecover() {
		st, err := r.O.Status(ctx)
		if err != nil {
			return failedLocal(ctx, run.GetNodeId(), err)
		}
		status := st.GetStatus()
		switch {
		case run.UnfinishedSince != nil && !in.GetResume() && len(in.GetMessages()) > 0 && int64(st.GetProgress()) <= run.GetBase() &&
			(status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || status == braidv1.NodeStatus_NODE_STATUS_EXECUTING):
			// A prompt's run, given while the nested orchestrator may have
			// held the unfinished run of a parent's run that is over, cut
			// off before the nested one began anything (its progress is
			// where it was at the launch): the run it holds is the dead
			// one, and the prompt starts a fresh one.
			fresh = true
		case status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
			// The cut-off run may be a resume the nested run had not taken
			// yet: the answers to its open interrupts go on; none left, its
			// interrupts are the node's.
			if in = pendingAnswers(in, st); in == nil {
				return nestedResult(ctx, st, Locals{})
			}
		case status == braidv1.NodeStatus_NODE_STATUS_EXECUTING:
			in = &braidv1.AgentInput{} // carry the cut-off run on
		case status == braidv1.NodeStatus_NODE_STATUS_PENDING:
		default:
			if int64(st.GetProgress()) > run.GetBase() {
				return nestedResult(ctx, st, Locals{}) // the nested run ended after the crash cut its parent off
			}
		}
	}
	if !run.GetRecover() && in.GetResume() && len(in.GetResponses()) == 0 {
		// Run again for its gate's answers alone (SPEC M6): nothing for
		// the nested run, which still waits for its own.
		st, err := r.O.Status(ctx)
		if err != nil {
			return failedLocal(ctx, run.GetNodeId(), err)
		}
		if st.GetStatus() == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
			return nestedResult(ctx, st, Locals{})
		}
	}
	// A prompt to a nested orchestrator whose run is unfinished (it waits
	// for answers, or was cut off) from a parent's run that is over: that
	// run is dropped, and the prompt starts a fresh one.
	res, locals, err := r.call(ctx, in, fresh, emit)
	if err != nil && r.stale(ctx, err) {
		// The nested orchestrator's run was stale (loaded before another
		// runtime ran this node): it refused the input or lost its first
		// save, running no node, and holds the stored run now, which
		// this run goes on from.
		res, locals, err = r.call(ctx, in, fresh, emit)
	}
	if err != nil {
		return failedLocal(ctx, run.GetNodeId(), err)
	}
	setLocals(ctx, locals)
	return nestedResult(ctx, res, locals)
}

// failedLocal is FailedResult, with err handed to the node run's
// in-process callers (SetLocalError).
func failedLocal(ctx context.Context, node string, err error) *braidv1.NodeResult {
	SetLocalError(ctx, err)
	return FailedResult(node, err)
}

// stale reports whether the nested run failed only because the nested
// orchestrator's state was stale, so that it may run again: it refused
// the input for its interrupt state and found another writer's save (a
// Checked *persistence.ConflictError), or its first save was lost to one
// (staleStartError); either way no node of it ran, and it took the
// stored run. The parent launched this run after a save of its own (its
// claim on the run, SPEC S4) and routes the input by the run it holds,
// so the input is the stored run's to judge; no other writer runs the
// node meanwhile.
func (r *NestedRunner) stale(ctx context.Context, err error) bool {
	var ce *persistence.ConflictError
	var ss *staleStartError
	return ctx.Err() == nil && (errors.As(err, &ss) || errors.As(err, &ce) && ce.Checked)
}

// pendingAnswers is the part of a resume's input that answers interrupts
// st still waits on, or nil when it answers none of them.
func pendingAnswers(in *braidv1.AgentInput, st *braidv1.MultiAgentResult) *braidv1.AgentInput {
	open := make(map[string]bool, len(st.GetInterrupts()))
	for _, w := range st.GetInterrupts() {
		open[w.GetId()] = true
	}
	out := &braidv1.AgentInput{Resume: true}
	for _, w := range in.GetResponses() {
		if open[w.GetInterruptId()] {
			out.Responses = append(out.Responses, w)
		}
	}
	if len(out.Responses) == 0 {
		return nil
	}
	return out
}

// call runs the nested orchestrator on in and waits for its result. When
// ctx ends first (the parent's Cancel, its NodeTimeout), the nested run
// is cancelled and waited for: nothing of it goes on behind its parent's
// back, and its result (CANCELLED, or what its nodes ended with) is the
// node's. When ctx ends with ErrCutOff (the parent closes or stops), the
// nested run is not cancelled but cut off with it: the parent closes it
// next, and a later activation carries both on.
func (r *NestedRunner) call(ctx context.Context, in *braidv1.AgentInput, fresh bool, emit func(*braidv1.MultiAgentEvent)) (*braidv1.MultiAgentResult, Locals, error) {
	o := r.O
	if o.isClosed() {
		return nil, Locals{}, ErrOrchestratorClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, Locals{}, err // ended before the run began: nothing to stop
	}
	cancel := func() { o.binding.Send(&orchCancel{reply: make(chan bool, 1)}) } // after the invocation: same sender
	if emit == nil {
		reply := make(chan orchReply, 1)
		o.binding.Send(&orchInvoke{in: in, reply: reply, caller: withRun(ctx, o), fresh: fresh})
		select {
		case rep := <-reply:
			return rep.res, rep.locals, rep.err
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, ErrCutOff) {
				return nil, Locals{}, cause // not cancelled: cut off with its parent
			}
			cancel()
		}
		rep, err := o.wait(context.Background(), reply)
		return rep.res, rep.locals, err
	}
	// first waits with ctx, then (cancelled) until the run ends; a Close
	// of the nested orchestrator ends either wait.
	wait, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	first, stopFirst := context.WithCancelCause(ctx)
	defer stopFirst(nil)
	go func() {
		select {
		case <-o.closed:
			stopFirst(ErrOrchestratorClosed)
			stop(ErrOrchestratorClosed)
		case <-wait.Done():
		}
	}()
	inbox := NewInbox(o.sys)
	defer inbox.Close()
	o.binding.Send(&orchInvoke{in: in, events: inbox.PID(), caller: withRun(ctx, o), fresh: fresh})
	rctx, cancelled := first, false
	for {
		m, err := inbox.Receive(rctx)
		if err != nil {
			if cause := context.Cause(rctx); errors.Is(cause, ErrOrchestratorClosed) {
				return nil, Locals{}, cause
			}
			if cause := context.Cause(ctx); errors.Is(cause, ErrCutOff) {
				return nil, Locals{}, cause // not cancelled: cut off with its parent
			}
			if !cancelled && ctx.Err() != nil {
				cancel()
				rctx, cancelled = wait, true
				continue
			}
			return nil, Locals{}, err
		}
		switch m := m.(type) {
		case *braidv1.MultiAgentEvent:
			if m.GetInterrupt() == nil { // the outer orchestrator streams them after its save
				emit(m)
			}
		case *localEvent: // a NodeStop with its Go errors
			emitLocal(ctx, emit, m.ev, m.locals)
		case *streamEnd:
			return m.res, m.locals, m.err
		}
	}
}

// nestedResult is the node result of the nested run res. Its usage is
// res's last invocation's (SPEC M7): the parent sums a node's runs, and
// the nested run's own usage grows over its invocations, so each token is
// counted once. After a crash, the last invocation is the one the
// parent's cut-off call began (carried on, or ended before the parent
// heard of it), which the parent never counted.
// A FAILED run's error is nestedFailure's, whose Go form goes to the node
// run's in-process callers (SetLocalError); locals are the nested run's.
func nestedResult(ctx context.Context, res *braidv1.MultiAgentResult, locals Locals) *braidv1.NodeResult {
	usage := res.GetInvocationUsage()
	if usage == nil { // an orchestrator of an earlier build
		usage = res.GetUsage()
	}
	out := &braidv1.NodeResult{Status: res.GetStatus(), Result: &braidv1.NodeResult_MultiAgent{MultiAgent: res}, Usage: usage}
	switch out.Status {
	case braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
		out.Interrupts = res.GetInterrupts()
	case braidv1.NodeStatus_NODE_STATUS_FAILED:
		err := nestedFailure(res, locals)
		SetLocalError(ctx, err)
		out.Error = DefaultCodec().Encode(err)
	case braidv1.NodeStatus_NODE_STATUS_CANCELLED:
		out.Message = nestedCancel(res)
	}
	return out
}

// nestedCancel is the message of a node whose nested run was CANCELLED
// (a cancelled node has one, SPEC M7): the first cancelled node's, with
// its id ("" when none says why).
func nestedCancel(res *braidv1.MultiAgentResult) string {
	for _, n := range res.GetResults() {
		if n.GetStatus() == braidv1.NodeStatus_NODE_STATUS_CANCELLED && n.GetMessage() != "" {
			return fmt.Sprintf("node %q: %s", n.GetNodeId(), n.GetMessage())
		}
	}
	return ""
}

// nestedFailure is the error of a node whose nested run FAILED (a failed
// node has an error, SPEC M7): it matches ErrNodeFailed and says why, by
// the nested run's message (a limit, a timeout) or else by the error of
// its first failed node, which it wraps when locals hold that error's Go
// form (the nested run ran in this process): errors.Is and errors.As
// reach it from the parent's caller, and the text is the same either way.
func nestedFailure(res *braidv1.MultiAgentResult, locals Locals) error {
	if why := res.GetMessage(); why != "" {
		return fmt.Errorf("%w: %s", ErrNodeFailed, why)
	}
	for _, n := range res.GetResults() {
		if n.GetStatus() == braidv1.NodeStatus_NODE_STATUS_FAILED {
			if err := locals.Error(n.GetError()); err != nil {
				return fmt.Errorf("%w: node %q: %w", ErrNodeFailed, n.GetNodeId(), err)
			}
			return fmt.Errorf("%w: node %q: %s", ErrNodeFailed, n.GetNodeId(), n.GetError().GetMessage())
		}
	}
	return ErrNodeFailed
}

// Progress implements actors.NodeRunner: the nested orchestrator's
// progress counter.
func (r *NestedRunner) Progress(ctx context.Context) (int64, error) {
	st, err := r.O.Status(ctx)
	if err != nil {
		return 0, err
	}
	return int64(st.GetProgress()), nil
}

// Close implements actors.NodeRunner.
func (r *NestedRunner) Close(ctx context.Context) error { return r.O.Close(ctx) }
