package agent

import (
	"reflect"
	"sync"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// The hook events of SPEC A1, in the order they fire (see the package doc).
// Register callbacks with hook.Add or hook.Func:
//
//	hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error { ... })
//
// Events are only valid during the callback. Fields are read-only except
// through the setters. Interrupt called on an event after its callbacks
// returned (on an event kept for later) fails with interrupt.ErrScopeEnded
// and records nothing.

// AgentInitializedEvent fires when the agent's actor is activated: in New,
// and each time it comes back (after a passivation or a fault), once its
// session is loaded. The actor answers nothing until its callbacks have
// returned, so their context ends when the agent is closed or its System
// closes (either Close waits for them), and a callback that waits on
// something should watch it.
type AgentInitializedEvent struct {
	Agent *View
}

// BeforeInvocationEvent fires at the start of every invocation, resumes
// included.
type BeforeInvocationEvent struct {
	Agent *View
	// Resuming is true when the invocation answers interrupts.
	Resuming bool
}

// AfterInvocationEvent fires at the end of every invocation, interrupted or
// failed ones included. Callbacks run in reverse registration order.
type AfterInvocationEvent struct {
	Agent *View
	// Result is the invocation's result; nil when Err is set.
	Result *Result
	// Err is the error the invocation ends with, if any.
	Err    error
	resume *Input
}

// Resume makes the agent run again at once with input, before Invoke
// returns (the auto-answer pattern). The input is validated like any other
// (SPEC I7): while interrupted it must be interrupt responses.
func (e *AfterInvocationEvent) Resume(input Input) { e.resume = &input }

// HookReversed marks After* events.
func (*AfterInvocationEvent) HookReversed() {}

// MessageAddedEvent fires after each message is appended to the history.
type MessageAddedEvent struct {
	Agent   *View
	Message model.Message
}

// BeforeModelCallEvent fires before each model call (not on a resume that
// replays a stored tool cycle). It is interruptible (a Braid extension): an
// interrupt here stops before the model is called, and the resume calls it.
type BeforeModelCallEvent struct {
	Agent   *View
	Request *model.Request
	scope   *interrupt.Scope
	cancel  *string
}

// Interrupt raises an interrupt with id v1:before_model_call:{u(name)}.
// Called after the event's callbacks returned, it fails with
// interrupt.ErrScopeEnded and records nothing.
func (e *BeforeModelCallEvent) Interrupt(name string, reason any, opts ...interrupt.RaiseOption) (interrupt.Value, error) {
	return e.scope.Interrupt(name, reason, opts...)
}

// InterruptScope implements hook.Interruptible.
func (e *BeforeModelCallEvent) InterruptScope() *interrupt.Scope { return e.scope }

// Cancel stops the invocation before the model is called, with stop reason
// cancelled and msg (default "model call cancelled by hook") as the
// assistant's answer.
func (e *BeforeModelCallEvent) Cancel(msg string) { e.cancel = &msg }

// AfterModelCallEvent fires after each model call. Callbacks run in reverse
// registration order.
type AfterModelCallEvent struct {
	Agent      *View
	Message    model.Message
	StopReason StopReason
	// Err is the model's error, if the call failed.
	Err   error
	retry bool
}

// Retry discards this answer (or error) and calls the model again.
func (e *AfterModelCallEvent) Retry() { e.retry = true }

// HookReversed marks After* events.
func (*AfterModelCallEvent) HookReversed() {}

// BeforeToolsEvent fires once per tool cycle, before any tool of the batch,
// and again on every resume of that cycle. It is interruptible: an interrupt
// stops the whole batch (SPEC A5).
type BeforeToolsEvent struct {
	Agent *View
	// Message is the assistant message whose tool uses make the batch.
	Message model.Message
	scope   *interrupt.Scope
	cancel  *string
}

// Interrupt raises an interrupt with id v1:before_tools:{u(name)}.
// Called after the event's callbacks returned, it fails with
// interrupt.ErrScopeEnded and records nothing.
func (e *BeforeToolsEvent) Interrupt(name string, reason any, opts ...interrupt.RaiseOption) (interrupt.Value, error) {
	return e.scope.Interrupt(name, reason, opts...)
}

// InterruptScope implements hook.Interruptible.
func (e *BeforeToolsEvent) InterruptScope() *interrupt.Scope { return e.scope }

// Cancel gives every tool of the batch an error result with msg (default
// "Tool cancelled by hook"); no tool runs and no per-tool hook fires (SPEC A8).
func (e *BeforeToolsEvent) Cancel(msg string) { e.cancel = &msg }

// BeforeToolCallEvent fires before each tool runs, again on each resume. It
// is interruptible: an interrupt stops that tool (SPEC A4).
type BeforeToolCallEvent struct {
	Agent *View
	// ToolUse is the call the tool will run: the model's, or the one the
	// last SetToolUse gave. It is read-only (SPEC A1): a callback that
	// changes it in place, not through SetToolUse, fails the invocation
	// with ErrBadInput rather than see its change ignored.
	ToolUse model.ToolUse
	// Tool is the tool that will run (the one ToolUse names); nil when it
	// names an unknown tool. It is read-only too: SetToolUse picks the
	// tool by name, and a callback that assigns Tool fails the invocation
	// with ErrBadInput.
	Tool      tool.Tool
	scope     *interrupt.Scope
	cancel    *string
	rewritten *model.ToolUse
	tool      tool.Tool // the tool the call runs: the model's, or the rewrite's
	id        string    // the model's tool-use id
	lookup    func(name string) tool.Tool
}

// SetToolUse makes the tool run as tu asks, as Strands Python does when a
// hook assigns its event's tool_use: tu.Name picks the tool that runs (an
// unknown name gets the error result "Unknown tool: <name>", SPEC A13) and
// tu.Input is the input it gets; tu.Input must be JSON (or empty), else the
// invocation fails with ErrBadInput. The tool-use id stays the model's
// (tu.ToolUseID is ignored): the tool's result, its interrupt ids
// (v1:tool_call:{toolUseId}:..), its IdempotencyKey and its at-most-once
// start mark are all keyed by the id the model sent (or the agent's
// renaming of one the model repeated in its answer, t1_2, or gave in
// bytes that are not UTF-8, which the history and every hook see too),
// so they stay consistent with the
// history. Callbacks after this one see the rewrite in
// ToolUse and Tool; AfterToolCall and the tool's Context see the call as
// rewritten. The history keeps the tool use as the model sent it (as
// Strands does): the model sees its own request and the result of the
// call made for it. The rewrite is not stored: a cancel or an interrupt
// on this event drops it (an interrupted call's rewrite only names the
// exclusive key, tool.Exclusive, whose later calls wait for it, as they
// would for a call of that tool), and on every resume of the call (SPEC A7) this
// event fires again and its callbacks rewrite the call again, as in
// Strands, which runs the hook again too; a rewrite that must survive a
// resume unchanged must be computed the same way each time (from ToolUse,
// the agent's state, or an interrupt's answer). AfterToolCall's Retry
// runs the tool again with the rewritten call, without this event.
func (e *BeforeToolCallEvent) SetToolUse(tu model.ToolUse) {
	tu.ToolUseID = e.id
	tu = tu.Clone()
	e.rewritten = &tu
	e.ToolUse = tu.Clone()
	if e.lookup != nil {
		e.tool = e.lookup(tu.Name)
		e.Tool = e.tool
	}
}

// Interrupt raises an interrupt with id v1:before_tool_call:{toolUseId}:{u(name)}.
// Called after the event's callbacks returned, it fails with
// interrupt.ErrScopeEnded and records nothing.
func (e *BeforeToolCallEvent) Interrupt(name string, reason any, opts ...interrupt.RaiseOption) (interrupt.Value, error) {
	return e.scope.Interrupt(name, reason, opts...)
}

// InterruptScope implements hook.Interruptible.
func (e *BeforeToolCallEvent) InterruptScope() *interrupt.Scope { return e.scope }

// CancelTool skips the tool: it gets an error result with msg (default
// "tool cancelled by user"), and AfterToolCall fires with it (SPEC A8).
func (e *BeforeToolCallEvent) CancelTool(msg string) { e.cancel = &msg }

// AfterToolCallEvent fires after a tool has run or was cancelled; not for a
// tool that was interrupted. Callbacks run in reverse registration order.
type AfterToolCallEvent struct {
	Agent   *View
	ToolUse model.ToolUse
	// Tool is nil for an unknown tool.
	Tool   tool.Tool
	Result model.ToolResult
	// Err is the tool's error, if it returned one.
	Err error
	// Cancelled holds the cancel message when the tool did not run: a
	// BeforeToolCall hook cancelled it, or the invocation's Cancel came
	// before it started (DefaultCancelled; a call an executor held back
	// behind another call of its exclusive key, tool.Exclusive).
	Cancelled string
	retry     bool
	replaced  *model.ToolResult
}

// SetResult replaces the result the model will see.
func (e *AfterToolCallEvent) SetResult(r model.ToolResult) {
	r.ToolUseID = e.ToolUse.ToolUseID
	e.replaced = &r
}

// Retry runs the tool again (its BeforeToolCall hooks do not fire again).
func (e *AfterToolCallEvent) Retry() { e.retry = true }

// HookReversed marks After* events.
func (*AfterToolCallEvent) HookReversed() {}

// AfterToolsEvent fires after each tool cycle, with the results gathered in
// this cycle so far (in tool-use order); not after a BeforeTools interrupt.
// A per-tool interrupt splits a batch across passes, so it may fire more than
// once for one assistant message. Callbacks run in reverse registration order.
type AfterToolsEvent struct {
	Agent *View
	// Message is the user message of tool results gathered so far.
	Message model.Message
	endTurn *string
}

// EndTurn stops the invocation after the results are appended, with stop
// reason end_turn and msg (default "Turn ended early by hook after tool
// execution") as the assistant's answer. Ignored when the cycle is
// interrupted.
func (e *AfterToolsEvent) EndTurn(msg string) { e.endTurn = &msg }

// HookReversed marks After* events.
func (*AfterToolsEvent) HookReversed() {}

// events are the event types an agent fires (SPEC A1), made once.
var events = sync.OnceValue(func() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[AgentInitializedEvent](), reflect.TypeFor[BeforeInvocationEvent](),
		reflect.TypeFor[AfterInvocationEvent](), reflect.TypeFor[MessageAddedEvent](),
		reflect.TypeFor[BeforeModelCallEvent](), reflect.TypeFor[AfterModelCallEvent](),
		reflect.TypeFor[BeforeToolsEvent](), reflect.TypeFor[BeforeToolCallEvent](),
		reflect.TypeFor[AfterToolCallEvent](), reflect.TypeFor[AfterToolsEvent](),
	}
})
