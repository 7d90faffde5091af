package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrIncompleteStream: the stream ended without a MessageStop.
var ErrIncompleteStream = errors.New("model stream ended without a stop event")

// Accumulator folds stream events into the assistant message. The zero value
// is ready to use.
type Accumulator struct {
	blocks  []ContentBlock
	text    strings.Builder
	inText  bool
	tool    *ToolUse
	input   bytes.Buffer
	stopped bool
	stop    MessageStop
}

// Add folds one event in.
func (a *Accumulator) Add(ev StreamEvent) error {
	switch e := ev.(type) {
	case *TextDelta:
		if a.tool != nil {
			if err := a.endBlock(); err != nil {
				return err
			}
		}
		a.inText = true
		a.text.WriteString(e.Text)
	case *ToolUseStart:
		if err := a.endBlock(); err != nil {
			return err
		}
		if e.Name == "" {
			return errors.New("model stream: tool use without a name")
		}
		a.tool = &ToolUse{ToolUseID: e.ToolUseID, Name: e.Name}
	case *ToolInputDelta:
		if a.tool == nil {
			return errors.New("model stream: tool input outside a tool use")
		}
		a.input.WriteString(e.Partial)
	case *BlockStop:
		return a.endBlock()
	case *MessageStop:
		if err := a.endBlock(); err != nil {
			return err
		}
		a.stopped, a.stop = true, *e
	case nil:
		return errors.New("model stream: nil event")
	default:
		return fmt.Errorf("model stream: unknown event %T", ev)
	}
	return nil
}

func (a *Accumulator) endBlock() error {
	if a.inText {
		a.blocks = append(a.blocks, Text(a.text.String()))
		a.text.Reset()
		a.inText = false
	}
	if a.tool != nil {
		raw := bytes.TrimSpace(a.input.Bytes())
		if len(raw) == 0 {
			raw = []byte("{}")
		}
		if !json.Valid(raw) {
			return fmt.Errorf("model stream: tool %q (%s): input is not valid JSON", a.tool.Name, a.tool.ToolUseID)
		}
		a.tool.Input = append(json.RawMessage(nil), raw...)
		a.blocks = append(a.blocks, ToolUseBlock(*a.tool))
		a.tool = nil
		a.input.Reset()
	}
	return nil
}

// Result returns the assistant message, the stop reason and the usage. It
// fails if no MessageStop was seen. A turn with tool uses reports
// StopToolUse whatever the stream said.
func (a *Accumulator) Result() (Message, MessageStop, error) {
	if !a.stopped {
		return Message{}, MessageStop{}, ErrIncompleteStream
	}
	msg := Message{Role: RoleAssistant, Content: a.blocks}
	stop := a.stop
	if len(msg.ToolUses()) > 0 {
		stop.StopReason = StopToolUse
	}
	return msg, stop, nil
}

// Complete runs a model call to the end and returns the assembled turn.
func Complete(ctx context.Context, m Model, req *Request) (Message, MessageStop, error) {
	var acc Accumulator
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return Message{}, MessageStop{}, err
		}
		if err := acc.Add(ev); err != nil {
			return Message{}, MessageStop{}, err
		}
	}
	return acc.Result()
}
