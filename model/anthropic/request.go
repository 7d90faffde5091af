package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/braidhq/braid/model"
)

// params maps a Braid request to the Messages API's:
//
//   - SystemPrompt → system (one text block), when not empty;
//   - each message → a message of the same role, its blocks in order: text →
//     text (empty and whitespace-only ones dropped: the API refuses them),
//     toolUse → tool_use {id, name, input},
//     toolResult → tool_result {tool_use_id, content, is_error};
//   - a tool result's content → text blocks: a text item as it is (left
//     out when empty or whitespace only), a JSON item as its compact JSON
//     text; is_error is true for status "error", and an error result left
//     without content gets one text (the API refuses it empty);
//   - each ToolSpec → a tool {name, description, input_schema}, the schema
//     sent as given (its "type" must be "object" or absent);
//   - the model id, max_tokens and temperature (when set) from the Config.
//
// Blocks Braid keeps as Other, in Braid's (Converse's) JSON form: an image
// with inline bytes (png, jpeg, gif, webp) in a user message becomes an
// image block, and a document a document block (pdf as base64; txt, md,
// csv and html as plain text), titled with its name; reasoningContent is
// left out; a cachePoint becomes cache_control (ephemeral, with its ttl) on
// the block sent last before it (see blocks), a tool or the system prompt
// for one before any message content, and more than MaxCachedBlocks blocks
// so marked fail the request with model.ErrBadRequest; anything else, or an image or
// document in an assistant message, fails the request with
// model.ErrBadRequest before anything is sent, rather than being dropped
// silently.
func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.cfg.Model),
		MaxTokens: int64(m.cfg.MaxTokens),
	}
	if req == nil {
		return p, m.requestError("the request is nil")
	}
	if m.cfg.Temperature != nil {
		// MessageNewParams of SDK v2 has no temperature field; the API
		// still takes it.
		p.SetExtraFields(map[string]any{"temperature": *m.cfg.Temperature})
	}
	// The API reads a request as tools, system, messages; a cache point
	// marks the block sent last before it (cached points to its
	// cache_control), which may be a tool or the system prompt.
	var cached *sdk.CacheControlEphemeralParam
	for _, spec := range req.Tools {
		tp, err := m.tool(spec)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
		cached = &tp.CacheControl
	}
	if req.SystemPrompt != "" {
		p.System = []sdk.TextBlockParam{{Text: req.SystemPrompt}}
		cached = &p.System[0].CacheControl
	}
	p.Messages = make([]sdk.MessageParam, 0, len(req.Messages))
	// The API refuses a message without content (an assistant turn can end
	// with none): skip it, and join what that leaves of one role in a row, as
	// the API itself would.
	var roles []model.Role
	var contents [][]sdk.ContentBlockParamUnion
	for i, msg := range req.Messages {
		blocks, err := m.blocks(i, msg, &cached)
		if err != nil {
			return p, err
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(roles); n > 0 && roles[n-1] == msg.Role {
			contents[n-1] = append(contents[n-1], blocks...)
			continue
		}
		roles, contents = append(roles, msg.Role), append(contents, blocks)
	}
	for i, role := range roles {
		if role == model.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(contents[i]...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(contents[i]...))
		}
	}
	if n := cachedBlocks(p, contents); n > MaxCachedBlocks {
		return p, m.requestError(fmt.Sprintf("the cache points mark %d blocks; the Messages API takes at most %d blocks with cache_control in a request: remove cache points (keep the ones whose prefix is reused, such as the latest)", n, MaxCachedBlocks))
	}
	return p, nil
}

// MaxCachedBlocks is the most blocks with cache_control the Messages API
// takes in one request; Stream refuses a request whose cache points mark
// more (model.ErrBadRequest) before sending it.
const MaxCachedBlocks = 4

// cachedBlocks counts the tools and system blocks of p, and the message
// blocks in contents, that carry cache_control.
func cachedBlocks(p sdk.MessageNewParams, contents [][]sdk.ContentBlockParamUnion) int {
	n := 0
	for _, t := range p.Tools {
		if t.OfTool != nil && t.OfTool.CacheControl.Type != "" {
			n++
		}
	}
	for _, b := range p.System {
		if b.CacheControl.Type != "" {
			n++
		}
	}
	for _, blocks := range contents {
		for _, b := range blocks {
			if cc := b.GetCacheControl(); cc != nil && cc.Type != "" {
				n++
			}
		}
	}
	return n
}

// blocks returns a message's content blocks as the API takes them. A cache
// point sets the cache_control *cached points to, that of the block sent
// last before it (in this message or an earlier part of the request), and
// is not sent itself; each block sent points *cached to its own.
func (m *Model) blocks(i int, msg model.Message, cached **sdk.CacheControlEphemeralParam) ([]sdk.ContentBlockParamUnion, error) {
	if msg.Role != model.RoleUser && msg.Role != model.RoleAssistant {
		return nil, m.requestError(fmt.Sprintf("message %d: unknown role %q (want user or assistant)", i, msg.Role))
	}
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(msg.Content))
	for j, b := range msg.Content {
		switch {
		case b.Text != nil:
			if strings.TrimSpace(*b.Text) != "" {
				blocks = append(blocks, sdk.NewTextBlock(*b.Text))
			}
		case b.ToolUse != nil:
			input, err := toolInput(b.ToolUse.Input)
			if err != nil {
				return nil, m.requestError(fmt.Sprintf("message %d, block %d: tool use %s (%s): %v", i, j, b.ToolUse.ToolUseID, b.ToolUse.Name, err))
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID:    b.ToolUse.ToolUseID,
				Name:  b.ToolUse.Name,
				Input: input,
			}})
		case b.ToolResult != nil:
			tr, err := toolResult(*b.ToolResult)
			if err != nil {
				return nil, m.requestError(fmt.Sprintf("message %d, block %d: tool result %s: %v", i, j, b.ToolResult.ToolUseID, err))
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &tr})
		case b.Other != nil:
			if cc, ok, err := cachePoint(b.Other); ok || err != nil {
				if err != nil {
					return nil, m.requestError(fmt.Sprintf("message %d, block %d: %v", i, j, err))
				}
				if *cached != nil {
					**cached = cc
				}
				continue
			}
			block, err := otherBlock(msg.Role, b.Other)
			if err != nil {
				return nil, m.requestError(fmt.Sprintf("message %d, block %d: %v", i, j, err))
			}
			if block != nil {
				blocks = append(blocks, *block)
			}
		default:
			return nil, m.requestError(fmt.Sprintf("message %d, block %d: %v", i, j, model.ErrEmptyBlock))
		}
		if n := len(blocks); n > 0 {
			*cached = blocks[n-1].GetCacheControl()
		}
	}
	return blocks, nil
}

// cachePoint reads a Converse cachePoint block ({"cachePoint": {"type":
// "default", "ttl": "5m" or "1h"}}) as the cache_control it puts on the
// block before it; ok is false for any other block.
func cachePoint(raw json.RawMessage) (cc sdk.CacheControlEphemeralParam, ok bool, err error) {
	kind, v, err := model.OtherKind(raw)
	if err != nil || kind != "cachePoint" {
		return cc, false, nil // otherBlock reports a malformed block
	}
	var point struct {
		TTL string `json:"ttl"`
	}
	if err := json.Unmarshal(v, &point); err != nil {
		return cc, true, fmt.Errorf("cachePoint: %v", err)
	}
	cc = sdk.NewCacheControlEphemeralParam()
	switch ttl := sdk.CacheControlEphemeralTTL(point.TTL); ttl {
	case "":
	case sdk.CacheControlEphemeralTTLTTL5m, sdk.CacheControlEphemeralTTLTTL1h:
		cc.TTL = ttl
	default:
		return cc, true, fmt.Errorf("cachePoint ttl %q is not supported (5m, 1h)", point.TTL)
	}
	return cc, true, nil
}

// otherBlock maps a block Braid keeps as raw JSON (see params). A nil block
// with a nil error is one left out on purpose.
func otherBlock(role model.Role, raw json.RawMessage) (*sdk.ContentBlockParamUnion, error) {
	media, err := model.SendableMedia(role, raw, "Anthropic Messages API")
	if err != nil || media == nil {
		return nil, err
	}
	if mt, ok := media.ImageMediaType(); ok {
		b := sdk.NewImageBlockBase64(mt, base64.StdEncoding.EncodeToString(media.Bytes))
		return &b, nil
	}
	var b sdk.ContentBlockParamUnion
	switch media.Format {
	case "pdf":
		b = sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(media.Bytes)})
	case "txt", "md", "csv", "html":
		if !utf8.Valid(media.Bytes) {
			return nil, fmt.Errorf("document %q (%s) is not UTF-8 text", media.Name, media.Format)
		}
		b = sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(media.Bytes)})
	default:
		return nil, fmt.Errorf("document format %q is not supported (pdf, txt, md, csv, html)", media.Format)
	}
	if media.Name != "" {
		b.OfDocument.Title = param.NewOpt(media.Name)
	}
	return &b, nil
}

// toolInput returns a tool use's input as raw JSON, {} when empty or null
// (model.Accumulator keeps a null input, which the API refuses); else it
// must be a JSON object.
func toolInput(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("input is not a JSON object")
	}
	return raw, nil
}

func toolResult(r model.ToolResult) (sdk.ToolResultBlockParam, error) {
	tr := sdk.ToolResultBlockParam{ToolUseID: r.ToolUseID}
	if r.Status == model.ToolError {
		tr.IsError = sdk.Bool(true)
	}
	for k, c := range r.Content {
		var text string
		switch {
		case c.Text != nil:
			text = *c.Text
		case c.JSON != nil:
			var buf bytes.Buffer
			if err := json.Compact(&buf, c.JSON); err != nil {
				return tr, fmt.Errorf("content %d: invalid JSON: %v", k, err)
			}
			text = buf.String()
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: text}})
	}
	if tr.IsError.Value && len(tr.Content) == 0 {
		// The API refuses an error result without content.
		tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: emptyErrorText}})
	}
	return tr, nil
}

// emptyErrorText is the content of an error result that has none (or only
// whitespace), which the API refuses ("content cannot be empty if
// `is_error` is true").
const emptyErrorText = "The tool failed without a message."

// tool maps a ToolSpec; the schema's properties, required and any other
// keywords are sent unchanged, and a schema without properties (or no
// schema) gets empty ones, so that input_schema, which the API requires, is
// sent.
func (m *Model) tool(spec model.ToolSpec) (sdk.ToolParam, error) {
	tp := sdk.ToolParam{Name: spec.Name}
	if spec.Description != "" {
		tp.Description = sdk.String(spec.Description)
	}
	var schema map[string]json.RawMessage
	if len(bytes.TrimSpace(spec.InputSchema)) > 0 {
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			return tp, m.requestError(fmt.Sprintf("tool %q: input schema is not a JSON object: %v", spec.Name, err))
		}
	}
	extra := make(map[string]any, len(schema))
	for k, v := range schema {
		switch k {
		case "type":
			var typ string
			if err := json.Unmarshal(v, &typ); err != nil || typ != "object" {
				return tp, m.requestError(fmt.Sprintf("tool %q: input schema type is %s; the Messages API needs \"object\"", spec.Name, v))
			}
		case "properties":
			tp.InputSchema.Properties = v
		case "required":
			if err := json.Unmarshal(v, &tp.InputSchema.Required); err != nil {
				return tp, m.requestError(fmt.Sprintf("tool %q: input schema required is not a list of names: %v", spec.Name, err))
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		tp.InputSchema.ExtraFields = extra
	}
	if tp.InputSchema.Properties == nil {
		// The API requires input_schema, and the SDK leaves out an empty
		// one: a tool without input sends {"type":"object","properties":{}}.
		tp.InputSchema.Properties = map[string]any{}
	}
	return tp, nil
}

func (m *Model) requestError(msg string) error {
	return &model.ProviderError{
		Provider: ProviderName,
		Model:    m.cfg.Model,
		Kind:     model.ErrBadRequest,
		Message:  msg,
	}
}
