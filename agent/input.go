package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// Input is what an invocation is given: a prompt (one or more messages) or,
// to resume, a list of interrupt responses. Build one with Text, Blocks,
// Messages, Resume or ParseInput. The zero Input is empty: it continues from
// the history as it is.
type Input struct {
	messages  []model.Message
	responses []interrupt.Response
	resume    bool // made by Resume, even with no responses
}

// Text is a prompt of one user text message.
func Text(s string) Input { return Input{messages: []model.Message{model.UserText(s)}} }

// Blocks is a prompt of one user message with the given blocks.
func Blocks(blocks ...model.ContentBlock) Input {
	return Input{messages: []model.Message{{Role: model.RoleUser, Content: blocks}}}
}

// Messages is a prompt of several messages, appended in order.
func Messages(ms ...model.Message) Input { return Input{messages: ms} }

// Resume answers interrupts (SPEC I6). Responses may come in any order and
// may answer only some of the interrupts. Resume() with none is still a
// resume: rejected by an agent that is not interrupted (SPEC I7).
func Resume(responses ...interrupt.Response) Input {
	return Input{responses: responses, resume: true}
}

// IsResume reports whether the input is a resume: made by Resume, or
// carrying interrupt responses.
func (in Input) IsResume() bool { return in.resume || len(in.responses) > 0 }

// Responses returns the interrupt responses.
func (in Input) Responses() []interrupt.Response { return in.responses }

// Prompt returns the prompt messages.
func (in Input) Prompt() []model.Message { return in.messages }

// IsEmpty reports whether the input has neither messages nor responses
// (Resume() with none is empty too, and a resume).
func (in Input) IsEmpty() bool { return len(in.messages) == 0 && len(in.responses) == 0 }

func (in Input) contentKinds() []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range in.messages {
		for _, b := range m.Content {
			k := b.Kind()
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "none")
	}
	return out
}

// ErrBadInput reports that the agent was given something it cannot take.
// The error that matches it says what: JSON that ParseInput reads as none
// of the accepted forms, a prompt message without content, a history
// SetMessages refuses, a state value (SetState) or an invocation value
// (WithValues) that is not JSON.
var ErrBadInput = errors.New("invalid input")

// errInputForms is ParseInput's refusal of JSON of none of its forms.
var errInputForms = fmt.Errorf("%w: want a string, a list of content blocks, a list of messages, or a list of interruptResponse blocks", ErrBadInput)

// ParseInput reads an input in the JSON forms Strands accepts: a string (a
// prompt), a list of content blocks (one user message), a list of messages
// ({"role":..,"content":[..]}), or a list of interruptResponse blocks (a
// resume, byte-compatible with Python and TypeScript clients). JSON null or an
// empty list is the empty input. A list that mixes interrupt responses with
// other content is rejected with interrupt.ErrMixedInput.
func ParseInput(data []byte) (Input, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return Input{}, nil
	}
	switch data[0] {
	case '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return Input{}, fmt.Errorf("%w: %v", errInputForms, err)
		}
		return Text(s), nil
	case '[':
	default:
		return Input{}, errInputForms
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return Input{}, fmt.Errorf("%w: %v", errInputForms, err)
	}
	if len(items) == 0 {
		return Input{}, nil
	}
	var nResp, nMsg int
	var other []string
	for _, it := range items {
		switch {
		case interrupt.IsResponseBlock(it):
			nResp++
		case it["role"] != nil && it["content"] != nil:
			nMsg++
		default:
			for k := range it {
				if k != "type" {
					other = append(other, k)
					break
				}
			}
		}
	}
	switch {
	case nResp > 0 && (nMsg > 0 || len(other) > 0):
		kinds := other
		if nMsg > 0 {
			kinds = append(kinds, "message")
		}
		return Input{}, &interrupt.ContentError{Types: kinds, Mixed: true}
	case nResp > 0:
		rs, err := interrupt.ParseResponses(data)
		if err != nil {
			return Input{}, err
		}
		return Resume(rs...), nil
	case nMsg > 0 && len(other) > 0:
		return Input{}, fmt.Errorf("%w: messages mixed with content blocks", errInputForms)
	case nMsg > 0:
		var ms []model.Message
		if err := json.Unmarshal(data, &ms); err != nil {
			return Input{}, fmt.Errorf("%w: %v", errInputForms, err)
		}
		for i, m := range ms {
			if m.Role != model.RoleUser && m.Role != model.RoleAssistant {
				return Input{}, fmt.Errorf("%w: message %d has role %q", errInputForms, i, m.Role)
			}
		}
		return Messages(ms...), nil
	default:
		var blocks []model.ContentBlock
		if err := json.Unmarshal(data, &blocks); err != nil {
			return Input{}, fmt.Errorf("%w: %v", errInputForms, err)
		}
		return Blocks(blocks...), nil
	}
}
