package openai

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	sdk "github.com/openai/openai-go/v3"

	"github.com/braidhq/braid/model"
)

// errNoFinish: the stream ended (cleanly or not) before its choice had a
// finish_reason.
var errNoFinish = errors.New("no finish_reason received")

// turn folds the chunks of one streamed chat completion into Braid stream
// events, which it queues until take is called.
//
// Text is passed on as it comes. Tool calls are passed on one at a time, in
// the order they first appear: the open call's argument fragments go out as
// they arrive; a call that starts while another is open waits until the open
// one's arguments are complete JSON (or the choice finishes); text that
// arrives while a call is open or waiting is sent after the calls. So the
// events always form a sequence model.Accumulator accepts (every block ended
// by a BlockStop), however the server interleaves text and calls.
type turn struct {
	events   []model.StreamEvent
	textOpen bool        // a text block is open
	calls    []*toolCall // in order of first appearance
	byIndex  map[int64]*toolCall
	next     int  // calls[:next] are closed
	open     bool // calls[next] is open
	held     strings.Builder
	finish   string // the choice's finish_reason, once seen
	usage    model.Usage
}

// toolCall is one streamed tool call.
type toolCall struct {
	id, name string
	args     strings.Builder
	sent     int // bytes of args already passed on
}

// add folds one chunk in.
func (t *turn) add(c *sdk.ChatCompletionChunk) error {
	if c.JSON.Usage.Valid() {
		t.usage = model.Usage{
			InputTokens:  int(c.Usage.PromptTokens),
			OutputTokens: int(c.Usage.CompletionTokens),
			TotalTokens:  int(c.Usage.TotalTokens),
		}
		if t.usage.TotalTokens == 0 {
			t.usage.TotalTokens = t.usage.InputTokens + t.usage.OutputTokens
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		t.text(ch.Delta.Content)
		t.text(ch.Delta.Refusal)
		for j := range ch.Delta.ToolCalls {
			t.toolFragment(&ch.Delta.ToolCalls[j])
		}
		t.pump()
		if ch.FinishReason != "" {
			t.finish = ch.FinishReason
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// text passes s on, or holds it while tool calls are open or waiting.
func (t *turn) text(s string) {
	if s == "" {
		return
	}
	if t.next < len(t.calls) {
		t.held.WriteString(s)
		return
	}
	t.textOpen = true
	t.events = append(t.events, &model.TextDelta{Text: s})
}

// toolFragment records one tool-call delta.
func (t *turn) toolFragment(d *sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	if t.byIndex == nil {
		t.byIndex = map[int64]*toolCall{}
	}
	tc := t.byIndex[d.Index]
	// A new id at a known index is a new call (servers that send every
	// call whole, without distinct indexes).
	if tc == nil || (d.ID != "" && tc.id != "" && d.ID != tc.id) {
		tc = &toolCall{}
		t.calls = append(t.calls, tc)
		t.byIndex[d.Index] = tc
	}
	if tc.id == "" {
		tc.id = d.ID
	}
	if tc.name == "" {
		tc.name = d.Function.Name
	}
	tc.args.WriteString(d.Function.Arguments)
}

// pump passes on what can be passed on mid-stream.
func (t *turn) pump() {
	for t.next < len(t.calls) {
		tc := t.calls[t.next]
		if !t.open {
			if tc.name == "" {
				return // wait for the name
			}
			t.start(tc)
		}
		t.sendArgs(tc)
		if t.next == len(t.calls)-1 || !completeJSON(tc.args.String()) {
			return
		}
		t.close()
	}
}

// flush ends every block: the open call, the waiting calls, the held text.
func (t *turn) flush() error {
	for t.next < len(t.calls) {
		tc := t.calls[t.next]
		if !t.open {
			if tc.name == "" {
				return fmt.Errorf("tool call %d (id %q) has no function name", t.next, tc.id)
			}
			t.start(tc)
		}
		t.sendArgs(tc)
		t.close()
	}
	if t.held.Len() > 0 {
		t.text(t.held.String())
		t.held.Reset()
	}
	if t.textOpen {
		t.events = append(t.events, &model.BlockStop{})
		t.textOpen = false
	}
	return nil
}

func (t *turn) start(tc *toolCall) {
	if t.textOpen {
		t.events = append(t.events, &model.BlockStop{})
		t.textOpen = false
	}
	if tc.id == "" {
		// A server that sends no id: one no other tool use has, since the
		// agent keys idempotency and at-most-once marks by it (SPEC S6),
		// and one every provider takes back: 37 characters of letters,
		// digits and '_' (the Chat Completions API allows 40).
		u := uuid.New()
		tc.id = "call_" + hex.EncodeToString(u[:])
	}
	t.events = append(t.events, &model.ToolUseStart{ToolUseID: tc.id, Name: tc.name})
	t.open = true
}

func (t *turn) sendArgs(tc *toolCall) {
	if s := tc.args.String(); len(s) > tc.sent {
		t.events = append(t.events, &model.ToolInputDelta{Partial: s[tc.sent:]})
		tc.sent = len(s)
	}
}

func (t *turn) close() {
	t.events = append(t.events, &model.BlockStop{})
	t.open = false
	t.next++
}

// take returns the queued events and empties the queue.
func (t *turn) take() []model.StreamEvent {
	evs := t.events
	t.events = nil
	return evs
}

// end is called when the stream ended with [DONE] (or cleanly): it ends the
// open blocks and returns the MessageStop, or errNoFinish if the choice never
// finished.
func (t *turn) end() (*model.MessageStop, error) {
	if t.finish == "" {
		return nil, errNoFinish
	}
	if err := t.flush(); err != nil {
		return nil, err
	}
	return &model.MessageStop{StopReason: stopReason(t.finish, len(t.calls) > 0), Usage: t.usage}, nil
}

// stopReason maps a finish_reason: stop → end_turn, tool_calls → tool_use,
// length → max_tokens, content_filter → content_filtered; anything else →
// end_turn. Whether the turn is tool_use goes by its calls, not by the
// word: a turn with calls that says "stop" (as some servers do) reports
// tool_use, one that says "tool_calls" without any reports end_turn (so an
// agent does not loop on an empty tool round).
func stopReason(finish string, hasCalls bool) model.StopReason {
	switch finish {
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return model.StopContentFiltered
	}
	if hasCalls {
		return model.StopToolUse
	}
	return model.StopEndTurn
}

// completeJSON reports whether s is a whole JSON value (a call's arguments
// can only grow into invalid JSON after that).
func completeJSON(s string) bool {
	b := bytes.TrimSpace([]byte(s))
	return len(b) > 0 && json.Valid(b)
}
