package multiagent

import (
	"fmt"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/proto/braidv1"
)

// Event is one item of a Graph's or Swarm's Stream (SPEC M12):
// *NodeStartEvent, *NodeEvent, *NodeStopEvent, *HandoffEvent,
// *InterruptEvent, and last *ResultEvent. Node paths name nodes at any
// depth ("graph/node", "graph/nested/node").
type Event interface{ multiAgentEvent() }

// NodeStartEvent reports that a node starts (its BeforeNodeCall hooks let
// it run). A node that its hooks gate or cancel has a NodeStopEvent
// (INTERRUPTED or CANCELLED) without a NodeStartEvent.
type NodeStartEvent struct{ Node string }

// NodeEvent is an event of a node's agent.
type NodeEvent struct {
	Node  string
	Event agent.Event
}

// NodeStopEvent reports that a node's run ended, with its result. An
// INTERRUPTED result, which lists the node's interrupts, comes once the
// save of the streamed orchestrator holds them (SPEC I9), as InterruptEvent
// does: a nested Graph or Swarm's node's too, which comes with the NodeStop
// of the node that runs the nested one. A FAILED result's Err is the Go
// error the final result holds for the node (NodeResult.Err).
type NodeStopEvent struct {
	Node   string
	Result *NodeResult
}

// HandoffEvent reports that a Swarm hands off from the node at path From
// (as the other events name nodes) to its node To (an id within the same
// swarm), once From's run has ended.
type HandoffEvent struct{ From, To string }

// InterruptEvent is an interrupt of the run, sent once the orchestrator
// has saved it (SPEC I9).
type InterruptEvent struct {
	// Node is the path of this run's node that owns the interrupt (the
	// node a resume routes its answer to): the gated node for a
	// BeforeNodeCall interrupt, the node whose agent raised it, or, for
	// one raised deeper in a nested Graph or Swarm, the node that holds
	// it; the interrupt's id carries the whole path of the agent that
	// raised it (interrupt.SplitOwner).
	Node      string
	Interrupt interrupt.Interrupt
}

// ResultEvent ends the stream with the run's result.
type ResultEvent struct{ Result *Result }

func (*NodeStartEvent) multiAgentEvent() {}
func (*NodeEvent) multiAgentEvent()      {}
func (*NodeStopEvent) multiAgentEvent()  {}
func (*HandoffEvent) multiAgentEvent()   {}
func (*InterruptEvent) multiAgentEvent() {}
func (*ResultEvent) multiAgentEvent()    {}

// EventFromWire converts a protobuf event. A NodeStop's error is decoded
// from its wire form, as ResultFromWire decodes a result's.
func EventFromWire(w *braidv1.MultiAgentEvent) (Event, error) {
	return EventFromWireLocal(w, actors.Locals{})
}

// EventFromWireLocal converts a protobuf event, taking the errors of the
// FAILED node results a NodeStop carries from locals (what an
// orchestrator of this process gave with the event, see
// actors.Orchestrator.StreamLocal) instead of decoding them: they are the
// Go errors the nodes failed with, as in ResultFromWireLocal.
func EventFromWireLocal(w *braidv1.MultiAgentEvent, locals actors.Locals) (Event, error) {
	path := w.GetNodePath()
	switch e := w.GetEvent().(type) {
	case *braidv1.MultiAgentEvent_NodeStart:
		return &NodeStartEvent{Node: path}, nil
	case *braidv1.MultiAgentEvent_NodeEvent:
		ev, err := agent.EventFromWire(e.NodeEvent)
		if err != nil {
			return nil, err
		}
		return &NodeEvent{Node: path, Event: ev}, nil
	case *braidv1.MultiAgentEvent_NodeStop:
		r, err := NodeResultFromWireLocal(e.NodeStop, locals)
		if err != nil {
			return nil, err
		}
		return &NodeStopEvent{Node: path, Result: r}, nil
	case *braidv1.MultiAgentEvent_Handoff:
		return &HandoffEvent{From: path, To: e.Handoff}, nil
	case *braidv1.MultiAgentEvent_Interrupt:
		in, err := actors.InterruptFromWire(e.Interrupt)
		if err != nil {
			return nil, err
		}
		return &InterruptEvent{Node: path, Interrupt: in}, nil
	}
	return nil, fmt.Errorf("multiagent: unknown event %T", w.GetEvent())
}
