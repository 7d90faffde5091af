package actors

import (
	"context"

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
	if run.GetRecover() {
		st, err := r.O.Status(ctx)
		if err != nil {
			return FailedResult(run.GetNodeId(), err)
		}
		switch st.GetStatus() {
		case braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
			return nestedResult(st)
		case braidv1.NodeStatus_NODE_STATUS_EXECUTING:
			in = &braidv1.AgentInput{} // carry the cut-off run on
		case braidv1.NodeStatus_NODE_STATUS_PENDING:
		default:
			if int64(st.GetProgress()) > run.GetBase() {
				return nestedResult(st) // the nested run ended after the crash cut its parent off
			}
		}
	}
	var res *braidv1.MultiAgentResult
	var err error
	if emit == nil {
		res, err = r.O.Invoke(ctx, in)
	} else {
		res, err = r.O.Stream(ctx, in, func(ev *braidv1.MultiAgentEvent) bool {
			if ev.GetInterrupt() == nil { // the outer orchestrator streams them after its save
				emit(ev)
			}
			return true
		})
	}
	if err != nil {
		return FailedResult(run.GetNodeId(), err)
	}
	return nestedResult(res)
}

func nestedResult(res *braidv1.MultiAgentResult) *braidv1.NodeResult {
	out := &braidv1.NodeResult{Status: res.GetStatus(), Result: &braidv1.NodeResult_MultiAgent{MultiAgent: res}, Usage: res.GetUsage()}
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
