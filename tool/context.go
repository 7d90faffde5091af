package tool

import (
	"encoding/json"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// KV is the agent's key/value state as a tool sees it.
type KV interface {
	Get(key string) (json.RawMessage, bool)
	Set(key string, value any) error
	Delete(key string)
}

// Context is given to each tool call. It carries the tool use and the
// interrupt scope of this call: Interrupt records into the agent's interrupt
// state with the id v1:tool_call:{toolUseId}:{u(name)}.
type Context struct {
	// ToolUse is the call being run.
	ToolUse model.ToolUse
	// State is the agent's key/value state (nil in direct calls without an agent).
	State KV
	// Invocation holds per-invocation values given by the caller; read-only.
	Invocation map[string]any

	scope          *interrupt.Scope
	idempotencyKey string
}

// ContextOption sets an optional part of a Context.
type ContextOption func(*Context)

// WithIdempotencyKey sets the key IdempotencyKey returns.
func WithIdempotencyKey(key string) ContextOption {
	return func(c *Context) { c.idempotencyKey = key }
}

// NewContext returns the context of one call. scope may be nil, in which case
// Interrupt fails with interrupt.ErrNotInterruptible (direct tool calls).
func NewContext(tu model.ToolUse, scope *interrupt.Scope, state KV, invocation map[string]any, opts ...ContextOption) *Context {
	c := &Context{ToolUse: tu, scope: scope, State: state, Invocation: invocation}
	for _, o := range opts {
		o(c)
	}
	if c.idempotencyKey == "" {
		c.idempotencyKey = tu.ToolUseID
	}
	return c
}

// IdempotencyKey identifies this tool use across re-runs (SPEC S6): the
// session, the owner path and the tool-use id, the same every time the call
// is run again (after an interrupt, a retry or a crash). A tool whose side
// effect must not happen twice passes it to the system it calls, or keeps
// it with the effect and checks it first. Outside an agent it is the
// tool-use id.
//
// It is only as unique as the model's tool-use ids: a call in a later turn
// or invocation of the session whose tool-use id the model gave before
// (a scripted model's fixed ids, a history started over with SetMessages)
// has the same key as the earlier call, and a tool that deduplicates by
// it alone takes the new call for a re-run of the old one. (Within one
// model answer an agent renames a repeated id, t1 then t1_2, so two calls
// of one turn never share a key.)
func (c *Context) IdempotencyKey() string { return c.idempotencyKey }

// ScopeFor returns the interrupt scope for a tool call on the owner's state.
func ScopeFor(state *interrupt.State, toolUseID string) *interrupt.Scope {
	return interrupt.NewScope(state, interrupt.SourceTool, func(name string) string {
		return interrupt.ToolCallID(toolUseID, name)
	})
}

// Interrupt raises an interrupt from the tool (SPEC I3). If it has an answer,
// the answer is returned; otherwise return the error from the tool, and the
// call is run again from the start once the interrupt is answered. Names
// need only be unique within one tool, and must be valid UTF-8 (else
// interrupt.ErrNotUTF8, nothing recorded). Called after the tool returned (from
// a goroutine it left running, say), it fails with interrupt.ErrScopeEnded
// and records nothing.
func (c *Context) Interrupt(name string, reason any, opts ...interrupt.RaiseOption) (interrupt.Value, error) {
	return c.scope.Interrupt(name, reason, opts...)
}

// Interrupted reports whether this call raised an unanswered interrupt.
func (c *Context) Interrupted() bool { return c.scope != nil && c.scope.Interrupted() }

// Scope returns the call's interrupt scope (nil in direct calls).
func (c *Context) Scope() *interrupt.Scope { return c.scope }
