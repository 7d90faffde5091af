package multiagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/runorder"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// NodeResult is the result of one node (SPEC M7). Exactly one of Agent,
// Multi and Content is set for a node that ran to an end; Err is set for
// a FAILED node, Message for a CANCELLED one.
type NodeResult struct {
	NodeID string
	Status Status
	// Agent is the result of an agent node's last run.
	Agent *agent.Result
	// Multi is the result of a nested Graph or Swarm.
	Multi *Result
	// Content is a function node's output.
	Content []model.ContentBlock
	// Err is a FAILED node's error. Its message is the one its protobuf
	// form carries. In the process that ran the node (the result of
	// Invoke or Stream, a Stream's NodeStopEvent) it is the Go error the node failed with
	// (actors.SetLocalError), so errors.Is and errors.As reach everything
	// it wraps, the user's own errors included; decoded from the wire
	// (another process, Status, a hook's event, a run restored from the
	// store) it matches actors.ErrRemote and only the sentinels and typed
	// errors Braid's codecs know (actors.ErrorCodec).
	Err     error
	Message string
	// Duration is the node's execution time and Usage its model usage,
	// each summed over its runs (an interrupted run and its resume are two).
	Duration       time.Duration
	Usage          model.Usage
	Interrupts     []interrupt.Interrupt
	ExecutionCount int
	// Handoff is the handoff a Swarm node's agent asked for (nil: none).
	Handoff *Handoff
}

// Handoff is a Swarm agent's handoff_to_agent call.
type Handoff struct {
	To, Message string
	// Context is the JSON object the agent passed (nil: none).
	Context json.RawMessage
}

// Text returns the node's output as text: the agent's last message, the
// nested run's final node texts, or the function's text blocks.
func (r *NodeResult) Text() string {
	switch {
	case r == nil:
		return ""
	case r.Agent != nil:
		return r.Agent.Message.Text()
	case r.Multi != nil:
		return r.Multi.Text()
	}
	var b strings.Builder
	for _, c := range r.Content {
		if c.Text != nil {
			b.WriteString(*c.Text)
		}
	}
	return b.String()
}

// Result is the result of a Graph or Swarm run (SPEC M7).
type Result struct {
	Status Status
	// Results are the node results in the order the nodes first finished;
	// in a Status while the run goes on, the nodes that run are listed
	// EXECUTING, those in their first run last.
	Results []*NodeResult
	// ExecutionOrder lists the nodes in the order their runs ended (a node
	// run twice appears twice; a run interrupted and then resumed is one;
	// a node a BeforeNodeCall hook cancelled, or whose BeforeNodeCall
	// hook failed, did not run and is not listed). For a Swarm it is the
	// node history.
	ExecutionOrder []string
	ExecutionCount int
	// CompletedNodes, FailedNodes and InterruptedNodes count the nodes by
	// their status (a Graph's counts).
	CompletedNodes, FailedNodes, InterruptedNodes int
	// Duration is the run's execution time summed across resumes; the
	// time spent waiting for answers is not counted.
	Duration time.Duration
	// Usage is the run's model usage, summed across resumes;
	// InvocationUsage is the last invocation's alone (one that carried on
	// a run cut off by a crash counts from where the cut-off one began).
	Usage, InvocationUsage model.Usage
	// Interrupts lists every unanswered interrupt of the run in the order
	// raised (SPEC I8); answer them with agent.Resume. A FAILED run is
	// over and lists none, even when one of its nodes was interrupted
	// when another failed (that node's NodeResult still shows it); a
	// resume of it is refused with interrupt.ErrNotInterrupted.
	Interrupts []interrupt.Interrupt
	// Message says why a FAILED run stopped (a limit or a timeout).
	Message string
}

// Node returns the result of node id, or nil.
func (r *Result) Node(id string) *NodeResult {
	for _, n := range r.Results {
		if n.NodeID == id {
			return n
		}
	}
	return nil
}

// Text returns the text of the last node that completed: the last node
// of ExecutionOrder (the order runs ended) whose status is COMPLETED, so
// that a node run again (a swarm's a → b → a, a graph's back edge) gives
// its last answer. A result without an execution order falls back to
// Results.
func (r *Result) Text() string {
	if r == nil {
		return ""
	}
	n, _ := runorder.LastCompleted(r.ExecutionOrder, r.Results, func(n *NodeResult) string { return n.NodeID },
		func(n *NodeResult) bool { return n.Status == StatusCompleted })
	return n.Text()
}

// Interrupted reports whether the run waits for interrupt responses.
func (r *Result) Interrupted() bool { return r != nil && r.Status == StatusInterrupted }

// ResultFromWire converts a run's protobuf result. A node's error is
// decoded from its wire form: it has the sender's message and matches
// the sentinels and typed errors its codes name (agent.ErrorFromWire).
func ResultFromWire(w *braidv1.MultiAgentResult) (*Result, error) {
	return ResultFromWireLocal(w, actors.Locals{})
}

// ResultFromWireLocal converts a run's protobuf result, taking from locals
// (what an orchestrator of this process gave beside it, see
// actors.Orchestrator.InvokeLocal) instead of decoding: an agent node's
// result (the *agent.Result its runner gave, actors.SetLocalResult), and
// a FAILED node's error, which is then the Go error the node failed with
// (actors.SetLocalError), so that errors.Is and errors.As reach what it
// wraps (a store's sentinel, the user's own errors), at any depth of
// nesting. Its message is the wire form's.
func ResultFromWireLocal(w *braidv1.MultiAgentResult, locals actors.Locals) (*Result, error) {
	r := &Result{Status: StatusFromWire(w.GetStatus()), ExecutionOrder: append([]string(nil), w.GetExecutionOrder()...),
		ExecutionCount: int(w.GetExecutionCount()), Duration: time.Duration(w.GetDurationNs()), Usage: usageFromWire(w.GetUsage()),
		InvocationUsage: usageFromWire(w.GetInvocationUsage()),
		Message:         w.GetMessage()}
	for _, nw := range w.GetResults() {
		n, err := nodeResultFromWire(nw, locals)
		if err != nil {
			return nil, err
		}
		switch n.Status {
		case StatusCompleted:
			r.CompletedNodes++
		case StatusFailed:
			r.FailedNodes++
		case StatusInterrupted:
			r.InterruptedNodes++
		}
		r.Results = append(r.Results, n)
	}
	ins, err := interruptsFromWire(w.GetInterrupts())
	if err != nil {
		return nil, err
	}
	r.Interrupts = ins
	return r, nil
}

// NodeResultFromWire converts a node's protobuf result.
func NodeResultFromWire(w *braidv1.NodeResult) (*NodeResult, error) {
	return nodeResultFromWire(w, actors.Locals{})
}

// NodeResultFromWireLocal converts a node's protobuf result, taking its
// in-process forms from locals as ResultFromWireLocal does.
func NodeResultFromWireLocal(w *braidv1.NodeResult, locals actors.Locals) (*NodeResult, error) {
	return nodeResultFromWire(w, locals)
}

func nodeResultFromWire(w *braidv1.NodeResult, locals actors.Locals) (*NodeResult, error) {
	n := &NodeResult{NodeID: w.GetNodeId(), Status: StatusFromWire(w.GetStatus()), Message: w.GetMessage(),
		Duration: time.Duration(w.GetDurationNs()), Usage: usageFromWire(w.GetUsage()), ExecutionCount: int(w.GetExecutionCount())}
	var err error
	switch {
	case w.GetAgent() != nil:
		if r, ok := locals.Results[w].(*agent.Result); ok {
			n.Agent = cloneAgentResult(r)
			break
		}
		if n.Agent, err = agent.ResultFromWire(w.GetAgent()); err != nil {
			return nil, fmt.Errorf("node %q: %w", n.NodeID, err)
		}
	case w.GetMultiAgent() != nil:
		if n.Multi, err = ResultFromWireLocal(w.GetMultiAgent(), locals); err != nil {
			return nil, fmt.Errorf("node %q: %w", n.NodeID, err)
		}
	case len(w.GetContent()) > 0:
		if err := json.Unmarshal(w.GetContent(), &n.Content); err != nil {
			return nil, fmt.Errorf("node %q: content: %w", n.NodeID, err)
		}
	}
	if n.Err = locals.Error(w.GetError()); n.Err == nil && w.GetError() != nil {
		n.Err = agent.ErrorFromWire(w.GetError())
	}
	if h := w.GetHandoff(); h != nil {
		n.Handoff = &Handoff{To: h.GetTo(), Message: h.GetMessage()}
		if len(h.GetContext()) > 0 {
			n.Handoff.Context = append(json.RawMessage(nil), h.GetContext()...)
		}
	}
	if n.Interrupts, err = interruptsFromWire(w.GetInterrupts()); err != nil {
		return nil, fmt.Errorf("node %q: %w", n.NodeID, err)
	}
	return n, nil
}

func interruptsFromWire(ws []*braidv1.Interrupt) ([]interrupt.Interrupt, error) {
	var out []interrupt.Interrupt
	for _, iw := range ws {
		in, err := actors.InterruptFromWire(iw)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func usageFromWire(u *braidv1.Usage) model.Usage {
	return model.Usage{InputTokens: int(u.GetInputTokens()), OutputTokens: int(u.GetOutputTokens()), TotalTokens: int(u.GetTotalTokens())}
}

// cloneAgentResult copies an in-process agent result, so results of two
// invocations never share one.
func cloneAgentResult(r *agent.Result) *agent.Result {
	c := *r
	c.Message = r.Message.Clone()
	c.Interrupts = nil // none stays nil, as in the agent's own result and the decoded one
	if len(r.Interrupts) > 0 {
		c.Interrupts = make([]interrupt.Interrupt, len(r.Interrupts))
	}
	for i, in := range r.Interrupts {
		c.Interrupts[i] = in.Clone()
	}
	return &c
}
