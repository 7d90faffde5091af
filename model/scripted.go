package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/braidhq/braid/internal/strictjson"
)

// ErrScriptExhausted is returned when a Scripted model is called more often
// than it has turns.
var ErrScriptExhausted = errors.New("scripted model: no turns left")

// Turn is one scripted assistant turn. Set Text for a text answer, Calls for
// tool uses (both may be set: the text comes first), or Err to make the call
// fail. StopReason defaults to tool_use when there are calls and end_turn
// otherwise.
type Turn struct {
	Text       string
	Calls      []ToolCall
	StopReason StopReason
	Usage      Usage
	Err        error
}

// ToolCall is a tool use in a scripted turn. Input is any JSON-encodable
// value (or a json.RawMessage).
type ToolCall struct {
	ID    string
	Name  string
	Input any
}

// TextTurn returns a turn that answers with text.
func TextTurn(text string) Turn { return Turn{Text: text} }

// ToolTurn returns a turn that asks for the given tool calls.
func ToolTurn(calls ...ToolCall) Turn { return Turn{Calls: calls} }

// Call is shorthand for a ToolCall.
func Call(id, name string, input any) ToolCall { return ToolCall{ID: id, Name: name, Input: input} }

// ScriptedModel is a deterministic, offline Model. It plays a queue of turns
// or asks a function for each turn. It is safe for concurrent use and counts
// its calls, which tests use to assert that a resume does not call the model.
type ScriptedModel struct {
	mu    sync.Mutex
	turns []Turn
	next  int
	fn    func(req *Request) (Turn, error)
	calls int
}

// Scripted returns a model that answers call n with turns[n]; a call past the
// end fails with ErrScriptExhausted. n counts the calls of this value only,
// not the turns of the conversation: an agent that a new process restores
// from its session (to resume an interrupt, say) makes its next call with
// a new Scripted, which answers it with turns[0] again. For a run that goes
// on in another process, use ScriptedFunc, whose turn depends on the
// request's messages.
func Scripted(turns ...Turn) *ScriptedModel {
	return &ScriptedModel{turns: turns}
}

// ScriptedFunc returns a model whose every turn is fn of the request (a
// function of the conversation), such as "call the tool, then answer once
// the results are in".
func ScriptedFunc(fn func(req *Request) (Turn, error)) *ScriptedModel {
	return &ScriptedModel{fn: fn}
}

// Calls returns how many times the model was called.
func (s *ScriptedModel) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Remaining returns how many queued turns are left (0 for ScriptedFunc).
func (s *ScriptedModel) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

func (s *ScriptedModel) turn(req *Request) (Turn, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	if s.fn != nil {
		fn := s.fn
		s.mu.Unlock()
		return fn(req)
	}
	defer s.mu.Unlock()
	if s.next >= len(s.turns) {
		return Turn{}, fmt.Errorf("%w (call %d, %d scripted)", ErrScriptExhausted, n, len(s.turns))
	}
	t := s.turns[s.next]
	s.next++
	return t, nil
}

// Stream plays the next turn as stream events: one TextDelta for the text,
// then ToolUseStart, ToolInputDelta and BlockStop for each call, then
// MessageStop.
func (s *ScriptedModel) Stream(ctx context.Context, req *Request) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		t, err := s.turn(req)
		if err == nil {
			err = t.Err
		}
		if err != nil {
			yield(nil, err)
			return
		}
		if t.Text != "" {
			if !yield(&TextDelta{Text: t.Text}, nil) || !yield(&BlockStop{}, nil) {
				return
			}
		}
		for _, c := range t.Calls {
			raw, err := callInput(c)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(&ToolUseStart{ToolUseID: c.ID, Name: c.Name}, nil) ||
				!yield(&ToolInputDelta{Partial: string(raw)}, nil) ||
				!yield(&BlockStop{}, nil) {
				return
			}
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		stop := t.StopReason
		if stop == "" {
			stop = StopEndTurn
			if len(t.Calls) > 0 {
				stop = StopToolUse
			}
		}
		yield(&MessageStop{StopReason: stop, Usage: t.Usage}, nil)
	}
}

func callInput(c ToolCall) ([]byte, error) {
	switch in := c.Input.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		if !json.Valid(in) {
			return nil, fmt.Errorf("scripted call %s (%s): input is not valid JSON", c.ID, c.Name)
		}
		return in, nil
	}
	raw, err := strictjson.Marshal(c.Input)
	if err != nil {
		return nil, fmt.Errorf("scripted call %s (%s): %w", c.ID, c.Name, err)
	}
	return raw, nil
}

// LastMessage returns the last message of the request, or false if it has none.
func (r *Request) LastMessage() (Message, bool) {
	if r == nil || len(r.Messages) == 0 {
		return Message{}, false
	}
	return r.Messages[len(r.Messages)-1], true
}
