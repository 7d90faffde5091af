package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/braidhq/braid/model"
)

// errNilRequest: Stream was called with a nil request.
var errNilRequest = errors.New("nil request")

// input builds the ConverseStream request: the model id, the system prompt
// as one text block, the messages, the tools as toolSpecs with JSON input
// schemas ("type": "object" added at the top of a schema without a type;
// or, for a request without tools whose messages hold tool uses or
// results, the noop tool), and the inference settings that are set.
func (m *Model) input(req *model.Request) (*bedrockruntime.ConverseStreamInput, error) {
	if req == nil {
		return nil, errNilRequest
	}
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String(m.cfg.Model)}
	if req.SystemPrompt != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.SystemPrompt}}
	}
	in.Messages = make([]types.Message, 0, len(req.Messages))
	status := m.cfg.includeStatus()
	for i, msg := range req.Messages {
		cm, err := message(msg, status)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		// Converse refuses a message without content and two messages of one
		// role in a row (a history can have both: an assistant turn that
		// ended with nothing, a prompt after a failed call): skip the
		// first, join the second.
		if len(cm.Content) == 0 {
			continue
		}
		if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == cm.Role {
			in.Messages[n-1].Content = append(in.Messages[n-1].Content, cm.Content...)
			continue
		}
		in.Messages = append(in.Messages, cm)
	}
	specs := req.Tools
	if len(specs) == 0 && hasToolBlocks(in.Messages) {
		specs = []model.ToolSpec{noopTool()}
	}
	if len(specs) > 0 {
		tc := &types.ToolConfiguration{}
		for _, spec := range specs {
			t, err := toolSpec(spec)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", spec.Name, err)
			}
			tc.Tools = append(tc.Tools, t)
		}
		in.ToolConfig = tc
	}
	if m.cfg.Temperature != nil || m.cfg.MaxTokens > 0 {
		ic := &types.InferenceConfiguration{}
		if m.cfg.Temperature != nil {
			ic.Temperature = aws.Float32(float32(*m.cfg.Temperature))
		}
		if m.cfg.MaxTokens > 0 {
			ic.MaxTokens = aws.Int32(int32(m.cfg.MaxTokens))
		}
		in.InferenceConfig = ic
	}
	return in, nil
}

// noopTool is the tool a request without tools gets when its messages hold
// tool uses or results: Converse refuses such a request without a
// toolConfig ("The toolConfig field must be defined when using toolUse and
// toolResult content blocks."). Both Strands SDKs add such a tool too.
func noopTool() model.ToolSpec {
	return model.ToolSpec{
		Name:        "noop",
		Description: "A placeholder that lets the conversation hold earlier tool calls; no such tool exists, do not call it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
	}
}

// hasToolBlocks says whether messages hold a toolUse or toolResult block.
func hasToolBlocks(messages []types.Message) bool {
	for _, msg := range messages {
		for _, b := range msg.Content {
			switch b.(type) {
			case *types.ContentBlockMemberToolUse, *types.ContentBlockMemberToolResult:
				return true
			}
		}
	}
	return false
}

func toolSpec(spec model.ToolSpec) (types.Tool, error) {
	schema := spec.InputSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) == nil && top != nil && top["type"] == nil {
		// The models behind Converse refuse a tool schema without "type":
		// "object" at the top; one that leaves it out describes an object.
		top["type"] = json.RawMessage(`"object"`)
		if typed, err := json.Marshal(top); err == nil {
			schema = typed
		}
	}
	doc, err := jsonDocument(schema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	ts := types.ToolSpecification{
		Name:        aws.String(spec.Name),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: doc},
	}
	if spec.Description != "" {
		ts.Description = aws.String(spec.Description)
	}
	return &types.ToolMemberToolSpec{Value: ts}, nil
}

func message(msg model.Message, status bool) (types.Message, error) {
	var role types.ConversationRole
	switch msg.Role {
	case model.RoleUser:
		role = types.ConversationRoleUser
	case model.RoleAssistant:
		role = types.ConversationRoleAssistant
	default:
		return types.Message{}, fmt.Errorf("role %q is neither %q nor %q", msg.Role, model.RoleUser, model.RoleAssistant)
	}
	out := types.Message{Role: role, Content: make([]types.ContentBlock, 0, len(msg.Content))}
	for j, b := range msg.Content {
		if b.Text != nil && strings.TrimSpace(*b.Text) == "" {
			// Converse refuses blank text blocks, whitespace alone
			// included, and a model can answer one ("\n\n" before a
			// tool use): kept in the history, it would fail every later
			// call.
			continue
		}
		cb, err := contentBlock(b, status)
		if err != nil {
			return types.Message{}, fmt.Errorf("block %d (%s): %w", j, b.Kind(), err)
		}
		out.Content = append(out.Content, cb)
	}
	return out, nil
}

func contentBlock(b model.ContentBlock, status bool) (types.ContentBlock, error) {
	switch {
	case b.Text != nil:
		return &types.ContentBlockMemberText{Value: *b.Text}, nil
	case b.ToolUse != nil:
		input := b.ToolUse.Input
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage(`{}`)
		}
		doc, err := jsonDocument(input)
		if err != nil {
			return nil, fmt.Errorf("tool use %s input: %w", b.ToolUse.ToolUseID, err)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.ToolUse.ToolUseID),
			Name:      aws.String(b.ToolUse.Name),
			Input:     doc,
		}}, nil
	case b.ToolResult != nil:
		return toolResult(*b.ToolResult, status)
	case b.Other != nil:
		return otherBlock(b.Other)
	}
	return nil, model.ErrEmptyBlock
}

func toolResult(tr model.ToolResult, status bool) (types.ContentBlock, error) {
	out := types.ToolResultBlock{
		ToolUseId: aws.String(tr.ToolUseID),
		Content:   make([]types.ToolResultContentBlock, 0, len(tr.Content)),
	}
	if status && tr.Status != "" {
		out.Status = types.ToolResultStatus(tr.Status)
	}
	for i, c := range tr.Content {
		switch {
		case c.Text != nil:
			out.Content = append(out.Content, &types.ToolResultContentBlockMemberText{Value: *c.Text})
		case c.JSON != nil:
			doc, err := jsonDocument(c.JSON)
			if err != nil {
				return nil, fmt.Errorf("tool result %s content %d: %w", tr.ToolUseID, i, err)
			}
			out.Content = append(out.Content, &types.ToolResultContentBlockMemberJson{Value: doc})
		default:
			return nil, fmt.Errorf("tool result %s content %d has neither text nor json", tr.ToolUseID, i)
		}
	}
	return &types.ContentBlockMemberToolResult{Value: out}, nil
}

// otherBlock maps the Converse blocks Braid keeps as raw JSON: cachePoint
// (type and ttl), reasoningContent, and image and document with inline
// (base64) bytes.
func otherBlock(raw json.RawMessage) (types.ContentBlock, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || len(obj) != 1 {
		return nil, fmt.Errorf("not a Converse content block (an object with one key): %s", truncate(raw))
	}
	for kind, v := range obj {
		switch kind {
		case "cachePoint":
			var cp struct {
				Type string `json:"type"`
				TTL  string `json:"ttl"`
			}
			if err := json.Unmarshal(v, &cp); err != nil {
				return nil, fmt.Errorf("cachePoint: %w", err)
			}
			return &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointType(cp.Type), Ttl: types.CacheTTL(cp.TTL)}}, nil
		case "reasoningContent":
			var rc struct {
				ReasoningText *struct {
					Text      string  `json:"text"`
					Signature *string `json:"signature"`
				} `json:"reasoningText"`
				RedactedContent []byte `json:"redactedContent"`
			}
			if err := json.Unmarshal(v, &rc); err != nil {
				return nil, fmt.Errorf("reasoningContent: %w", err)
			}
			switch {
			case rc.ReasoningText != nil:
				return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
					Value: types.ReasoningTextBlock{Text: aws.String(rc.ReasoningText.Text), Signature: rc.ReasoningText.Signature},
				}}, nil
			case rc.RedactedContent != nil:
				return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: rc.RedactedContent}}, nil
			}
			return nil, errors.New("reasoningContent has neither reasoningText nor redactedContent")
		case "image":
			var im struct {
				Format string      `json:"format"`
				Source bytesSource `json:"source"`
			}
			if err := json.Unmarshal(v, &im); err != nil {
				return nil, fmt.Errorf("image: %w", err)
			}
			if im.Source.Bytes == nil {
				return nil, errors.New("image: only inline sources ({\"bytes\": base64}) are supported")
			}
			return &types.ContentBlockMemberImage{Value: types.ImageBlock{
				Format: types.ImageFormat(im.Format),
				Source: &types.ImageSourceMemberBytes{Value: im.Source.Bytes},
			}}, nil
		case "document":
			var d struct {
				Format string      `json:"format"`
				Name   string      `json:"name"`
				Source bytesSource `json:"source"`
			}
			if err := json.Unmarshal(v, &d); err != nil {
				return nil, fmt.Errorf("document: %w", err)
			}
			if d.Source.Bytes == nil {
				return nil, errors.New("document: only inline sources ({\"bytes\": base64}) are supported")
			}
			return &types.ContentBlockMemberDocument{Value: types.DocumentBlock{
				Format: types.DocumentFormat(d.Format),
				Name:   aws.String(d.Name),
				Source: &types.DocumentSourceMemberBytes{Value: d.Source.Bytes},
			}}, nil
		default:
			return nil, fmt.Errorf("content block kind %q is not supported by the bedrock provider (supported: text, toolUse, toolResult, cachePoint, reasoningContent, image, document)", kind)
		}
	}
	return nil, model.ErrEmptyBlock
}

// bytesSource is {"bytes": base64}, the JSON form of an inline source.
type bytesSource struct {
	Bytes []byte `json:"bytes"`
}

// jsonDocument turns a JSON value into a Smithy document, keeping numbers
// exact, and checks that the SDK can encode it (the SDK drops encoding
// errors silently).
func jsonDocument(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: more than one value")
	}
	doc := document.NewLazyDocument(exactNumbers(v))
	if _, err := doc.MarshalSmithyDocument(); err != nil {
		return nil, fmt.Errorf("not encodable as a document: %w", err)
	}
	return doc, nil
}

// exactNumbers replaces the json.Numbers of a decoded value with Smithy
// document numbers, which are written as they are.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return smithydocument.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	}
	return v
}

func truncate(raw []byte) string {
	const n = 80
	if len(raw) <= n {
		return string(raw)
	}
	return string(raw[:n]) + "..."
}
