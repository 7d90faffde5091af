package actors

import (
	"context"
	"errors"

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
	// The nested run's usage grows over its invocations (a fresh run
	// resets it); the node reports what this call added (SPEC M7), so
	// that its parent, which sums a node's runs, counts each token once.
	var before *braidv1.Usage
	if run.GetRecover() {
		st, err := r.O.Status(ctx)
		if err != nil {
			return FailedResult(run.GetNodeId(), err)
		}
		switch st.GetStatus() {
		case braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
			// The cut-off run may be a resume the nested run had not taken
			// yet: the answers to its open interrupts go on; none left, its
			// interrupts are the node's.
			if in = pendingAnswers(in, st); in == nil {
				return nestedResult(st, nil)
			}
			before = st.GetUsage()
		case braidv1.NodeStatus_NODE_STATUS_EXECUTING:
			in = &braidv1.AgentInput{} // carry the cut-off run on
			before = st.GetUsage()
		case braidv1.NodeStatus_NODE_STATUS_PENDING:
		default:
			if int64(st.GetProgress()) > run.GetBase() {
				return nestedResult(st, nil) // the nested run ended after the crash cut its parent off
			}
		}
	} else if len(in.GetMessages()) == 0 { // a resume: the run goes on from its usage so far
		st, err := r.O.Status(ctx)
		if err != nil {
			return FailedResult(run.GetNodeId(), err)
		}
		before = st.GetUsage()
	}
	res, err := r.call(ctx, in, emit)
	if err != nil {
		return FailedResult(run.GetNodeId(), err)
	}
	return nestedResult(res, before)
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
// node's.
func (r *NestedRunner) call(ctx context.Context, in *braidv1.AgentInput, emit func(*braidv1.MultiAgentEvent)) (*braidv1.MultiAgentResult, error) {
	o := r.O
	if o.isClosed() {
		return nil, ErrOrchestratorClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err // ended before the run began: nothing to stop
	}
	cancel := func() { o.binding.Send(&orchCancel{reply: make(chan bool, 1)}) } // after the invocation: same sender
	if emit == nil {
		reply := make(chan orchReply, 1)
		o.binding.Send(&orchInvoke{in: in, reply: reply, caller: withRun(ctx, o)})
		select {
		case rep := <-reply:
			return rep.res, rep.err
		case <-ctx.Done():
			cancel()
		}
		rep, err := o.wait(context.Background(), reply)
		return rep.res, err
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
	o.binding.Send(&orchInvoke{in: in, events: inbox.PID(), caller: withRun(ctx, o)})
	rctx, cancelled := first, false
	for {
		m, err := inbox.Receive(rctx)
		if err != nil {
			if cause := context.Cause(rctx); errors.Is(cause, ErrOrchestratorClosed) {
				return nil, cause
			}
			if !cancelled && ctx.Err() != nil {
				cancel()
				rctx, cancelled = wait, true
				continue
			}
			return nil, err
		}
		switch m := m.(type) {
		case *braidv1.MultiAgentEvent:
			if m.GetInterrupt() == nil { // the outer orchestrator streams them after its save
				emit(m)
			}
		case *streamEnd:
			return m.res, m.err
		}
	}
}

// nestedResult is the node result of the nested run res; its usage is what
// res's grew by since before (nil: all of it). A node result taken from a
// recovered run's status (no call) reports the run's usage whole: what the
// parent counted of it before the crash is not known.
func nestedResult(res *braidv1.MultiAgentResult, before *braidv1.Usage) *braidv1.NodeResult {
	u := res.GetUsage()
	usage := &braidv1.Usage{InputTokens: u.GetInputTokens() - before.GetInputTokens(),
		OutputTokens: u.GetOutputTokens() - before.GetOutputTokens(), TotalTokens: u.GetTotalTokens() - before.GetTotalTokens()}
	out := &braidv1.NodeResult{Status: res.GetStatus(), Result: &braidv1.NodeResult_MultiAgent{MultiAgent: res}, Usage: usage}
	if out.Status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		out.Interrupts = res.GetInterrupts()
	}
	return out
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
