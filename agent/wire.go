package agent

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// The protobuf forms of the agent actor's messages (SPEC R2; the protocol
// is proto/braidv1/agent.proto). Messages, tool uses and results travel
// as their JSON.

// wireErrors is the codec of the agent's errors: every error of SPEC I7
// and of this package survives the trip (errors.Is and errors.As work on
// the receiving side). Built once; immutable.
var wireErrors = sync.OnceValues(func() (*actors.ErrorCodec, error) {
	return actors.NewErrorCodec(
		actors.ErrorCode{Code: "agent.ErrClosed", Err: ErrClosed},
		actors.ErrorCode{Code: "agent.ErrCancelled", Err: ErrCancelled},
		actors.ErrorCode{Code: "agent.ErrDirectInterrupt", Err: ErrDirectInterrupt},
		actors.ErrorCode{Code: "agent.ErrInterruptedDirect", Err: ErrInterruptedDirect},
		actors.ErrorCode{Code: "agent.ErrUnknownTool", Err: ErrUnknownTool},
		actors.ErrorCode{Code: "agent.ErrEmptyInput", Err: ErrEmptyInput},
		actors.ErrorCode{Code: "agent.ErrIncompleteRun", Err: ErrIncompleteRun},
		actors.ErrorCode{Code: "agent.ErrTooManyResumes", Err: ErrTooManyResumes},
		actors.ErrorCode{Code: "agent.ErrAutoResume", Err: ErrAutoResume},
		actors.ErrorCode{Code: "agent.ErrInterruptedReset", Err: ErrInterruptedReset},
		actors.ErrorCode{Code: "agent.ErrBadInput", Err: ErrBadInput},
		actors.ErrorCode{Code: "agent.ErrConfig", Err: ErrConfig},
		actors.ErrorCode{Code: "agent.ErrSnapshot", Err: ErrSnapshot},
		actors.ErrorCode{Code: "agent.ErrPanic", Err: ErrPanic},
		actors.ErrorCode{Code: "agent.ErrReentrant", Err: ErrReentrant},
		actors.ErrorCode{Code: "agent.ErrFaulted", Err: ErrFaulted},
	)
})

// ErrorToWire is the protobuf form of an error an agent actor replies with.
func ErrorToWire(err error) *braidv1.Error {
	c, cerr := wireErrors()
	if cerr != nil {
		return &braidv1.Error{Message: err.Error()}
	}
	return c.Encode(err)
}

// ErrorFromWire rebuilds an error from its protobuf form: its text is the
// sender's, and errors.Is and errors.As match what the sender's matched.
func ErrorFromWire(w *braidv1.Error) error {
	c, err := wireErrors()
	if err != nil {
		return fmt.Errorf("%s (%w)", w.GetMessage(), err)
	}
	return c.Decode(w)
}

// InputToWire is the protobuf form of an input. A response whose answer
// could not be encoded as JSON cannot be carried: it is refused here with
// its *interrupt.IDError (errors.Is interrupt.ErrAnswer), as an in-process
// resume refuses it, and nothing is sent.
func InputToWire(in Input) (*braidv1.AgentInput, error) {
	w := &braidv1.AgentInput{Resume: in.resume}
	for _, m := range in.messages {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
		w.Messages = append(w.Messages, b)
	}
	for _, r := range in.responses {
		if err := r.Err(); err != nil {
			return nil, err
		}
		w.Responses = append(w.Responses, actors.ResponseToWire(r))
	}
	return w, nil
}

// InputFromWire rebuilds an input, checking its messages like ParseInput.
func InputFromWire(w *braidv1.AgentInput) (Input, error) {
	in := Input{resume: w.GetResume()}
	for i, b := range w.GetMessages() {
		var m model.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return Input{}, fmt.Errorf("%w: message %d: %v", ErrBadInput, i, err)
		}
		if err := m.Validate(); err != nil {
			return Input{}, fmt.Errorf("%w: message %d: %v", ErrBadInput, i, err)
		}
		in.messages = append(in.messages, m)
	}
	for _, rw := range w.GetResponses() {
		r, err := actors.ResponseFromWire(rw)
		if err != nil {
			return Input{}, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
		in.responses = append(in.responses, r)
	}
	return in, nil
}

// ResultToWire is the protobuf form of a result.
func ResultToWire(r *Result) (*braidv1.AgentResult, error) {
	msg, err := json.Marshal(r.Message)
	if err != nil {
		return nil, err
	}
	w := &braidv1.AgentResult{
		StopReason: string(r.StopReason),
		Message:    msg,
		Usage:      &braidv1.Usage{InputTokens: int64(r.Usage.InputTokens), OutputTokens: int64(r.Usage.OutputTokens), TotalTokens: int64(r.Usage.TotalTokens)},
		Metrics: &braidv1.Metrics{Cycles: int64(r.Metrics.Cycles), ModelCalls: int64(r.Metrics.ModelCalls),
			ToolCalls: int64(r.Metrics.ToolCalls), DurationNs: int64(r.Metrics.Duration)},
		History: int64(r.History),
	}
	for _, in := range r.Interrupts {
		w.Interrupts = append(w.Interrupts, actors.InterruptToWire(in))
	}
	return w, nil
}

// ResultFromWire rebuilds a result.
func ResultFromWire(w *braidv1.AgentResult) (*Result, error) {
	r := &Result{StopReason: StopReason(w.GetStopReason())}
	if err := json.Unmarshal(w.GetMessage(), &r.Message); err != nil {
		return nil, fmt.Errorf("wire result: message: %w", err)
	}
	for _, iw := range w.GetInterrupts() {
		in, err := actors.InterruptFromWire(iw)
		if err != nil {
			return nil, err
		}
		r.Interrupts = append(r.Interrupts, in)
	}
	u, m := w.GetUsage(), w.GetMetrics()
	r.Usage = model.Usage{InputTokens: int(u.GetInputTokens()), OutputTokens: int(u.GetOutputTokens()), TotalTokens: int(u.GetTotalTokens())}
	r.Metrics = Metrics{Cycles: int(m.GetCycles()), ModelCalls: int(m.GetModelCalls()), ToolCalls: int(m.GetToolCalls()), Duration: time.Duration(m.GetDurationNs())}
	r.History = int(w.GetHistory())
	return r, nil
}

// EventToWire is the protobuf form of a stream event; a *ResultEvent is
// sent as an AgentResult instead (nil here).
func EventToWire(ev Event) (*braidv1.AgentEvent, error) {
	marshal := func(v any) ([]byte, error) { return json.Marshal(v) }
	switch e := ev.(type) {
	case *TextDeltaEvent:
		return &braidv1.AgentEvent{Event: &braidv1.AgentEvent_TextDelta{TextDelta: e.Text}}, nil
	case *ToolUseEvent:
		b, err := marshal(e.ToolUse)
		return &braidv1.AgentEvent{Event: &braidv1.AgentEvent_ToolUse{ToolUse: b}}, err
	case *ToolResultEvent:
		b, err := marshal(e.Result)
		return &braidv1.AgentEvent{Event: &braidv1.AgentEvent_ToolResult{ToolResult: b}}, err
	case *MessageEvent:
		b, err := marshal(e.Message)
		return &braidv1.AgentEvent{Event: &braidv1.AgentEvent_Message{Message: b}}, err
	case *InterruptEvent:
		return &braidv1.AgentEvent{Event: &braidv1.AgentEvent_Interrupt{Interrupt: actors.InterruptToWire(e.Interrupt)}}, nil
	}
	return nil, fmt.Errorf("wire event: %T has no protobuf form", ev)
}

// EventFromWire rebuilds a stream event.
func EventFromWire(w *braidv1.AgentEvent) (Event, error) {
	switch e := w.GetEvent().(type) {
	case *braidv1.AgentEvent_TextDelta:
		return &TextDeltaEvent{Text: e.TextDelta}, nil
	case *braidv1.AgentEvent_ToolUse:
		ev := &ToolUseEvent{}
		return ev, json.Unmarshal(e.ToolUse, &ev.ToolUse)
	case *braidv1.AgentEvent_ToolResult:
		ev := &ToolResultEvent{}
		return ev, json.Unmarshal(e.ToolResult, &ev.Result)
	case *braidv1.AgentEvent_Message:
		ev := &MessageEvent{}
		return ev, json.Unmarshal(e.Message, &ev.Message)
	case *braidv1.AgentEvent_Interrupt:
		in, err := actors.InterruptFromWire(e.Interrupt)
		return &InterruptEvent{Interrupt: in}, err
	}
	return nil, fmt.Errorf("wire event: empty or unknown event %T", w.GetEvent())
}

// messagesFromWire decodes JSON messages.
func messagesFromWire(raw [][]byte) ([]model.Message, error) {
	out := make([]model.Message, 0, len(raw))
	for i, b := range raw {
		var m model.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", ErrBadInput, i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// interruptsToWire converts interrupts to their protobuf form.
func interruptsToWire(ins []interrupt.Interrupt) []*braidv1.Interrupt {
	out := make([]*braidv1.Interrupt, 0, len(ins))
	for _, in := range ins {
		out = append(out, actors.InterruptToWire(in))
	}
	return out
}
