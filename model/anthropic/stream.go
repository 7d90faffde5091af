package anthropic

import (
	"bytes"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/braidhq/braid/model"
)

// blockKind is what a content block of the stream became.
type blockKind int

const (
	blockIgnored blockKind = iota // thinking, server tools...: not passed on
	blockText
	blockToolUse
)

// translator turns the Messages API's stream events into model stream
// events. It is used by one attempt, from one goroutine.
type translator struct {
	started bool // message_start seen
	done    bool // message_stop seen
	blocks  map[int64]blockKind
	current int64 // index of the open block, -1 when none
	// input of the open tool use from content_block_start, sent at its stop
	// when no input_json_delta came (the API sends {} there and streams the
	// input; a server that sends it whole still works).
	startInput []byte
	gotInput   bool
	stop       model.MessageStop
}

// translate maps one event. Text blocks become TextDeltas, tool_use blocks
// ToolUseStart, ToolInputDelta (one per partial_json fragment) and BlockStop;
// other blocks (thinking, server tool results, ...) and their deltas are
// dropped. message_stop becomes MessageStop with the stop reason of
// message_delta and the usage: input tokens from message_start (or
// message_delta when it has them), output tokens from message_delta.
func (t *translator) translate(ev sdk.MessageStreamEventUnion) ([]model.StreamEvent, error) {
	switch ev.Type {
	case "message_start":
		if t.started {
			return nil, fmt.Errorf("second message_start in one stream")
		}
		t.started = true
		t.current = -1
		t.blocks = map[int64]blockKind{}
		u := ev.Message.Usage
		t.stop.Usage.InputTokens = int(u.InputTokens)
		t.stop.Usage.OutputTokens = int(u.OutputTokens)
		return nil, nil
	}
	if !t.started {
		return nil, fmt.Errorf("%s event before message_start", ev.Type)
	}
	switch ev.Type {
	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "text":
			t.blocks[ev.Index] = blockText
			t.current = ev.Index
			if cb.Text != "" {
				return []model.StreamEvent{&model.TextDelta{Text: cb.Text}}, nil
			}
		case "tool_use":
			if cb.Name == "" {
				return nil, fmt.Errorf("tool_use block %d has no name", ev.Index)
			}
			t.blocks[ev.Index] = blockToolUse
			t.current = ev.Index
			t.startInput, t.gotInput = nil, false
			if raw := bytes.TrimSpace([]byte(cb.JSON.Input.Raw())); len(raw) > 0 && !bytes.Equal(raw, []byte("{}")) && !bytes.Equal(raw, []byte("null")) {
				t.startInput = raw
			}
			return []model.StreamEvent{&model.ToolUseStart{ToolUseID: cb.ID, Name: cb.Name}}, nil
		default:
			t.blocks[ev.Index] = blockIgnored
		}
	case "content_block_delta":
		kind, ok := t.blocks[ev.Index]
		if !ok {
			return nil, fmt.Errorf("content_block_delta for block %d, which was not started", ev.Index)
		}
		switch {
		case kind == blockText && ev.Delta.Type == "text_delta" && ev.Delta.Text != "":
			return []model.StreamEvent{&model.TextDelta{Text: ev.Delta.Text}}, nil
		case kind == blockToolUse && ev.Delta.Type == "input_json_delta" && ev.Delta.PartialJSON != "":
			t.gotInput = true
			return []model.StreamEvent{&model.ToolInputDelta{Partial: ev.Delta.PartialJSON}}, nil
		}
	case "content_block_stop":
		kind, ok := t.blocks[ev.Index]
		if !ok {
			return nil, fmt.Errorf("content_block_stop for block %d, which was not started", ev.Index)
		}
		if kind == blockIgnored {
			return nil, nil
		}
		t.current = -1
		if kind == blockToolUse && !t.gotInput && t.startInput != nil {
			in := string(t.startInput)
			t.startInput = nil
			return []model.StreamEvent{&model.ToolInputDelta{Partial: in}, &model.BlockStop{}}, nil
		}
		return []model.StreamEvent{&model.BlockStop{}}, nil
	case "message_delta":
		if r := ev.Delta.StopReason; r != "" {
			t.stop.StopReason = stopReason(r)
		}
		u := ev.Usage
		if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
			t.stop.Usage.InputTokens = int(u.InputTokens)
		}
		if u.JSON.OutputTokens.Valid() {
			t.stop.Usage.OutputTokens = int(u.OutputTokens)
		}
	case "message_stop":
		t.done = true
		stop := t.stop
		if stop.StopReason == "" {
			stop.StopReason = model.StopEndTurn
		}
		stop.Usage.TotalTokens = stop.Usage.InputTokens + stop.Usage.OutputTokens
		var out []model.StreamEvent
		if t.current >= 0 {
			// A block left open: close it so the turn is well formed.
			out = append(out, &model.BlockStop{})
			t.current = -1
		}
		return append(out, &stop), nil
	}
	// Unknown event types are skipped, as the API's versioning policy asks.
	return nil, nil
}

// stopReason maps the API's stop_reason: refusal → content_filtered,
// model_context_window_exceeded → max_tokens (the output was cut short);
// end_turn, tool_use, max_tokens and stop_sequence keep their names, and any
// other (pause_turn, ...) is passed on as it is.
func stopReason(r sdk.StopReason) model.StopReason {
	switch r {
	case sdk.StopReasonEndTurn:
		return model.StopEndTurn
	case sdk.StopReasonToolUse:
		return model.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return model.StopSequence
	case sdk.StopReasonRefusal:
		return model.StopContentFiltered
	}
	return model.StopReason(r)
}
