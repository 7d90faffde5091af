package agent

import (
	"encoding/json"
	"time"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// StopReason says why an invocation ended.
type StopReason = model.StopReason

// Stop reasons of SPEC A9.
const (
	StopEndTurn             = model.StopEndTurn
	StopToolUse             = model.StopToolUse
	StopMaxTokens           = model.StopMaxTokens
	StopSequence            = model.StopSequence
	StopContentFiltered     = model.StopContentFiltered
	StopGuardrailIntervened = model.StopGuardrailIntervened
	// StopInterrupt: the agent waits for answers to Result.Interrupts.
	StopInterrupt StopReason = "interrupt"
	// StopCancelled: Cancel was called, or a hook cancelled the invocation.
	StopCancelled StopReason = "cancelled"
)

// Result is the outcome of one invocation (SPEC A9).
type Result struct {
	StopReason StopReason
	// Message is the last assistant message; on interrupt, the pending
	// assistant tool-use message (or, for a BeforeModelCall interrupt, the
	// last message of the history).
	Message model.Message
	// Interrupts lists every unanswered interrupt, in raise order (SPEC I8).
	Interrupts []interrupt.Interrupt
	// Usage is the model usage of the invocation: each of its model calls
	// once. A resume counts its own calls, not those of the invocation it
	// resumes. With a Session, an invocation that carries on (Input{}) a
	// run a crash or a Close cut off counts that run's calls before the cut
	// too, as saved with their turns (Snapshot.Usage).
	Usage   model.Usage
	Metrics Metrics
	// History is the number of messages in the agent's history when the
	// invocation returned (a pending tool cycle's messages are not in it
	// yet, SPEC A3).
	History int
}

// Metrics counts the work of one invocation done by this activation: an
// invocation that carries on a run a crash or a Close cut off counts from
// where it carried on (unlike Usage, the counts are not saved), and its
// Duration is the carried-on part's.
type Metrics struct {
	Cycles     int
	ModelCalls int
	ToolCalls  int
	Duration   time.Duration
}

// Interrupted reports whether the agent stopped for interrupts.
func (r *Result) Interrupted() bool { return r != nil && r.StopReason == StopInterrupt }

// String returns the interrupts as JSON when there are any, else the text of
// the message.
func (r *Result) String() string {
	if r == nil {
		return ""
	}
	if len(r.Interrupts) > 0 {
		b, err := json.Marshal(r.Interrupts)
		if err == nil {
			return string(b)
		}
	}
	return r.Message.Text()
}
