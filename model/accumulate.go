package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrIncompleteStream is returned when the stream ends without a
// MessageStop.
var ErrIncompleteStream = errors.New("model stream ended without a stop event")

// ErrMaxTokensInToolUse reports that the turn reached the model's output
// token limit (stop reason max_tokens) in the middle of a tool use, so the
// tool's input is cut off. Raising the model's max tokens setting is the
// usual cure.
var ErrMaxTokensInToolUse = errors.New("the model reached its max tokens limit in the middle of a tool use")

// Accumulator folds stream events into the assistant message. The zero value
// is ready to use.
type Accumulator struct {
	blocks []ContentBlock
	text   strings.Builder
	inText bool
	tool   *ToolUse
	input  bytes.Buffer
	// bad is the first tool use whose input is not valid JSON, or is JSON
	// but not an object (badKind says which): reported at MessageStop,
	// whose stop reason says whether it was cut off.
	bad     *ToolUse
	badKind string
	stopped bool
	stop    MessageStop
}

// Add folds one event in. A tool use whose input is not valid JSON fails
// the turn at its MessageStop: with ErrMaxTokensInToolUse when the stop
// reason is max_tokens (the input was cut off), else with an error naming
// the tool. So does an input that is JSON but neither an object nor null
// (a list, a string, a number): every provider takes a tool's input as an
// object, and a history holding such an input could not be sent to one
// again. An empty input is taken as {}.
func (a *Accumulator) Add(ev StreamEvent) error {
	switch e := ev.(type) {
	case *TextDelta:
		if a.tool != nil {
			a.endBlock()
		}
		a.inText = true
		a.text.WriteString(e.Text)
	case *ToolUseStart:
		a.endBlock()
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
		a.endBlock()
	case *MessageStop:
		a.endBlock()
		if a.bad != nil {
			if e.StopReason == StopMaxTokens && a.badKind == notJSON {
				return fmt.Errorf("model stream: %w: tool %q (%s) has an incomplete input; raise the model's max tokens", ErrMaxTokensInToolUse, a.bad.Name, a.bad.ToolUseID)
			}
			return fmt.Errorf("model stream: tool %q (%s): input is %s", a.bad.Name, a.bad.ToolUseID, a.badKind)
		}
		a.stopped, a.stop = true, *e
	case nil:
		return errors.New("model stream: nil event")
	default:
		return fmt.Errorf("model stream: unknown event %T", ev)
	}
	return nil
}

// endBlock ends the open block: a tool use whose input is not valid JSON
// is kept aside (see Add).
func (a *Accumulator) endBlock() {
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
		switch {
		case !json.Valid(raw):
			a.keepBad(notJSON)
		case raw[0] != '{' && !bytes.Equal(raw, []byte("null")):
			a.keepBad("not a JSON object")
		default:
			a.tool.Input = append(json.RawMessage(nil), raw...)
			a.blocks = append(a.blocks, ToolUseBlock(*a.tool))
		}
		a.tool = nil
		a.input.Reset()
	}
}

// notJSON is the badKind of an input that is not valid JSON.
const notJSON = "not valid JSON"

// keepBad keeps the open tool use aside as the turn's first bad one.
func (a *Accumulator) keepBad(kind string) {
	if a.bad == nil {
		a.bad, a.badKind = a.tool, kind
	}
}

// Result returns the assistant message, the stop reason and the usage. It
// fails if no MessageStop was seen. A turn with tool uses reports
// StopToolUse whatever the stream said (some servers say end_turn), except
// a turn the provider stopped with its content filter or a guardrail
// (StopContentFiltered, StopGuardrailIntervened): its tool uses are left
// out of the message, so that no tool the provider blocked is run and the
// history asks for no tool result it will not get, and the stop reason is
// kept.
func (a *Accumulator) Result() (Message, MessageStop, error) {
	if !a.stopped {
		return Message{}, MessageStop{}, ErrIncompleteStream
	}
	msg := Message{Role: RoleAssistant, Content: a.blocks}
	stop := a.stop
	if len(msg.ToolUses()) > 0 {
		if stop.StopReason == StopContentFiltered || stop.StopReason == StopGuardrailIntervened {
			kept := make([]ContentBlock, 0, len(msg.Content))
			for _, b := range msg.Content {
				if b.ToolUse == nil {
					kept = append(kept, b)
				}
			}
			msg.Content = kept
		} else {
			stop.StopReason = StopToolUse
		}
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
