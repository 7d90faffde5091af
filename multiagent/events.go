package multiagent

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// DefaultCancelNode is the message of a node cancelled by CancelNode("").
const DefaultCancelNode = "node cancelled by user"

// MultiAgentInitializedEvent fires once, when a Graph or Swarm is built.
type MultiAgentInitializedEvent struct {
	// Source is the orchestrator's id.
	Source string
}

// BeforeMultiAgentInvocationEvent fires at the start of every invocation.
type BeforeMultiAgentInvocationEvent struct {
	Source string
	// Resuming is set when the invocation answers interrupts.
	Resuming bool
}

// AfterMultiAgentInvocationEvent fires at the end of every invocation,
// interrupted or not. Callbacks run in reverse order.
type AfterMultiAgentInvocationEvent struct {
	Source string
	Result *Result
}

// HookReversed marks After* events.
func (*AfterMultiAgentInvocationEvent) HookReversed() {}

// BeforeNodeCallEvent fires before a node runs, and again each time a
// resume runs it (SPEC M3). It is interruptible (source multiagent-hook):
// on interrupt the node does not run and AfterNodeCall does not fire for
// it. An answered interrupt stays answered until the node completes, even
// if the node's agent interrupts in between (SPEC M6). Interrupt called
// after the callbacks returned fails with interrupt.ErrScopeEnded.
type BeforeNodeCallEvent struct {
	Source string
	NodeID string
	scope  *interrupt.Scope
	cancel *string
}

// Interrupt raises an interrupt with id v1:before_node_call:{u(node)}:{u(name)}
// (prefixed by the orchestrator's owner path when it is nested).
func (e *BeforeNodeCallEvent) Interrupt(name string, reason any, opts ...interrupt.RaiseOption) (interrupt.Value, error) {
	return e.scope.Interrupt(name, reason, opts...)
}

// InterruptScope implements hook.Interruptible.
func (e *BeforeNodeCallEvent) InterruptScope() *interrupt.Scope { return e.scope }

// CancelNode skips the node: it ends CANCELLED with msg (default
// DefaultCancelNode), AfterNodeCall fires, nothing downstream of it runs.
func (e *BeforeNodeCallEvent) CancelNode(msg string) {
	if msg == "" {
		msg = DefaultCancelNode
	}
	e.cancel = &msg
}

// AfterNodeCallEvent fires after a node ran or was cancelled. Callbacks
// run in reverse order. It does not fire for a run that a Close cut off:
// that run is carried on later, as after a crash, and it fires once the
// run carried on ends.
type AfterNodeCallEvent struct {
	Source string
	NodeID string
	Result *NodeResult
}

// HookReversed marks After* events.
func (*AfterNodeCallEvent) HookReversed() {}

// Hooks adapts a hook registry to the orchestrator core
// (actors.OrchestratorHooks).
type Hooks struct {
	Registry *hook.Registry
	// Source is the orchestrator's id; OwnerPath its owner path.
	Source, OwnerPath string
}

// NewHooks registers the providers of an orchestrator of kind ("graph",
// "swarm") and refuses, with a *hook.NotFiredError, a callback for an event
// that an orchestrator never fires: an agent's events (a BeforeToolCall
// approval, say) belong to the node's agent.
func NewHooks(kind, source, ownerPath string, providers ...hook.Provider) (*Hooks, error) {
	r := hook.NewRegistry(providers...)
	err := r.Check(kind, "an agent's events go to the Hooks of the node's agent.Config",
		reflect.TypeFor[MultiAgentInitializedEvent](), reflect.TypeFor[BeforeMultiAgentInvocationEvent](),
		reflect.TypeFor[AfterMultiAgentInvocationEvent](), reflect.TypeFor[BeforeNodeCallEvent](),
		reflect.TypeFor[AfterNodeCallEvent]())
	if err != nil {
		return nil, err
	}
	return &Hooks{Registry: r, Source: source, OwnerPath: ownerPath}, nil
}

// BeforeNode implements actors.GateHooks.
func (h *Hooks) BeforeNode(ctx context.Context, node string, gate *interrupt.State) (string, bool, error) {
	if !hook.Has[BeforeNodeCallEvent](h.Registry) {
		return "", false, nil
	}
	scope := interrupt.NewScope(gate, interrupt.SourceMultiAgentHook, func(name string) string {
		return interrupt.OwnedID(h.OwnerPath, interrupt.BeforeNodeCallID(node, name))
	})
	ev := &BeforeNodeCallEvent{Source: h.Source, NodeID: node, scope: scope}
	err := hook.Run(ctx, h.Registry, ev)
	scope.End()
	if err != nil {
		return "", false, err
	}
	if ev.cancel != nil && !scope.Interrupted() {
		return *ev.cancel, true, nil
	}
	return "", false, nil
}

// AfterNode implements actors.GateHooks.
func (h *Hooks) AfterNode(ctx context.Context, node string, res *braidv1.NodeResult) error {
	if !hook.Has[AfterNodeCallEvent](h.Registry) {
		return nil
	}
	r, err := NodeResultFromWire(res)
	if err != nil {
		return err
	}
	return hook.Run(ctx, h.Registry, &AfterNodeCallEvent{Source: h.Source, NodeID: node, Result: r})
}

// BeforeInvocation implements actors.OrchestratorHooks.
func (h *Hooks) BeforeInvocation(ctx context.Context, resuming bool) error {
	return hook.Run(ctx, h.Registry, &BeforeMultiAgentInvocationEvent{Source: h.Source, Resuming: resuming})
}

// AfterInvocation implements actors.OrchestratorHooks.
func (h *Hooks) AfterInvocation(ctx context.Context, res *braidv1.MultiAgentResult) error {
	if !hook.Has[AfterMultiAgentInvocationEvent](h.Registry) {
		return nil
	}
	r, err := ResultFromWire(res)
	if err != nil {
		return err
	}
	return hook.Run(ctx, h.Registry, &AfterMultiAgentInvocationEvent{Source: h.Source, Result: r})
}

// Initialized fires MultiAgentInitializedEvent.
func (h *Hooks) Initialized(ctx context.Context) error {
	if err := hook.Run(ctx, h.Registry, &MultiAgentInitializedEvent{Source: h.Source}); err != nil {
		return fmt.Errorf("MultiAgentInitialized hook: %w", err)
	}
	return nil
}

// CheckSegment checks an id that is a segment of owner paths and of record
// ids (a Graph's or Swarm's id, a node id): it holds no "/" or ":" (SPEC
// I2) and is an id every store can keep (SPEC S2). what names it in the
// error ("graph", "swarm", "node").
func CheckSegment(what, id string) error {
	if strings.Contains(id, "/") || interrupt.ValidateOwnerPath(id) != nil {
		return fmt.Errorf("%s id %q: holds \"/\" or \":\" (it is a segment of owner paths)", what, id)
	}
	if err := persistence.ValidateID(what, id); err != nil {
		return fmt.Errorf("%s id: %w", what, err)
	}
	return nil
}
