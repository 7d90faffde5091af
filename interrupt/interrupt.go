package interrupt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/braidhq/braid/internal/strictjson"
)

// Source says what raised an interrupt.
type Source string

// The sources of SPEC I1.
const (
	SourceTool           Source = "tool"
	SourceHook           Source = "hook"
	SourceMultiAgentHook Source = "multiagent-hook"
)

// Valid reports whether s is one of the known sources.
func (s Source) Valid() bool {
	switch s {
	case SourceTool, SourceHook, SourceMultiAgentHook:
		return true
	}
	return false
}

// Interrupt is one request for outside input (SPEC I1).
//
// Reason and Response hold JSON. A nil Reason means no reason was given.
// Answered says whether Response holds an answer: an answer may be JSON null,
// so "no answer" is Answered == false, never a nil value.
//
// The wire form is {"id":..,"name":..,"reason":..,"response":..,"source":..}
// with reason omitted when absent and response omitted when unanswered.
type Interrupt struct {
	ID       string
	Name     string
	Reason   json.RawMessage
	Response Value
	Answered bool
	Source   Source
}

// String is the interrupt for people (logs, %v): its id, name, source and
// reason as JSON, and its answer if it has one.
func (i Interrupt) String() string {
	s := fmt.Sprintf("interrupt %s name=%q source=%s", i.ID, i.Name, i.Source)
	if i.HasReason() {
		s += " reason=" + string(i.Reason)
	}
	if i.Answered {
		s += " response=" + string(i.Response.raw)
	}
	return s
}

// HasReason reports whether a reason was given.
func (i Interrupt) HasReason() bool { return len(i.Reason) > 0 }

// DecodeReason unmarshals the reason into v. It returns ErrNoReason when the
// interrupt has none.
func (i Interrupt) DecodeReason(v any) error {
	if !i.HasReason() {
		return fmt.Errorf("interrupt_id=<%s>: %w", i.ID, ErrNoReason)
	}
	return json.Unmarshal(i.Reason, v)
}

// Clone returns a deep copy, so the caller may keep it while the owner goes on.
func (i Interrupt) Clone() Interrupt {
	i.Reason = cloneRaw(i.Reason)
	i.Response = Value{raw: cloneRaw(i.Response.raw)}
	return i
}

type wireInterrupt struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Reason   json.RawMessage `json:"reason,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Source   Source          `json:"source"`
}

// MarshalJSON writes the wire form of SPEC I1.
func (i Interrupt) MarshalJSON() ([]byte, error) { return i.AppendJSON(nil) }

// UnmarshalJSON reads the wire form. A present "response" key, JSON null
// included, marks the interrupt answered. A missing source reads as "hook",
// the Strands default for records that predate the field.
func (i *Interrupt) UnmarshalJSON(data []byte) error {
	var w wireInterrupt
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.ID == "" {
		return fmt.Errorf("interrupt record: %w", ErrEmptyID)
	}
	if w.Source == "" {
		w.Source = SourceHook
	}
	if !w.Source.Valid() {
		return fmt.Errorf("interrupt_id=<%s>: unknown source %q", w.ID, w.Source)
	}
	*i = Interrupt{ID: w.ID, Name: w.Name, Reason: cloneRaw(w.Reason), Source: w.Source}
	if w.Response != nil {
		i.Response = Value{raw: cloneRaw(w.Response)}
		i.Answered = true
	}
	return nil
}

func cloneRaw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// encodeJSON turns v into compact JSON. json.RawMessage and Value are taken
// as they are after a validity check; everything else goes through
// encoding/json with HTML escaping off, so "<" stays "<" as in Strands.
// Either way the result is UTF-8: the bytes a json.Marshaler writes are
// not checked by encoding/json, and are made UTF-8 as raw JSON is.
func encodeJSON(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case json.RawMessage:
		return compactRaw(t)
	case Value:
		if !t.Valid() {
			return nil, ErrNoAnswer
		}
		return compactRaw(t.raw)
	case *Value:
		if t == nil || !t.Valid() {
			return nil, ErrNoAnswer
		}
		return compactRaw(t.raw)
	}
	b, err := strictjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		b = toValidUTF8(b)
	}
	return b, nil
}

func compactRaw(b []byte) (json.RawMessage, error) {
	if !utf8.Valid(b) {
		// JSON text is UTF-8, and a session stores nothing else;
		// encoding/json's checks let other bytes through. Each byte
		// that is not becomes U+FFFD, as encoding/json and
		// JSON.stringify write a string holding it.
		b = toValidUTF8(b)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// toValidUTF8 returns b with each byte that is not part of a UTF-8
// sequence replaced by U+FFFD.
func toValidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
