package agent

import (
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// Event is one item of a Stream (SPEC A10): *TextDeltaEvent,
// *ToolUseEvent, *ToolResultEvent, *MessageEvent, *InterruptEvent or, last,
// *ResultEvent.
type Event interface{ agentEvent() }

// TextDeltaEvent is a piece of text streamed by the model.
type TextDeltaEvent struct{ Text string }

// ToolUseEvent reports that the model asked for a tool. It is sent when the
// tool use's input is complete.
type ToolUseEvent struct{ ToolUse model.ToolUse }

// ToolResultEvent reports that a tool finished, was cancelled, or failed.
type ToolResultEvent struct{ Result model.ToolResult }

// MessageEvent reports that a message was appended to the history.
type MessageEvent struct{ Message model.Message }

// InterruptEvent reports that the agent stopped for this interrupt. It is
// sent only after the interrupt state is activated and saved (SPEC I9),
// once for each interrupt the result lists.
type InterruptEvent struct{ Interrupt interrupt.Interrupt }

// ResultEvent carries the final result of the invocation.
type ResultEvent struct{ Result *Result }

func (*TextDeltaEvent) agentEvent()  {}
func (*ToolUseEvent) agentEvent()    {}
func (*ToolResultEvent) agentEvent() {}
func (*MessageEvent) agentEvent()    {}
func (*InterruptEvent) agentEvent()  {}
func (*ResultEvent) agentEvent()     {}
