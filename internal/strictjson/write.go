package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json escapes
// it with HTML escaping off.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendBool appends true or false.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// ErrEmptyRaw reports a raw value that is not nil but holds no bytes, which
// is no JSON value (encoding/json refuses it too).
var ErrEmptyRaw = errors.New("empty raw JSON value")

// AppendRaw appends raw, one JSON value, compacted (whitespace outside
// strings removed, nothing else changed), as encoding/json writes a
// json.RawMessage. A nil raw is written as null; a value that is not valid
// JSON is an error and dst is returned unchanged.
func AppendRaw(dst []byte, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	if len(raw) == 0 {
		return dst, ErrEmptyRaw
	}
	r := Reader{b: raw}
	r.skipSpace()
	start := r.i
	r.spaced = false
	if err := r.skipValue(); err != nil {
		return dst, err
	}
	end, spaced := r.i, r.spaced
	if err := r.End(); err != nil {
		return dst, err
	}
	if start == 0 && end == len(raw) && !spaced {
		return append(dst, raw...), nil // already compact: the common case
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// Marshal encodes v with encoding/json's reflection as Braid stores JSON:
// HTML escaping off, no trailing newline. It is for the types that have no
// hand-written form.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
