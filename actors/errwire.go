package actors

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"

	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// ErrRemote is matched by every error ErrorCodec.Decode returns: the error
// crossed a process and only its message and codes survived. An error whose
// codes the receiver does not know matches ErrRemote and nothing else.
var ErrRemote = errors.New("remote error")

// ErrBadErrorCode is returned by NewErrorCodec when it is given an empty
// code, a code reserved for a typed error, a nil or non-comparable
// sentinel, or a code or sentinel that is already known.
var ErrBadErrorCode = errors.New("invalid error code registration")

// ErrorCode names one sentinel error on the wire. Code is part of the wire
// format: once released it must not change, or old peers no longer match
// the sentinel. Err must be comparable (as errors.New values are), since it
// is matched with ==.
type ErrorCode struct {
	Code string
	Err  error
}

// Wire codes of the typed errors whose fields braidv1.Error carries.
const (
	codeIDError       = "interrupt.IDError"
	codeContentError  = "interrupt.ContentError"
	codeDuplicateName = "interrupt.DuplicateNameError"
	codeDamageError   = "persistence.DamageError"
)

// builtinCodes returns the sentinels every codec knows, in the order their
// codes are listed when one error level matches several.
func builtinCodes() []ErrorCode {
	return []ErrorCode{
		{"interrupt.ErrInterrupted", interrupt.ErrInterrupted},
		{"interrupt.ErrNotInterrupted", interrupt.ErrNotInterrupted},
		{"interrupt.ErrResumeRequired", interrupt.ErrResumeRequired},
		{"interrupt.ErrMixedInput", interrupt.ErrMixedInput},
		{"interrupt.ErrEmptyResume", interrupt.ErrEmptyResume},
		{"interrupt.ErrUnknownID", interrupt.ErrUnknownID},
		{"interrupt.ErrMissingResponse", interrupt.ErrMissingResponse},
		{"interrupt.ErrDuplicateResponse", interrupt.ErrDuplicateResponse},
		{"interrupt.ErrDuplicateName", interrupt.ErrDuplicateName},
		{"interrupt.ErrReason", interrupt.ErrReason},
		{"interrupt.ErrAnswer", interrupt.ErrAnswer},
		{"interrupt.ErrNoAnswer", interrupt.ErrNoAnswer},
		{"interrupt.ErrNoReason", interrupt.ErrNoReason},
		{"interrupt.ErrEmptyID", interrupt.ErrEmptyID},
		{"interrupt.ErrEmptyName", interrupt.ErrEmptyName},
		{"interrupt.ErrNotUTF8", interrupt.ErrNotUTF8},
		{"interrupt.ErrNotInterruptible", interrupt.ErrNotInterruptible},
		{"interrupt.ErrScopeEnded", interrupt.ErrScopeEnded},
		{"interrupt.ErrOwnerPath", interrupt.ErrOwnerPath},
		{"persistence.ErrNotFound", persistence.ErrNotFound},
		{"persistence.ErrConflict", persistence.ErrConflict},
		{"persistence.ErrDamaged", persistence.ErrDamaged},
		{"persistence.ErrSchemaVersion", persistence.ErrSchemaVersion},
		{"persistence.ErrBadID", persistence.ErrBadID},
		{"persistence.ErrBadSave", persistence.ErrBadSave},
		{"persistence.ErrClosed", persistence.ErrClosed},
		{"persistence.ErrTooLarge", persistence.ErrTooLarge},
		{"persistence.ErrOutcomeUnknown", persistence.ErrOutcomeUnknown},
		{"model.ErrAuth", model.ErrAuth},
		{"model.ErrUnknownModel", model.ErrUnknownModel},
		{"model.ErrRateLimited", model.ErrRateLimited},
		{"model.ErrContextWindow", model.ErrContextWindow},
		{"model.ErrServer", model.ErrServer},
		{"model.ErrBadRequest", model.ErrBadRequest},
		{"model.ErrIncompleteStream", model.ErrIncompleteStream},
		{"model.ErrMaxTokensInToolUse", model.ErrMaxTokensInToolUse},
		{"model.ErrEmptyBlock", model.ErrEmptyBlock},
		{"model.ErrScriptExhausted", model.ErrScriptExhausted},
		{"tool.ErrExecutor", tool.ErrExecutor},
		{"tool.ErrBadName", tool.ErrBadName},
		{"tool.ErrBadInput", tool.ErrBadInput},
		{"tool.ErrInputNotObject", tool.ErrInputNotObject},
		{"hook.ErrNilCallback", hook.ErrNilCallback},
		{"hook.ErrNotFired", hook.ErrNotFired},
		{"hook.ErrForeignInterrupt", hook.ErrForeignInterrupt},
		{"context.Canceled", context.Canceled},
		{"context.DeadlineExceeded", context.DeadlineExceeded},
		{"actors.ErrClosed", ErrClosed},
		{"actors.ErrNodeTimeout", ErrNodeTimeout},
		{"actors.ErrOrchestratorClosed", ErrOrchestratorClosed},
		{"actors.ErrOrchestratorFaulted", ErrOrchestratorFaulted},
		{"actors.ErrTopology", ErrTopology},
		{"actors.ErrNodeFailed", ErrNodeFailed},
		{"actors.ErrIncompleteRun", ErrIncompleteRun},
		{"actors.ErrEmptyTask", ErrEmptyTask},
		{"actors.ErrBadTask", ErrBadTask},
		{"actors.ErrReentrant", ErrReentrant},
		{"actors.ErrUnknownMessage", ErrUnknownMessage},
		{"actors.ErrCutOff", ErrCutOff},
		{"actors.ErrStreamStopped", ErrStreamStopped},
		{"actors.ErrBound", ErrBound},
		{"actors.ErrUnbound", ErrUnbound},
		{"actors.ErrBadErrorCode", ErrBadErrorCode},
	}
}

// ErrorCodec turns errors into braidv1.Error and back, so that errors.Is
// and errors.As match on the receiving side as they did on the sender's
// (SPEC R2, I7). It knows every sentinel of packages interrupt,
// persistence, model, tool, hook, context and actors (what any owner's
// work can fail with), plus those given to NewErrorCodec, and carries the
// fields of *interrupt.IDError, *interrupt.ContentError,
// *interrupt.DuplicateNameError and *persistence.DamageError. Other typed
// errors (such as *persistence.ConflictError) keep their message and the
// sentinels they match, not their type. Both sides must register the same
// extra codes. A codec is immutable after NewErrorCodec and safe for
// concurrent use. The codec is what crosses a process; in one process an
// orchestrator hands its caller a FAILED node's Go error as well
// (Locals, SetLocalError), which matches everything the error wraps.
type ErrorCodec struct {
	codes  []ErrorCode      // known sentinels, built-in first
	byCode map[string]error // code -> sentinel
}

// NewErrorCodec returns a codec that knows the built-in codes plus extra.
// A code or sentinel given twice (or already built in), an empty or
// reserved code and a nil or non-comparable sentinel are errors matching
// ErrBadErrorCode.
func NewErrorCodec(extra ...ErrorCode) (*ErrorCodec, error) {
	all := append(builtinCodes(), extra...)
	c := &ErrorCodec{codes: make([]ErrorCode, 0, len(all)), byCode: make(map[string]error, len(all))}
	bySentinel := make(map[error]string, len(all))
	for _, ec := range all {
		switch {
		case ec.Code == "":
			return nil, fmt.Errorf("%w: empty code for sentinel %q", ErrBadErrorCode, errText(ec.Err))
		case isTypedCode(ec.Code):
			return nil, fmt.Errorf("%w: code %q is reserved for a typed error", ErrBadErrorCode, ec.Code)
		case ec.Err == nil:
			return nil, fmt.Errorf("%w: code %q has a nil sentinel", ErrBadErrorCode, ec.Code)
		case !reflect.TypeOf(ec.Err).Comparable():
			return nil, fmt.Errorf("%w: code %q: sentinel of type %T is not comparable", ErrBadErrorCode, ec.Code, ec.Err)
		}
		if _, dup := c.byCode[ec.Code]; dup {
			return nil, fmt.Errorf("%w: code %q is registered twice", ErrBadErrorCode, ec.Code)
		}
		if prev, dup := bySentinel[ec.Err]; dup {
			return nil, fmt.Errorf("%w: sentinel %q is registered as %q and %q", ErrBadErrorCode, ec.Err.Error(), prev, ec.Code)
		}
		c.byCode[ec.Code] = ec.Err
		bySentinel[ec.Err] = ec.Code
		c.codes = append(c.codes, ec)
	}
	return c, nil
}

// Encode returns the wire form of err (nil for nil). Message is err.Error().
// Code is the code of the outermost known typed error in err's tree, or
// else of the first known sentinel err matches; Causes are the codes of
// every other known sentinel err matches (errors.Is), outermost first.
func (c *ErrorCodec) Encode(err error) *braidv1.Error {
	if err == nil {
		return nil
	}
	w := &braidv1.Error{Message: err.Error()}
	typed := false
	for n := range nodes(err) {
		if typed = c.encodeTyped(n, w); typed {
			break
		}
	}
	causes := c.matchedCodes(err)
	if !typed && len(causes) > 0 {
		w.Code, causes = causes[0], causes[1:]
	}
	w.Causes = causes
	return w
}

// Decode rebuilds an error from its wire form (nil for nil). The result's
// Error() is exactly w.Message. It matches (errors.Is) ErrRemote and the
// sentinel of every code in w.Code and w.Causes that the codec knows, and
// unwraps to the typed error named by w.Code, if any, with its fields
// restored, so errors.As finds it. The cause (Err) of a restored
// *interrupt.IDError or *persistence.DamageError has the text the sender's
// had when the message shows it (as when the typed error is only wrapped
// with prefixes); an IDError's cause matches the sentinel in w.Detail, and
// is that sentinel when the text is the sentinel's own; a DamageError's
// cause matches every sentinel of w.Causes.
func (c *ErrorCodec) Decode(w *braidv1.Error) error {
	if w == nil {
		return nil
	}
	var codes []string
	if !isTypedCode(w.GetCode()) {
		codes = append(codes, w.GetCode())
	}
	codes = append(codes, w.GetCauses()...)
	e := c.remote(w.GetMessage(), codes)
	e.typed = c.decodeTyped(w)
	return e
}

// matchedCodes lists the code of every sentinel err matches, walking err's
// tree as errors.Is does; within one level, codes come in registration
// order. A decoded error contributes its codes as received, known or not,
// so an error relayed through this process keeps them.
func (c *ErrorCodec) matchedCodes(err error) []string {
	var codes []string
	add := func(code string) {
		if code != "" && !slices.Contains(codes, code) {
			codes = append(codes, code)
		}
	}
	for n := range nodes(err) {
		if r, ok := n.(*remoteError); ok {
			for _, code := range r.codes {
				add(code)
			}
			continue
		}
		for _, ec := range c.codes {
			if matchesHere(n, ec.Err) {
				add(ec.Code)
			}
		}
	}
	return codes
}

// encodeTyped fills w's typed fields if n itself (not what it wraps) is one
// of the carried typed errors, and reports whether it was.
func (c *ErrorCodec) encodeTyped(n error, w *braidv1.Error) bool {
	if e, ok := asHere[*interrupt.IDError](n); ok && e != nil {
		w.Code, w.InterruptId = codeIDError, e.ID
		if codes := c.matchedCodes(e.Err); len(codes) > 0 {
			w.Detail = codes[0]
		}
		return true
	}
	if e, ok := asHere[*interrupt.ContentError](n); ok && e != nil {
		w.Code, w.ContentTypes, w.Mixed = codeContentError, slices.Clone(e.Types), e.Mixed
		return true
	}
	if e, ok := asHere[*interrupt.DuplicateNameError](n); ok && e != nil {
		w.Code, w.Detail = codeDuplicateName, e.Name
		return true
	}
	if e, ok := asHere[*persistence.DamageError](n); ok && e != nil {
		w.Code, w.Detail = codeDamageError, e.Part
		w.SessionId, w.Kind, w.OwnerId = e.Key.SessionID, string(e.Key.Kind), e.Key.ID
		return true
	}
	return false
}

// decodeTyped rebuilds the typed error w.Code names, or returns nil.
func (c *ErrorCodec) decodeTyped(w *braidv1.Error) error {
	switch w.GetCode() {
	case codeIDError:
		id := w.GetInterruptId()
		prefix := (&interrupt.IDError{ID: id, Err: errors.New("")}).Error()
		return &interrupt.IDError{ID: id, Err: c.cause(w.GetMessage(), prefix, []string{w.GetDetail()})}
	case codeContentError:
		return &interrupt.ContentError{Types: slices.Clone(w.GetContentTypes()), Mixed: w.GetMixed()}
	case codeDuplicateName:
		return &interrupt.DuplicateNameError{Name: w.GetDetail()}
	case codeDamageError:
		key := persistence.Key{SessionID: w.GetSessionId(), Kind: persistence.Kind(w.GetKind()), ID: w.GetOwnerId()}
		prefix := (&persistence.DamageError{Key: key, Part: w.GetDetail(), Err: errors.New("")}).Error()
		return &persistence.DamageError{Key: key, Part: w.GetDetail(), Err: c.cause(w.GetMessage(), prefix, w.GetCauses())}
	}
	return nil
}

// cause rebuilds the cause of a typed error: the text after prefix (the
// typed error's own message with an empty cause) in msg, or ErrRemote's
// text if msg does not show it, matching codes. A single
// known code whose sentinel has exactly that text gives the sentinel itself.
func (c *ErrorCodec) cause(msg, prefix string, codes []string) error {
	_, text, found := strings.Cut(msg, prefix)
	if len(codes) == 1 {
		if s := c.byCode[codes[0]]; s != nil && (!found || text == s.Error()) {
			return s
		}
	}
	if !found {
		text = ErrRemote.Error()
	}
	return c.remote(text, codes)
}

// remote returns a decoded error with message msg that matches ErrRemote
// and the known sentinels of codes.
func (c *ErrorCodec) remote(msg string, codes []string) *remoteError {
	e := &remoteError{msg: msg}
	for _, code := range codes {
		if code == "" || slices.Contains(e.codes, code) {
			continue
		}
		e.codes = append(e.codes, code)
		if s := c.byCode[code]; s != nil {
			e.matches = append(e.matches, s)
		}
	}
	return e
}

// remoteError is a decoded error.
type remoteError struct {
	msg     string
	codes   []string // as received, known or not, deduplicated
	matches []error  // the known sentinels of codes
	typed   error    // the restored typed error, or nil
}

func (e *remoteError) Error() string { return e.msg }

// Is matches ErrRemote and the sentinels of the received codes.
func (e *remoteError) Is(target error) bool {
	return target == ErrRemote || slices.Contains(e.matches, target)
}

// Unwrap returns the restored typed error, or nil.
func (e *remoteError) Unwrap() error { return e.typed }

func isTypedCode(code string) bool {
	switch code {
	case codeIDError, codeContentError, codeDuplicateName, codeDamageError:
		return true
	}
	return false
}

// nodes yields err and everything it wraps, depth first, in the order
// errors.Is visits them.
func nodes(err error) iter.Seq[error] {
	return func(yield func(error) bool) { walk(err, yield) }
}

func walk(err error, yield func(error) bool) bool {
	for err != nil {
		if !yield(err) {
			return false
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if !walk(e, yield) {
					return false
				}
			}
			return true
		default:
			return true
		}
	}
	return true
}

// matchesHere reports whether n itself (not what it wraps) matches the
// sentinel s, as one step of errors.Is does. s is comparable, so == cannot
// panic.
func matchesHere(n, s error) bool {
	if n == s {
		return true
	}
	x, ok := n.(interface{ Is(error) bool })
	return ok && x.Is(s)
}

// asHere is one step of errors.As: n itself as a T, by type or by its As
// method.
func asHere[T error](n error) (T, bool) {
	if t, ok := n.(T); ok {
		return t, true
	}
	var t T
	x, ok := n.(interface{ As(any) bool })
	if !ok || !x.As(&t) {
		return t, false
	}
	return t, true
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
