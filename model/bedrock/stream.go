package bedrock

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/braidhq/braid/model"
)

// protocolError: the event stream broke the Converse event order.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

// blockKind is the kind of the block a turn has open.
type blockKind int

const (
	noBlock blockKind = iota
	textBlock
	toolBlock
)

// turn translates the events of one ConverseStream answer into Braid stream
// events. It is used by one goroutine, for one attempt.
type turn struct {
	yield func(model.StreamEvent, error) bool
	// yielded: something went to the consumer (no retry after that).
	yielded bool
	// open block, by Converse contentBlockIndex.
	open      blockKind
	openIndex int32
	// messageStop seen, and its reason; usage from metadata.
	stopped bool
	reason  string
	usage   *types.TokenUsage
}

// errConsumerStopped: the consumer stopped the iteration.
var errConsumerStopped = errors.New("consumer stopped")

// read consumes the event stream until it ends, ctx is done, or the
// consumer stops. It returns nil when the turn was yielded in full (or the
// consumer stopped), ctx.Err(), the stream's error (an exception),
// model.ErrIncompleteStream if the stream ended before messageStop, or a
// *protocolError. It closes the stream.
func (t *turn) read(ctx context.Context, es *bedrockruntime.ConverseStreamEventStream) error {
	defer es.Close()
	events := es.Events()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return t.end(ctx, es)
			}
			// select picks at random when the cancel and an event are
			// both ready: nothing is yielded once ctx is done.
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := t.handle(ev); err != nil {
				if errors.Is(err, errConsumerStopped) {
					return nil
				}
				return err
			}
		}
	}
}

// end runs when the event channel closes: the stream ended, failed, or was
// cut by ctx.
func (t *turn) end(ctx context.Context, es *bedrockruntime.ConverseStreamEventStream) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := es.Err(); err != nil {
		return err
	}
	if !t.stopped {
		return model.ErrIncompleteStream
	}
	t.emit(t.messageStop()) // the last event: whether the consumer stops makes no difference
	return nil
}

// messageStop is the turn's MessageStop: the Converse stop reason (Braid's
// constants have the same names; model_context_window_exceeded is
// max_tokens, as the Anthropic provider has it; others pass through) and the
// usage of the metadata event, its total computed when the event has none.
func (t *turn) messageStop() *model.MessageStop {
	reason := model.StopReason(t.reason)
	if reason == "model_context_window_exceeded" {
		reason = model.StopMaxTokens
	}
	stop := &model.MessageStop{StopReason: reason}
	if u := t.usage; u != nil {
		stop.Usage = model.Usage{
			InputTokens:  int(aws.ToInt32(u.InputTokens)),
			OutputTokens: int(aws.ToInt32(u.OutputTokens)),
			TotalTokens:  int(aws.ToInt32(u.TotalTokens)),
		}
		if u.TotalTokens == nil {
			stop.Usage.TotalTokens = stop.Usage.InputTokens + stop.Usage.OutputTokens
		}
	}
	return stop
}

// handle translates one event.
func (t *turn) handle(ev types.ConverseStreamOutput) error {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		start, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse)
		if !ok {
			return nil // server-side tool results, images: not modelled
		}
		if err := t.closeBlock(); err != nil {
			return err
		}
		t.open, t.openIndex = toolBlock, aws.ToInt32(v.Value.ContentBlockIndex)
		return t.emit(&model.ToolUseStart{ToolUseID: aws.ToString(start.Value.ToolUseId), Name: aws.ToString(start.Value.Name)})
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		index := aws.ToInt32(v.Value.ContentBlockIndex)
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value == "" {
				return nil
			}
			if t.open != noBlock && (t.open != textBlock || t.openIndex != index) {
				if err := t.closeBlock(); err != nil {
					return err
				}
			}
			t.open, t.openIndex = textBlock, index
			return t.emit(&model.TextDelta{Text: d.Value})
		case *types.ContentBlockDeltaMemberToolUse:
			if t.open != toolBlock || t.openIndex != index {
				return &protocolError{fmt.Sprintf("tool input for content block %d, which is not an open tool use", index)}
			}
			if in := aws.ToString(d.Value.Input); in != "" {
				return t.emit(&model.ToolInputDelta{Partial: in})
			}
		}
		return nil // reasoning, citations...: not modelled
	case *types.ConverseStreamOutputMemberContentBlockStop:
		if t.open != noBlock && t.openIndex == aws.ToInt32(v.Value.ContentBlockIndex) {
			return t.closeBlock()
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		t.stopped, t.reason = true, string(v.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		if v.Value.Usage != nil {
			t.usage = v.Value.Usage
		}
	}
	return nil
}

func (t *turn) closeBlock() error {
	if t.open == noBlock {
		return nil
	}
	t.open = noBlock
	return t.emit(&model.BlockStop{})
}

// emit yields ev, and returns errConsumerStopped if the consumer stopped.
func (t *turn) emit(ev model.StreamEvent) error {
	t.yielded = true
	if !t.yield(ev, nil) {
		return errConsumerStopped
	}
	return nil
}

// retryable says whether the attempt may be retried after err: a retryable
// exception of the event stream, or a stream that ended before messageStop,
// before anything was yielded.
func (t *turn) retryable(err error) bool {
	if t.yielded {
		return false
	}
	if errors.Is(err, model.ErrIncompleteStream) {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && retryableStreamCode(apiErr.ErrorCode())
}
