package interrupt

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Value is an answer to an interrupt: one JSON value, null included. The zero
// Value holds nothing and is not a valid answer.
type Value struct {
	raw json.RawMessage
}

// JSON returns a Value for the given JSON text. It returns an error if raw is
// not one valid JSON value. Bytes that are not UTF-8 are replaced by U+FFFD,
// as for ValueOf.
func JSON(raw []byte) (Value, error) {
	c, err := compactRaw(raw)
	if err != nil {
		return Value{}, err
	}
	return Value{raw: c}, nil
}

// ValueOf encodes v as JSON. Strings, numbers, bools, nil (JSON null), maps,
// slices and structs all work; a value encoding/json cannot encode is an
// error. A string that is not valid UTF-8 is encoded with U+FFFD for each
// stray byte, as encoding/json writes it: the Value holds what a session
// stores, so an answer reads the same before and after a restart.
func ValueOf(v any) (Value, error) {
	raw, err := encodeJSON(v)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %v", ErrAnswer, err)
	}
	return Value{raw: raw}, nil
}

// Valid reports whether the Value holds a JSON value (null counts).
func (v Value) Valid() bool { return len(v.raw) > 0 }

// IsNull reports whether the Value is JSON null.
func (v Value) IsNull() bool { return bytes.Equal(v.raw, []byte("null")) }

// Raw returns the JSON text, or nil for the zero Value. The caller must not
// modify it.
func (v Value) Raw() json.RawMessage { return v.raw }

// String returns the answer as a Go string and true when it is a JSON
// string, and "" and false otherwise.
func (v Value) String() (string, bool) {
	if len(v.raw) == 0 || v.raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v.raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// Format prints the JSON text for %v and %s (and %q quotes it), so that
// an Interrupt or a Response printed with fmt shows its reason or answer
// as JSON, not as bytes; the zero Value prints nothing. (String is not
// fmt.Stringer's: it returns a JSON string's contents.)
func (v Value) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", string(v.raw))
	default:
		_, _ = f.Write(v.raw)
	}
}

// Decode unmarshals the answer into dst.
func (v Value) Decode(dst any) error {
	if !v.Valid() {
		return ErrNoAnswer
	}
	return json.Unmarshal(v.raw, dst)
}

// MarshalJSON writes the JSON text; the zero Value writes null.
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.Valid() {
		return []byte("null"), nil
	}
	return v.raw, nil
}

// UnmarshalJSON keeps the JSON text (compacted).
func (v *Value) UnmarshalJSON(data []byte) error {
	c, err := compactRaw(data)
	if err != nil {
		return err
	}
	v.raw = c
	return nil
}
