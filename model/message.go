package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Role is who wrote a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation: {"role":..,"content":[..]}.
type Message struct {
	Role    Role           `json:"role"`
	Content []ContentBlock `json:"content"`
}

// UserText returns a user message with one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []ContentBlock{Text(text)}}
}

// AssistantText returns an assistant message with one text block.
func AssistantText(text string) Message {
	return Message{Role: RoleAssistant, Content: []ContentBlock{Text(text)}}
}

// Text returns the concatenated text blocks of the message.
func (m Message) Text() string {
	var buf bytes.Buffer
	for _, b := range m.Content {
		if b.Text != nil {
			buf.WriteString(*b.Text)
		}
	}
	return buf.String()
}

// ToolUses returns the tool-use blocks of the message, in order.
func (m Message) ToolUses() []ToolUse {
	var out []ToolUse
	for _, b := range m.Content {
		if b.ToolUse != nil {
			out = append(out, *b.ToolUse)
		}
	}
	return out
}

// ToolResults returns the tool-result blocks of the message, in order.
func (m Message) ToolResults() []ToolResult {
	var out []ToolResult
	for _, b := range m.Content {
		if b.ToolResult != nil {
			out = append(out, *b.ToolResult)
		}
	}
	return out
}

// Clone returns a deep copy.
func (m Message) Clone() Message {
	c := Message{Role: m.Role, Content: make([]ContentBlock, len(m.Content))}
	for i, b := range m.Content {
		c.Content[i] = b.Clone()
	}
	return c
}

// CloneMessages deep-copies a history.
func CloneMessages(ms []Message) []Message {
	if ms == nil {
		return nil
	}
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = m.Clone()
	}
	return out
}

// ContentBlock is one block of a message. Exactly one field is set. Blocks of
// kinds Braid does not model (images, documents, reasoning...) are kept as
// Other, the whole JSON object, and written back unchanged.
type ContentBlock struct {
	Text       *string
	ToolUse    *ToolUse
	ToolResult *ToolResult
	Other      json.RawMessage
}

// Text returns a text block.
func Text(s string) ContentBlock { return ContentBlock{Text: &s} }

// ToolUseBlock returns a tool-use block.
func ToolUseBlock(tu ToolUse) ContentBlock { return ContentBlock{ToolUse: &tu} }

// ToolResultBlock returns a tool-result block.
func ToolResultBlock(tr ToolResult) ContentBlock { return ContentBlock{ToolResult: &tr} }

// Kind names the block's JSON key ("text", "toolUse", "toolResult", or the
// key of an Other block).
func (b ContentBlock) Kind() string {
	switch {
	case b.Text != nil:
		return "text"
	case b.ToolUse != nil:
		return "toolUse"
	case b.ToolResult != nil:
		return "toolResult"
	case b.Other != nil:
		var obj map[string]json.RawMessage
		if json.Unmarshal(b.Other, &obj) == nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) > 0 {
				return keys[0]
			}
		}
		return "unknown"
	}
	return "empty"
}

// Clone returns a deep copy.
func (b ContentBlock) Clone() ContentBlock {
	var c ContentBlock
	if b.Text != nil {
		s := *b.Text
		c.Text = &s
	}
	if b.ToolUse != nil {
		tu := b.ToolUse.Clone()
		c.ToolUse = &tu
	}
	if b.ToolResult != nil {
		tr := b.ToolResult.Clone()
		c.ToolResult = &tr
	}
	if b.Other != nil {
		c.Other = append(json.RawMessage(nil), b.Other...)
	}
	return c
}

// ErrEmptyBlock is returned when marshalling a block with no field set.
var ErrEmptyBlock = errors.New("content block has no content")

// MarshalJSON writes {"text":..}, {"toolUse":{..}}, {"toolResult":{..}}
// (AppendJSON), or the Other object as it is held.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if b.Other != nil && b.Text == nil && b.ToolUse == nil && b.ToolResult == nil {
		return b.Other, nil
	}
	return b.AppendJSON(nil)
}

// UnmarshalJSON reads one block. An object with exactly one of the known keys
// becomes that block; anything else is kept whole in Other.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("content block: %w", err)
	}
	*b = ContentBlock{}
	if len(obj) == 1 {
		for k, v := range obj {
			switch k {
			case "text":
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return fmt.Errorf("text block: %w", err)
				}
				b.Text = &s
				return nil
			case "toolUse":
				var tu ToolUse
				if err := json.Unmarshal(v, &tu); err != nil {
					return fmt.Errorf("toolUse block: %w", err)
				}
				b.ToolUse = &tu
				return nil
			case "toolResult":
				var tr ToolResult
				if err := json.Unmarshal(v, &tr); err != nil {
					return fmt.Errorf("toolResult block: %w", err)
				}
				b.ToolResult = &tr
				return nil
			}
		}
	}
	b.Other = append(json.RawMessage(nil), data...)
	return nil
}

// ToolUse is the model's request to run a tool:
// {"toolUseId":..,"name":..,"input":{..}}.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// Clone returns a deep copy.
func (t ToolUse) Clone() ToolUse {
	t.Input = append(json.RawMessage(nil), t.Input...)
	return t
}

// DecodeInput unmarshals the tool input into v.
func (t ToolUse) DecodeInput(v any) error {
	if len(t.Input) == 0 {
		return json.Unmarshal([]byte("{}"), v)
	}
	return json.Unmarshal(t.Input, v)
}

// InputMap returns the input as a map (nil if it is not a JSON object).
func (t ToolUse) InputMap() map[string]any {
	var m map[string]any
	if err := t.DecodeInput(&m); err != nil {
		return nil
	}
	return m
}

// ToolStatus is the outcome of a tool run.
type ToolStatus string

// Tool statuses.
const (
	ToolSuccess ToolStatus = "success"
	ToolError   ToolStatus = "error"
)

// ToolResult is a tool's answer to one ToolUse:
// {"toolUseId":..,"status":..,"content":[{"text":..}|{"json":..}]}.
type ToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Status    ToolStatus          `json:"status"`
	Content   []ToolResultContent `json:"content"`
}

// ErrorResult returns an error result with one text block.
func ErrorResult(toolUseID, text string) ToolResult {
	return ToolResult{ToolUseID: toolUseID, Status: ToolError, Content: []ToolResultContent{{Text: &text}}}
}

// TextResult returns a success result with one text block.
func TextResult(toolUseID, text string) ToolResult {
	return ToolResult{ToolUseID: toolUseID, Status: ToolSuccess, Content: []ToolResultContent{{Text: &text}}}
}

// Text returns the concatenated text content.
func (r ToolResult) Text() string {
	var buf bytes.Buffer
	for _, c := range r.Content {
		if c.Text != nil {
			buf.WriteString(*c.Text)
		}
	}
	return buf.String()
}

// Clone returns a deep copy.
func (r ToolResult) Clone() ToolResult {
	c := r
	c.Content = make([]ToolResultContent, len(r.Content))
	for i, x := range r.Content {
		if x.Text != nil {
			s := *x.Text
			x.Text = &s
		}
		if x.JSON != nil {
			x.JSON = append(json.RawMessage(nil), x.JSON...)
		}
		c.Content[i] = x
	}
	return c
}

// ToolResultContent is one block of a tool result: {"text":..} or {"json":..}.
type ToolResultContent struct {
	Text *string         `json:"text,omitempty"`
	JSON json.RawMessage `json:"json,omitempty"`
}

// Validate checks what the JSON form cannot: the role is user or assistant;
// every block is one kind; tool-use and tool-result blocks carry their ids
// (and a tool use its name, a result its status and content blocks of one
// kind each); a block kept whole (Other) is an object with one key that is
// not a misspelt known kind. A stored message that fails it is damage.
func (m Message) Validate() error {
	if m.Role != RoleUser && m.Role != RoleAssistant {
		return fmt.Errorf("message role %q: want %q or %q", m.Role, RoleUser, RoleAssistant)
	}
	for i, b := range m.Content {
		if err := b.validate(); err != nil {
			return fmt.Errorf("content block %d: %w", i, err)
		}
	}
	return nil
}

func (b ContentBlock) validate() error {
	n := 0
	for _, set := range []bool{b.Text != nil, b.ToolUse != nil, b.ToolResult != nil, b.Other != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%d kinds set, want one", n)
	}
	switch {
	case b.ToolUse != nil:
		if b.ToolUse.ToolUseID == "" || b.ToolUse.Name == "" {
			return errors.New("toolUse without toolUseId or name")
		}
	case b.ToolResult != nil:
		return b.ToolResult.Validate()
	case b.Other != nil:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b.Other, &obj); err != nil || len(obj) != 1 {
			return fmt.Errorf("block %s: want an object with one key", clipJSON(b.Other))
		}
		for k := range obj {
			if known := knownKind(k); known != "" {
				return fmt.Errorf("block key %q is not %q: a malformed %s block", k, known, known)
			}
		}
	}
	return nil
}

// knownKind returns the known block kind that k spells, ignoring case and
// '_' ("Text", "tool_use", "toolUse" itself when malformed), or "".
func knownKind(k string) string {
	norm := strings.ToLower(strings.ReplaceAll(k, "_", ""))
	for _, kind := range []string{"text", "toolUse", "toolResult"} {
		if norm == strings.ToLower(kind) {
			return kind
		}
	}
	return ""
}

// Validate checks a tool result: its id, its status, and that each content
// block is text or JSON.
func (r ToolResult) Validate() error {
	if r.ToolUseID == "" {
		return errors.New("toolResult without toolUseId")
	}
	if r.Status != ToolSuccess && r.Status != ToolError {
		return fmt.Errorf("toolResult %s: status %q", r.ToolUseID, r.Status)
	}
	for i, c := range r.Content {
		if (c.Text == nil) == (c.JSON == nil) {
			return fmt.Errorf("toolResult %s: content %d: want one of text or json", r.ToolUseID, i)
		}
	}
	return nil
}

func clipJSON(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}
