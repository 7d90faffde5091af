package model

import (
	"context"
	"encoding/json"
	"iter"
)

// StopReason says why the model ended its turn.
type StopReason string

// Stop reasons a model reports (Strands / Converse names).
const (
	StopEndTurn             StopReason = "end_turn"
	StopToolUse             StopReason = "tool_use"
	StopMaxTokens           StopReason = "max_tokens"
	StopSequence            StopReason = "stop_sequence"
	StopContentFiltered     StopReason = "content_filtered"
	StopGuardrailIntervened StopReason = "guardrail_intervened"
)

// ToolSpec describes a tool to the model. InputSchema is a JSON schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Request is one model call.
type Request struct {
	SystemPrompt string
	Messages     []Message
	Tools        []ToolSpec
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + o.InputTokens,
		OutputTokens: u.OutputTokens + o.OutputTokens,
		TotalTokens:  u.TotalTokens + o.TotalTokens,
	}
}

// Model streams one assistant turn for a request.
//
// Stream must honour ctx: when it is cancelled the sequence ends with
// ctx.Err(). The request and its messages are read-only to the model and are
// not used after the sequence ends. Implementations must be safe for
// concurrent use by several agents.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[StreamEvent, error]
}

// StreamEvent is one event of a model stream: *TextDelta, *ToolUseStart,
// *ToolInputDelta, *BlockStop or *MessageStop.
type StreamEvent interface{ streamEvent() }

// TextDelta appends text to the current text block (starting one if needed).
type TextDelta struct{ Text string }

// ToolUseStart starts a tool-use block.
type ToolUseStart struct{ ToolUseID, Name string }

// ToolInputDelta appends a fragment of the current tool use's input JSON.
type ToolInputDelta struct{ Partial string }

// BlockStop ends the current block.
type BlockStop struct{}

// MessageStop ends the turn.
type MessageStop struct {
	StopReason StopReason
	Usage      Usage
}

func (*TextDelta) streamEvent()      {}
func (*ToolUseStart) streamEvent()   {}
func (*ToolInputDelta) streamEvent() {}
func (*BlockStop) streamEvent()      {}
func (*MessageStop) streamEvent()    {}
