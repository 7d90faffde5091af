package actors

import (
	"errors"
	"fmt"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/proto/braidv1"
)

// ErrUnknownMessage reports that an owner (an agent, an orchestrator) was
// sent a message it does not take: a message of another owner's protocol,
// of no protocol, or a plain Go value. Its sender, if it has one, gets this
// as the reply rather than waiting for nothing (SPEC R2, R5); a message
// without a sender is dropped. Either way the owner is as it was.
var ErrUnknownMessage = errors.New("unknown message: the owner does not take it")

// InterruptToWire converts an interrupt to its protobuf form.
func InterruptToWire(in interrupt.Interrupt) *braidv1.Interrupt {
	w := &braidv1.Interrupt{Id: in.ID, Name: in.Name, Reason: in.Reason, Source: string(in.Source)}
	if in.Answered {
		w.Response = in.Response.Raw()
	}
	return w
}

// InterruptFromWire converts the protobuf form back, checking the JSON and
// the source.
func InterruptFromWire(w *braidv1.Interrupt) (interrupt.Interrupt, error) {
	if w.GetId() == "" {
		return interrupt.Interrupt{}, fmt.Errorf("wire interrupt: %w", interrupt.ErrEmptyID)
	}
	in := interrupt.Interrupt{ID: w.GetId(), Name: w.GetName(), Source: interrupt.Source(w.GetSource())}
	if !in.Source.Valid() {
		return interrupt.Interrupt{}, fmt.Errorf("wire interrupt %s: unknown source %q", in.ID, w.GetSource())
	}
	if len(w.GetReason()) > 0 {
		v, err := interrupt.JSON(w.GetReason())
		if err != nil {
			return interrupt.Interrupt{}, fmt.Errorf("wire interrupt %s: reason: %w", in.ID, err)
		}
		in.Reason = v.Raw()
	}
	if len(w.GetResponse()) > 0 {
		v, err := interrupt.JSON(w.GetResponse())
		if err != nil {
			return interrupt.Interrupt{}, fmt.Errorf("wire interrupt %s: response: %w", in.ID, err)
		}
		in.Response, in.Answered = v, true
	}
	return in, nil
}

// ResponseToWire converts a response to its protobuf form.
func ResponseToWire(r interrupt.Response) *braidv1.InterruptResponse {
	return &braidv1.InterruptResponse{InterruptId: r.ID, Response: r.Value.Raw()}
}

// ResponseFromWire converts the protobuf form back. Empty response bytes
// give a Response without an answer, which State.Resume rejects.
func ResponseFromWire(w *braidv1.InterruptResponse) (interrupt.Response, error) {
	if len(w.GetResponse()) == 0 {
		return interrupt.Response{ID: w.GetInterruptId()}, nil
	}
	v, err := interrupt.JSON(w.GetResponse())
	if err != nil {
		return interrupt.Response{}, fmt.Errorf("wire response %s: %w", w.GetInterruptId(), err)
	}
	return interrupt.Respond(w.GetInterruptId(), v), nil
}
