package strictjson

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax reports that the text is not valid JSON, or not the kind of
// value a decoder asked for. Errors of a Reader wrap it and say where.
var ErrSyntax = errors.New("invalid JSON")

// Reader reads one JSON text front to back. Its methods consume one value
// each; a decoder calls the one for the value it expects, so a value of
// another kind is an error. The zero Reader reads nothing; use NewReader.
type Reader struct {
	b      []byte
	i      int
	spaced bool   // whitespace was skipped (AppendRaw's fast path)
	key    []byte // scratch for keys with escapes
	depth  int    // objects and arrays open at r.i
}

// NewReader returns a Reader of b. It keeps b and returns parts of it
// (Raw); b must not change while they are used.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Decode runs read on a Reader of b and then checks that nothing but
// whitespace follows the value it read.
func Decode(b []byte, read func(r *Reader) error) error {
	r := Reader{b: b}
	if err := read(&r); err != nil {
		return err
	}
	return r.End()
}

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, r.i, fmt.Sprintf(format, args...))
}

// End checks that only whitespace is left.
func (r *Reader) End() error {
	r.skipSpace()
	if r.i != len(r.b) {
		return r.errorf("%s after the value", r.what())
	}
	return nil
}

// what names the next byte for an error.
func (r *Reader) what() string {
	if r.i >= len(r.b) {
		return "end of input"
	}
	return fmt.Sprintf("%q", r.b[r.i])
}

func (r *Reader) skipSpace() {
	start := r.i
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
			continue
		}
		break
	}
	if r.i != start {
		r.spaced = true
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (r *Reader) peek() byte {
	r.skipSpace()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// Next skips whitespace and returns the first byte of the next value
// ('{', '[', '"', 't', 'f', 'n', '-' or a digit when the text is valid),
// or 0 at the end of the text.
func (r *Reader) Next() byte { return r.peek() }

// Mark skips whitespace and returns the offset of the next value, for Span.
func (r *Reader) Mark() int {
	r.skipSpace()
	return r.i
}

// Span returns the text from mark (a Mark) to where the Reader is now: the
// value read since, as stored.
func (r *Reader) Span(mark int) []byte { return r.b[mark:r.i:r.i] }

// Null consumes a null and reports true if null is next; otherwise it
// consumes nothing and reports false.
func (r *Reader) Null() bool {
	if r.peek() == 'n' && len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// Bool reads true or false.
func (r *Reader) Bool() (bool, error) {
	switch r.peek() {
	case 't':
		if len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "true" {
			r.i += 4
			return true, nil
		}
	case 'f':
		if len(r.b)-r.i >= 5 && string(r.b[r.i:r.i+5]) == "false" {
			r.i += 5
			return false, nil
		}
	}
	return false, r.errorf("want true or false, found %s", r.what())
}

// Object reads an object, calling field for each member with its key
// (unescaped; valid until the next read). field must read the member's
// value. Keys are given in stored order, repeats included: rejecting
// unknown and repeated keys is field's job.
func (r *Reader) Object(field func(key []byte) error) error {
	if r.peek() != '{' {
		return r.errorf("want an object, found %s", r.what())
	}
	if err := r.open(); err != nil {
		return err
	}
	defer r.close()
	r.i++
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.errorf("want a key, found %s", r.what())
		}
		key, err := r.readKey()
		if err != nil {
			return err
		}
		if r.peek() != ':' {
			return r.errorf("want ':' after a key, found %s", r.what())
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.errorf("want ',' or '}' in an object, found %s", r.what())
		}
	}
}

// readKey reads the key at r.i: a part of the text when it has no escapes,
// else unescaped into the Reader's scratch buffer.
func (r *Reader) readKey() ([]byte, error) {
	start := r.i + 1
	if end, ok := r.plainString(); ok {
		return r.b[start:end:end], nil
	}
	k, err := r.readString(r.key[:0])
	if err != nil {
		return nil, err
	}
	r.key = k
	return k, nil
}

// Array reads an array, calling elem for each element; elem must read it.
func (r *Reader) Array(elem func() error) error {
	if r.peek() != '[' {
		return r.errorf("want an array, found %s", r.what())
	}
	if err := r.open(); err != nil {
		return err
	}
	defer r.close()
	r.i++
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.errorf("want ',' or ']' in an array, found %s", r.what())
		}
	}
}

// String reads a string, unescaped.
func (r *Reader) String() (string, error) {
	if r.peek() != '"' {
		return "", r.errorf("want a string, found %s", r.what())
	}
	start := r.i + 1
	if end, ok := r.plainString(); ok {
		return string(r.b[start:end]), nil
	}
	b, err := r.readString(nil)
	return string(b), err
}

// Raw reads any one value and returns its text as stored (whitespace inside
// it included), after checking it is valid JSON.
func (r *Reader) Raw() ([]byte, error) {
	r.skipSpace()
	start := r.i
	if err := r.skipValue(); err != nil {
		return nil, err
	}
	return r.b[start:r.i:r.i], nil
}

// plainString moves past a string at r.i that has no escapes and is valid
// UTF-8 without control characters, and returns the index of its closing
// quote; it moves nothing and reports false for any other string.
func (r *Reader) plainString() (int, bool) {
	for j := r.i + 1; j < len(r.b); j++ {
		c := r.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(r.b[r.i+1 : j]) {
				return 0, false
			}
			r.i = j + 1
			return j, true
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// readString reads the string at r.i, appending its unescaped bytes to dst.
// Invalid UTF-8 becomes U+FFFD, one per bad byte, and so does a \u escape of
// a surrogate that does not pair, as encoding/json does.
func (r *Reader) readString(dst []byte) ([]byte, error) {
	r.i++ // the opening quote
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return dst, nil
		case c < 0x20:
			return nil, r.errorf("control character %q in a string", c)
		case c == '\\':
			var err error
			if dst, err = r.escape(dst); err != nil {
				return nil, err
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r.i++
		default:
			ru, size := utf8.DecodeRune(r.b[r.i:])
			if ru == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, r.b[r.i:r.i+size]...)
			}
			r.i += size
		}
	}
	return nil, r.errorf("unterminated string")
}

// escape reads the escape at r.i (a backslash) and appends what it stands for.
func (r *Reader) escape(dst []byte) ([]byte, error) {
	if r.i+1 >= len(r.b) {
		return nil, r.errorf("unterminated escape")
	}
	switch c := r.b[r.i+1]; c {
	case '"', '\\', '/':
		r.i += 2
		return append(dst, c), nil
	case 'b':
		r.i += 2
		return append(dst, '\b'), nil
	case 'f':
		r.i += 2
		return append(dst, '\f'), nil
	case 'n':
		r.i += 2
		return append(dst, '\n'), nil
	case 'r':
		r.i += 2
		return append(dst, '\r'), nil
	case 't':
		r.i += 2
		return append(dst, '\t'), nil
	case 'u':
		ru, ok := hex4(r.b[r.i+2:])
		if !ok {
			return nil, r.errorf("invalid \\u escape")
		}
		r.i += 6
		if utf16.IsSurrogate(ru) {
			if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
				if lo, ok := hex4(r.b[r.i+2:]); ok {
					if pair := utf16.DecodeRune(ru, lo); pair != utf8.RuneError {
						r.i += 6
						return utf8.AppendRune(dst, pair), nil
					}
				}
			}
			ru = utf8.RuneError
		}
		return utf8.AppendRune(dst, ru), nil
	}
	return nil, r.errorf("invalid escape \\%c", r.b[r.i+1])
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// maxDepth bounds the nesting of objects and arrays in a text, counted
// from its top as encoding/json counts it (10,000), so a hostile record
// cannot exhaust the stack.
const maxDepth = 10000

// open enters an object or array.
func (r *Reader) open() error {
	if r.depth >= maxDepth {
		return r.errorf("nested too deeply")
	}
	r.depth++
	return nil
}

func (r *Reader) close() { r.depth-- }

// skipValue moves past one value, checking it.
func (r *Reader) skipValue() error {
	switch c := r.peek(); {
	case c == '{':
		return r.Object(func([]byte) error { return r.skipValue() })
	case c == '[':
		return r.Array(r.skipValue)
	case c == '"':
		return r.skipString()
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return r.number()
	}
	return r.errorf("want a value, found %s", r.what())
}

func (r *Reader) literal(lit string) error {
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return nil
	}
	return r.errorf("want %s", lit)
}

// skipString moves past a string, checking its escapes; any byte from 0x20
// up is allowed in it, invalid UTF-8 included, as encoding/json allows.
func (r *Reader) skipString() error {
	r.i++
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return nil
		case c < 0x20:
			return r.errorf("control character %q in a string", c)
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return r.errorf("unterminated escape")
			}
			switch r.b[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if _, ok := hex4(r.b[r.i+2:]); !ok {
					return r.errorf("invalid \\u escape")
				}
				r.i += 6
			default:
				return r.errorf("invalid escape \\%c", r.b[r.i+1])
			}
		default:
			r.i++
		}
	}
	return r.errorf("unterminated string")
}

// number moves past a number of JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) number() error {
	if r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case r.i < len(r.b) && '1' <= r.b[r.i] && r.b[r.i] <= '9':
		r.digits()
	default:
		return r.errorf("invalid number")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if r.digits() == 0 {
			return r.errorf("invalid number: no digit after '.'")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return r.errorf("invalid number: no digit in the exponent")
		}
	}
	return nil
}

func (r *Reader) digits() int {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i - start
}

// Valid reports whether b is one JSON value (whitespace around it allowed),
// as json.Valid does.
func Valid(b []byte) bool {
	return Decode(b, func(r *Reader) error { return r.skipValue() }) == nil
}
