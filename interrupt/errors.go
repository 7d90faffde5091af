package interrupt

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Typed errors below match them with errors.Is.
var (
	// ErrInterrupted is matched by the error Scope.Interrupt returns when the
	// interrupt has no answer yet. A hook or tool returns it to the runtime.
	ErrInterrupted = errors.New("interrupted")
	// ErrNotInterrupted: interrupt responses were given to an owner that is
	// not waiting for any.
	ErrNotInterrupted = errors.New("not interrupted: interrupt responses are only accepted while interrupted")
	// ErrResumeRequired: a prompt (or other content) was given while the
	// owner waits for interrupt responses.
	ErrResumeRequired = errors.New("interrupted: resume with interrupt responses, not a prompt")
	// ErrMixedInput: interrupt responses and other content in one input.
	ErrMixedInput = errors.New("input mixes interrupt responses with other content: resume with interrupt responses only")
	// ErrEmptyResume: a resume with no responses at all.
	ErrEmptyResume = errors.New("resume has no interrupt responses")
	// ErrUnknownID: a response names an interrupt the owner does not have.
	ErrUnknownID = errors.New("no interrupt found")
	// ErrMissingResponse: a response block has no "response" field.
	ErrMissingResponse = errors.New(`interrupt response has no "response" field`)
	// ErrDuplicateResponse: one resume answers the same id twice.
	ErrDuplicateResponse = errors.New("interrupt answered more than once in one resume")
	// ErrDuplicateName: two callbacks of one event raised the same name.
	ErrDuplicateName = errors.New("interrupt name used more than once")
	// ErrReason: the reason given to Interrupt cannot be encoded as JSON.
	ErrReason = errors.New("interrupt reason is not JSON-encodable")
	// ErrAnswer: an answer given to Respond cannot be encoded as JSON.
	ErrAnswer = errors.New("interrupt answer is not JSON-encodable")
	// ErrNoAnswer: a Value holds nothing.
	ErrNoAnswer = errors.New("no answer")
	// ErrNoReason: the interrupt was raised without a reason.
	ErrNoReason = errors.New("interrupt has no reason")
	// ErrEmptyID: a record or response has an empty interrupt id.
	ErrEmptyID = errors.New("empty interrupt id")
	// ErrEmptyName: Interrupt was called with an empty name.
	ErrEmptyName = errors.New("empty interrupt name")
	// ErrNotUTF8: Interrupt was called with a name, or for an id, that is
	// not valid UTF-8. Sessions store JSON, whose writers replace such
	// bytes, so the interrupt would not read back as the caller was given
	// it (a fresh runtime would not know its id). Nothing is recorded.
	ErrNotUTF8 = errors.New("interrupt name or id is not valid UTF-8: use UTF-8 text")
	// ErrNotInterruptible: Interrupt was called where interrupts are not
	// supported, such as a direct tool call.
	ErrNotInterruptible = errors.New("interrupts are not supported here")
	// ErrScopeEnded: Interrupt was called on an event or tool context after
	// its callback or tool call had returned (kept and used later, from
	// another goroutine, say). Nothing is recorded: raise interrupts only
	// while the callback or tool runs.
	ErrScopeEnded = errors.New("interrupt raised after its event or tool call returned: raise interrupts only while the callback or tool runs")
)

// RaisedError is returned by Scope.Interrupt for an unanswered interrupt. It
// matches ErrInterrupted.
type RaisedError struct {
	Interrupt Interrupt
}

func (e *RaisedError) Error() string {
	return "interrupt raised: " + e.Interrupt.Name
}

// Is reports whether target is ErrInterrupted.
func (e *RaisedError) Is(target error) bool { return target == ErrInterrupted }

// IDError is a rejection of one response of a resume (SPEC I7). Err is one of
// ErrUnknownID, ErrMissingResponse, ErrDuplicateResponse, ErrNotInterrupted,
// ErrEmptyID or ErrAnswer; errors.Is matches it.
type IDError struct {
	ID  string
	Err error
}

func (e *IDError) Error() string { return fmt.Sprintf("interrupt_id=<%s> | %v", e.ID, e.Err) }

// Unwrap returns the sentinel.
func (e *IDError) Unwrap() error { return e.Err }

// EmptyResumeError is the rejection of a resume with no responses while the
// owner waits for some (SPEC I7). It matches ErrEmptyResume, and
// ErrResumeRequired too: the owner still waits for the answers, as after a
// prompt. Waiting lists the ids of the interrupts that wait, when the owner
// knows them.
type EmptyResumeError struct {
	Waiting []string
}

func (e *EmptyResumeError) Error() string {
	if len(e.Waiting) == 0 {
		return ErrEmptyResume.Error()
	}
	return fmt.Sprintf("%v: answer interrupt_id=<%s>", ErrEmptyResume, strings.Join(e.Waiting, ">, <"))
}

// Is reports whether target is ErrEmptyResume or ErrResumeRequired.
func (e *EmptyResumeError) Is(target error) bool {
	return target == ErrEmptyResume || target == ErrResumeRequired
}

// DuplicateNameError reports that two callbacks on one event raised
// interrupts with the same name (SPEC I4). It matches ErrDuplicateName.
type DuplicateNameError struct {
	Name string
}

func (e *DuplicateNameError) Error() string {
	return fmt.Sprintf("interrupt_name=<%s> | %v", e.Name, ErrDuplicateName)
}

// Is reports whether target is ErrDuplicateName.
func (e *DuplicateNameError) Is(target error) bool { return target == ErrDuplicateName }

// ContentError reports that, while interrupted, the input carried content
// that is not an interrupt response. Types lists the content kinds found.
// It matches ErrResumeRequired, or ErrMixedInput when responses were
// present too.
type ContentError struct {
	Types []string
	Mixed bool
}

func (e *ContentError) Error() string {
	if e.Mixed {
		return fmt.Sprintf("content_types=<%s> | %v", strings.Join(e.Types, ","), ErrMixedInput)
	}
	return fmt.Sprintf("content_types=<%s> | %v", strings.Join(e.Types, ","), ErrResumeRequired)
}

// Is matches ErrResumeRequired or ErrMixedInput.
func (e *ContentError) Is(target error) bool {
	if e.Mixed {
		return target == ErrMixedInput
	}
	return target == ErrResumeRequired
}
