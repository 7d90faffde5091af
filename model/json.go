package model

import (
	"fmt"

	"github.com/braidhq/braid/internal/strictjson"
)

// This file is the JSON form of messages without reflection: AppendJSON
// writes exactly what encoding/json writes for these types (HTML escaping
// off), and ParseMessage / ParseToolResult read that form strictly, for
// stored records (SPEC S5).

// AppendJSON appends the message's JSON form, {"role":..,"content":[..]}
// (content null when nil), byte for byte what encoding/json writes with
// HTML escaping off. A block with nothing set is an error wrapping
// ErrEmptyBlock; a raw value (a tool's input, a block kept whole) that is
// not valid JSON is an error too. On error dst is returned unchanged.
func (m Message) AppendJSON(dst []byte) ([]byte, error) {
	out := append(dst, `{"role":`...)
	out = strictjson.AppendString(out, string(m.Role))
	out = append(out, `,"content":`...)
	if m.Content == nil {
		return append(out, "null}"...), nil
	}
	out = append(out, '[')
	for i, b := range m.Content {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = b.AppendJSON(out); err != nil {
			return dst, fmt.Errorf("content block %d: %w", i, err)
		}
	}
	return append(out, "]}"...), nil
}

// MarshalJSON writes AppendJSON's form.
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil) }

// AppendJSON appends the block's JSON form (see MarshalJSON).
func (b ContentBlock) AppendJSON(dst []byte) ([]byte, error) {
	if b.Text == nil && b.ToolUse == nil && b.ToolResult == nil {
		if b.Other == nil {
			return dst, ErrEmptyBlock
		}
		return strictjson.AppendRaw(dst, b.Other)
	}
	out := append(dst, '{')
	sep := false
	if b.Text != nil {
		out = append(out, `"text":`...)
		out = strictjson.AppendString(out, *b.Text)
		sep = true
	}
	if b.ToolUse != nil {
		if sep {
			out = append(out, ',')
		}
		var err error
		if out, err = b.ToolUse.appendJSON(append(out, `"toolUse":`...)); err != nil {
			return dst, err
		}
		sep = true
	}
	if b.ToolResult != nil {
		if sep {
			out = append(out, ',')
		}
		var err error
		if out, err = b.ToolResult.AppendJSON(append(out, `"toolResult":`...)); err != nil {
			return dst, err
		}
	}
	return append(out, '}'), nil
}

func (t ToolUse) appendJSON(dst []byte) ([]byte, error) {
	out := append(dst, `{"toolUseId":`...)
	out = strictjson.AppendString(out, t.ToolUseID)
	out = append(out, `,"name":`...)
	out = strictjson.AppendString(out, t.Name)
	out = append(out, `,"input":`...)
	out, err := strictjson.AppendRaw(out, t.Input)
	if err != nil {
		return dst, fmt.Errorf("toolUse %s: input: %w", t.ToolUseID, err)
	}
	return append(out, '}'), nil
}

// AppendJSON appends the result's JSON form,
// {"toolUseId":..,"status":..,"content":[..]} (content null when nil),
// byte for byte what encoding/json writes with HTML escaping off.
func (r ToolResult) AppendJSON(dst []byte) ([]byte, error) {
	out := append(dst, `{"toolUseId":`...)
	out = strictjson.AppendString(out, r.ToolUseID)
	out = append(out, `,"status":`...)
	out = strictjson.AppendString(out, string(r.Status))
	out = append(out, `,"content":`...)
	if r.Content == nil {
		return append(out, "null}"...), nil
	}
	out = append(out, '[')
	for i, c := range r.Content {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '{')
		if c.Text != nil {
			out = append(out, `"text":`...)
			out = strictjson.AppendString(out, *c.Text)
		}
		if len(c.JSON) > 0 {
			if c.Text != nil {
				out = append(out, ',')
			}
			var err error
			if out, err = strictjson.AppendRaw(append(out, `"json":`...), c.JSON); err != nil {
				return dst, fmt.Errorf("toolResult %s: content %d: %w", r.ToolUseID, i, err)
			}
		}
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}

// MarshalJSON writes AppendJSON's form.
func (r ToolResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// ParseMessage reads a message from the JSON form AppendJSON writes, and
// nothing else: "role" and "content" are both required and there is no
// other key; every tool use has exactly "toolUseId", "name" and "input",
// every tool result exactly "toolUseId", "status" and "content", every
// result content block only "text" and "json"; no key appears twice; a
// string is never null. A block that is not one of the known kinds alone
// is kept whole in Other, as UnmarshalJSON keeps it (Validate then judges
// it). The message is not checked further (see Validate). Raw values are
// copied, so the message does not share memory with data.
func ParseMessage(data []byte) (Message, error) {
	var m Message
	err := strictjson.Decode(data, func(r *strictjson.Reader) error { return readMessage(r, &m) })
	return m, err
}

// ParseToolResult reads a tool result from the JSON form AppendJSON
// writes, as strictly as ParseMessage reads one inside a message.
func ParseToolResult(data []byte) (ToolResult, error) {
	var tr ToolResult
	err := strictjson.Decode(data, func(r *strictjson.Reader) error { return readToolResult(r, &tr) })
	return tr, err
}

// The keys of each object of the stored form, in index order.
var (
	messageKeys       = []string{"role", "content"}
	toolUseKeys       = []string{"toolUseId", "name", "input"}
	toolResultKeys    = []string{"toolUseId", "status", "content"}
	resultContentKeys = []string{"text", "json"}
)

func readMessage(r *strictjson.Reader, m *Message) error {
	keys := strictjson.NewKeys("message", messageKeys)
	err := r.Fields(&keys, func(i int) error {
		if i == 0 {
			s, err := r.StringNotNull("role")
			m.Role = Role(s)
			return err
		}
		if r.Null() {
			return nil
		}
		m.Content = []ContentBlock{}
		return r.Array(func() error {
			var b ContentBlock
			if err := readBlock(r, &b); err != nil {
				return fmt.Errorf("content block %d: %w", len(m.Content), err)
			}
			m.Content = append(m.Content, b)
			return nil
		})
	})
	if err != nil {
		return err
	}
	return keys.Require(0, 1)
}

// Block kinds as readBlock finds them.
const (
	kindOther = iota
	kindText
	kindToolUse
	kindToolResult
)

// readBlock reads a block: an object whose only key is a known kind is that
// kind, read strictly; any other object is kept whole in Other.
func readBlock(r *strictjson.Reader, b *ContentBlock) error {
	if r.Null() {
		b.Other = []byte("null") // as UnmarshalJSON keeps it; Validate refuses it
		return nil
	}
	mark := r.Mark()
	var (
		n, kind int
		first   string
		value   []byte // the first key's value, unless it is a text read already
		text    string
		isText  bool
	)
	err := r.Object(func(key []byte) error {
		n++
		if n > 1 {
			if kind != kindOther && string(key) == first {
				return fmt.Errorf("%w: %s block: key %q twice", strictjson.ErrStrict, first, key)
			}
			_, err := r.Raw()
			return err
		}
		switch string(key) {
		case "text":
			kind, first = kindText, "text"
			if r.Next() == '"' {
				var err error
				text, err = r.String()
				isText = true
				return err
			}
		case "toolUse":
			kind, first = kindToolUse, "toolUse"
		case "toolResult":
			kind, first = kindToolResult, "toolResult"
		}
		var err error
		value, err = r.Raw()
		return err
	})
	if err != nil {
		return err
	}
	if n == 1 {
		switch kind {
		case kindText:
			if !isText {
				return fmt.Errorf("%w: text block: the text is %s, not a string", strictjson.ErrStrict, clipJSON(value))
			}
			b.Text = &text
			return nil
		case kindToolUse:
			var tu ToolUse
			if err := strictjson.Decode(value, func(r *strictjson.Reader) error { return readToolUse(r, &tu) }); err != nil {
				return err
			}
			b.ToolUse = &tu
			return nil
		case kindToolResult:
			var tr ToolResult
			if err := strictjson.Decode(value, func(r *strictjson.Reader) error { return readToolResult(r, &tr) }); err != nil {
				return err
			}
			b.ToolResult = &tr
			return nil
		}
	}
	b.Other = append([]byte(nil), r.Span(mark)...)
	return nil
}

func readToolUse(r *strictjson.Reader, tu *ToolUse) error {
	keys := strictjson.NewKeys("toolUse", toolUseKeys)
	err := r.Fields(&keys, func(i int) (err error) {
		switch {
		case i == 0:
			tu.ToolUseID, err = r.StringNotNull("toolUse toolUseId")
		case i == 1:
			tu.Name, err = r.StringNotNull("toolUse name")
		default:
			tu.Input, err = r.RawCopy()
		}
		return err
	})
	if err != nil {
		return err
	}
	return keys.Require(0, 1, 2)
}

func readToolResult(r *strictjson.Reader, tr *ToolResult) error {
	keys := strictjson.NewKeys("toolResult", toolResultKeys)
	err := r.Fields(&keys, func(i int) (err error) {
		switch {
		case i == 0:
			tr.ToolUseID, err = r.StringNotNull("toolResult toolUseId")
			return err
		case i == 1:
			s, err := r.StringNotNull("toolResult status")
			tr.Status = ToolStatus(s)
			return err
		}
		if r.Null() {
			return nil
		}
		tr.Content = []ToolResultContent{}
		return r.Array(func() error {
			var c ToolResultContent
			if err := readResultContent(r, &c); err != nil {
				return fmt.Errorf("toolResult content %d: %w", len(tr.Content), err)
			}
			tr.Content = append(tr.Content, c)
			return nil
		})
	})
	if err != nil {
		return err
	}
	return keys.Require(0, 1, 2)
}

func readResultContent(r *strictjson.Reader, c *ToolResultContent) error {
	keys := strictjson.NewKeys("toolResult content", resultContentKeys)
	return r.Fields(&keys, func(i int) (err error) {
		switch {
		case i == 0:
			var s string
			s, err = r.StringNotNull("text")
			c.Text = &s
		default:
			c.JSON, err = r.RawCopy()
		}
		return err
	})
}
