package interrupt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Response answers one interrupt by id. A Response whose Value is the zero
// Value stands for a block without a "response" field and is rejected by
// State.Resume.
type Response struct {
	ID    string
	Value Value
	err   error
}

// Respond answers the interrupt id with answer, which may be any
// JSON-encodable value (nil is JSON null, a valid answer), a Value, or a
// json.RawMessage. An answer that cannot be encoded makes the resume fail
// with an error naming id.
func Respond(id string, answer any) Response {
	v, err := ValueOf(answer)
	return Response{ID: id, Value: v, err: err}
}

// Err reports whether the answer could be encoded.
func (r Response) Err() error {
	if r.err != nil {
		return &IDError{ID: r.ID, Err: r.err}
	}
	return nil
}

type responseBody struct {
	InterruptID *string         `json:"interruptId"`
	Response    json.RawMessage `json:"response"`
}

// IsResponseBlock reports whether one JSON object is an interruptResponse
// content block (it has an "interruptResponse" key).
func IsResponseBlock(obj map[string]json.RawMessage) bool {
	_, ok := obj["interruptResponse"]
	return ok
}

// ParseResponseBlock reads the value of one "interruptResponse" key.
func ParseResponseBlock(body []byte) (Response, error) {
	var b responseBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Response{}, fmt.Errorf("interruptResponse: %w", err)
	}
	if b.InterruptID == nil || *b.InterruptID == "" {
		return Response{}, fmt.Errorf("interruptResponse: %w", ErrEmptyID)
	}
	r := Response{ID: *b.InterruptID}
	if b.Response != nil {
		v, err := JSON(b.Response)
		if err != nil {
			return Response{}, &IDError{ID: r.ID, Err: err}
		}
		r.Value = v
	}
	return r, nil
}

// ParseResponses reads Strands' resume form,
// [{"interruptResponse":{"interruptId":"..","response":<JSON>}}, ...], as a
// Python or TypeScript client sends it. Every element must be an
// interruptResponse block (a "type":"interruptResponseContent" key, as older
// TypeScript clients add, is allowed). A block without "response" parses, and
// is rejected later by State.Resume with ErrMissingResponse.
func ParseResponses(data []byte) ([]Response, error) {
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(data, &blocks); err != nil {
		return nil, fmt.Errorf("resume input: want a JSON list of interruptResponse blocks: %w", err)
	}
	out := make([]Response, 0, len(blocks))
	for i, obj := range blocks {
		body, ok := obj["interruptResponse"]
		if !ok {
			return nil, fmt.Errorf("resume input: element %d: %w", i, &ContentError{Types: keysOf(obj), Mixed: true})
		}
		for k, v := range obj {
			if k == "interruptResponse" {
				continue
			}
			if k == "type" && bytes.Equal(v, []byte(`"interruptResponseContent"`)) {
				continue
			}
			return nil, fmt.Errorf("resume input: element %d: unexpected key %q", i, k)
		}
		r, err := ParseResponseBlock(body)
		if err != nil {
			return nil, fmt.Errorf("resume input: element %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func keysOf(obj map[string]json.RawMessage) []string {
	out := make([]string, 0, len(obj))
	for k := range obj {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MarshalResponses writes the resume list in the bytes JavaScript's
// JSON.stringify produces: no spaces, keys in the order interruptResponse,
// interruptId, response, and strings escaped as JSON.stringify escapes them.
// ParseResponses followed by MarshalResponses gives back such input
// byte for byte. A response without an answer is an error.
func MarshalResponses(responses []Response) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range responses {
		if err := r.Err(); err != nil {
			return nil, err
		}
		if !r.Value.Valid() {
			return nil, &IDError{ID: r.ID, Err: ErrMissingResponse}
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"interruptResponse":{"interruptId":`)
		writeJSString(&buf, r.ID)
		buf.WriteString(`,"response":`)
		writeJSValue(&buf, r.Value.raw)
		buf.WriteString(`}}`)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// MarshalJSON writes one {"interruptResponse":{...}} block.
func (r Response) MarshalJSON() ([]byte, error) {
	b, err := MarshalResponses([]Response{r})
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

// UnmarshalJSON reads one {"interruptResponse":{...}} block.
func (r *Response) UnmarshalJSON(data []byte) error {
	rs, err := ParseResponses(append(append([]byte{'['}, data...), ']'))
	if err != nil {
		return err
	}
	if len(rs) != 1 {
		return fmt.Errorf("interruptResponse: want one block, got %d", len(rs))
	}
	*r = rs[0]
	return nil
}

// writeJSString quotes s as JSON.stringify does: \" \\ \b \f \n \r \t, other
// control characters as \u00xx, everything else (U+2028 and U+2029 included)
// as it is. Invalid UTF-8 becomes U+FFFD.
func writeJSString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		writeJSRune(buf, r)
	}
	buf.WriteByte('"')
}

// writeJSRune writes one character of a string literal as JSON.stringify does.
func writeJSRune(buf *bytes.Buffer, r rune) {
	switch r {
	case '"':
		buf.WriteString(`\"`)
	case '\\':
		buf.WriteString(`\\`)
	case '\b':
		buf.WriteString(`\b`)
	case '\f':
		buf.WriteString(`\f`)
	case '\n':
		buf.WriteString(`\n`)
	case '\r':
		buf.WriteString(`\r`)
	case '\t':
		buf.WriteString(`\t`)
	default:
		if r < 0x20 {
			writeUnitEscape(buf, r)
		} else {
			buf.WriteRune(r)
		}
	}
}

// writeUnitEscape writes \u and four lower-case hex digits.
func writeUnitEscape(buf *bytes.Buffer, u rune) {
	h := strconv.FormatInt(int64(u), 16)
	buf.WriteString(`\u`)
	buf.WriteString("0000"[len(h):])
	buf.WriteString(h)
}

// writeJSValue copies the JSON value raw, re-escaping every string in it
// (object keys included) as JSON.stringify does, so an answer built in Go
// (which escapes U+2028 as \u2028) or sent by a Python client (\u00e9 for é)
// prints as a JavaScript client sends it. Everything outside strings, numbers
// included, is copied as it is.
func writeJSValue(buf *bytes.Buffer, raw []byte) {
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			buf.WriteByte(raw[i])
			i++
			continue
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		writeJSLiteral(buf, raw[i+1:min(j, len(raw))])
		i = j + 1
	}
}

// writeJSLiteral re-escapes the text between the quotes of one JSON string
// literal. A lone surrogate escape such as \ud800, which JSON.stringify keeps,
// stays escaped; a surrogate pair becomes its character.
func writeJSLiteral(buf *bytes.Buffer, body []byte) {
	buf.WriteByte('"')
	for i := 0; i < len(body); {
		if body[i] != '\\' {
			r, size := utf8.DecodeRune(body[i:])
			writeJSRune(buf, r)
			i += size
			continue
		}
		if i+1 >= len(body) {
			break
		}
		if body[i+1] != 'u' {
			writeJSRune(buf, rune(shortEscapes[body[i+1]]))
			i += 2
			continue
		}
		u, ok := hexUnit(body[i+2:])
		if !ok {
			break
		}
		i += 6
		if !utf16.IsSurrogate(u) {
			writeJSRune(buf, u)
			continue
		}
		if u < 0xdc00 && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
			if lo, ok := hexUnit(body[i+2:]); ok && lo >= 0xdc00 && lo <= 0xdfff {
				buf.WriteRune(utf16.DecodeRune(u, lo))
				i += 6
				continue
			}
		}
		writeUnitEscape(buf, u)
	}
	buf.WriteByte('"')
}

var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hexUnit reads the four hex digits of a \u escape.
func hexUnit(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
