package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/braidhq/braid/model"
)

// ErrorPrefix starts the content of a tool message whose tool result has
// status error, so the model sees that the call failed (the Chat Completions
// API has no status field on tool messages).
const ErrorPrefix = "Error: "

// params turns a Braid request into the body of a streaming Chat Completions
// request:
//
//   - the system prompt becomes a leading "system" message;
//   - a user message's toolResult blocks become "tool" messages (one per
//     result, in order, with tool_call_id), followed by a "user" message
//     with its text blocks, if any;
//   - an assistant message becomes one "assistant" message with its text
//     blocks as content and its toolUse blocks as tool_calls (id, function
//     name, arguments as a JSON string);
//   - one text block is sent as a string, several as an array of text parts;
//   - blocks Braid keeps as Other, in Braid's (Converse's) JSON form: an
//     image with inline bytes (png, jpeg, gif, webp) in a user message
//     becomes an image_url part with a data URL, and a pdf document a file
//     part with its bytes; reasoningContent and cachePoint are left out (the
//     API takes no reasoning back, and caches by itself); any other block,
//     or an image or document in an assistant message, fails the request
//     with model.ErrBadRequest before anything is sent;
//   - each model.ToolSpec becomes a function tool whose parameters are its
//     JSON schema, with "type": "object" added when the schema has no
//     type (the API requires it at the top).
func (m *Model) params(req *model.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(m.cfg.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if m.cfg.Temperature != nil {
		p.Temperature = param.NewOpt(*m.cfg.Temperature)
	}
	if m.cfg.MaxTokens > 0 {
		if m.cfg.MaxCompletionTokensField {
			p.MaxCompletionTokens = param.NewOpt(int64(m.cfg.MaxTokens))
		} else {
			p.MaxTokens = param.NewOpt(int64(m.cfg.MaxTokens))
		}
	}
	if req.SystemPrompt != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.SystemPrompt))
	}
	for i, msg := range req.Messages {
		out, err := chatMessages(msg)
		if err != nil {
			return p, m.requestError(fmt.Sprintf("message %d (%s): %v", i, msg.Role, err))
		}
		p.Messages = append(p.Messages, out...)
	}
	for _, spec := range req.Tools {
		t, err := functionTool(spec)
		if err != nil {
			return p, m.requestError(err.Error())
		}
		p.Tools = append(p.Tools, t)
	}
	return p, nil
}

// chatMessages maps one Braid message to its chat messages. An error is a
// request that cannot be sent (see params); the caller names the message.
func chatMessages(msg model.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var parts []sdk.ChatCompletionContentPartUnionParam // a user message's text, images and files, in order
	var texts []string
	var uses []model.ToolUse
	var results []model.ToolResult
	for j, b := range msg.Content {
		switch {
		case b.Text != nil:
			texts = append(texts, *b.Text)
			parts = append(parts, sdk.TextContentPart(*b.Text))
		case b.ToolUse != nil:
			uses = append(uses, *b.ToolUse)
		case b.ToolResult != nil:
			results = append(results, *b.ToolResult)
		case b.Other != nil:
			part, err := otherPart(msg.Role, b.Other)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			if part != nil {
				parts = append(parts, *part)
			}
		default:
			return nil, fmt.Errorf("block %d: %w", j, model.ErrEmptyBlock)
		}
	}
	switch msg.Role {
	case model.RoleUser:
		if len(uses) > 0 {
			return nil, fmt.Errorf("a user message holds a toolUse block (%s)", uses[0].ToolUseID)
		}
		var out []sdk.ChatCompletionMessageParamUnion
		for _, r := range results {
			out = append(out, sdk.ToolMessage(toolResultText(r), r.ToolUseID))
		}
		switch {
		case len(parts) == 1 && len(texts) == 1:
			out = append(out, sdk.UserMessage(texts[0]))
		case len(parts) > 0:
			out = append(out, sdk.UserMessage(parts))
		}
		return out, nil
	case model.RoleAssistant:
		if len(results) > 0 {
			return nil, fmt.Errorf("an assistant message holds a toolResult block (%s)", results[0].ToolUseID)
		}
		var a sdk.ChatCompletionAssistantMessageParam
		switch {
		case len(texts) == 1:
			a.Content.OfString = param.NewOpt(texts[0])
		case len(texts) > 1:
			for _, s := range texts {
				a.Content.OfArrayOfContentParts = append(a.Content.OfArrayOfContentParts,
					sdk.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{OfText: &sdk.ChatCompletionContentPartTextParam{Text: s}})
			}
		case len(uses) == 0:
			a.Content.OfString = param.NewOpt("")
		}
		for _, u := range uses {
			args := string(bytes.TrimSpace(u.Input))
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       u.ToolUseID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: u.Name, Arguments: args},
				},
			})
		}
		return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
	}
	return nil, fmt.Errorf("unknown role %q (want %q or %q)", msg.Role, model.RoleUser, model.RoleAssistant)
}

// requestError is a request that cannot be sent: model.ErrBadRequest.
func (m *Model) requestError(msg string) error {
	return &model.ProviderError{Provider: ProviderName, Model: m.cfg.Model, Kind: model.ErrBadRequest, Message: msg}
}

// otherPart maps a block Braid keeps as raw JSON (see params). A nil part
// with a nil error is a block that is left out on purpose.
func otherPart(role model.Role, raw json.RawMessage) (*sdk.ChatCompletionContentPartUnionParam, error) {
	media, err := model.SendableMedia(role, raw, "Chat Completions API")
	if err != nil || media == nil {
		return nil, err
	}
	data := base64.StdEncoding.EncodeToString(media.Bytes)
	if mt, ok := media.ImageMediaType(); ok {
		part := sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:" + mt + ";base64," + data})
		return &part, nil
	}
	if media.Format != "pdf" {
		return nil, fmt.Errorf("document format %q is not supported (the Chat Completions API takes pdf files)", media.Format)
	}
	f := sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt("data:application/pdf;base64," + data)}
	if media.Name != "" {
		f.Filename = param.NewOpt(media.Name)
	}
	part := sdk.FileContentPart(f)
	return &part, nil
}

// toolResultText is the content of the tool message a tool result is sent
// as: its content blocks in order, text blocks as they are and JSON blocks as
// compact JSON text, joined by newlines; with ErrorPrefix in front when the
// result's status is error ("Error" alone when it has no content).
func toolResultText(r model.ToolResult) string {
	parts := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		switch {
		case c.Text != nil:
			parts = append(parts, *c.Text)
		case c.JSON != nil:
			var buf bytes.Buffer
			if err := json.Compact(&buf, c.JSON); err != nil {
				parts = append(parts, string(c.JSON))
			} else {
				parts = append(parts, buf.String())
			}
		}
	}
	text := strings.Join(parts, "\n")
	if r.Status == model.ToolError {
		if text == "" {
			return strings.TrimSuffix(ErrorPrefix, ": ")
		}
		return ErrorPrefix + text
	}
	return text
}

// functionTool maps a tool spec to a function tool.
func functionTool(spec model.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	def := shared.FunctionDefinitionParam{Name: spec.Name}
	if spec.Description != "" {
		def.Description = param.NewOpt(spec.Description)
	}
	if len(bytes.TrimSpace(spec.InputSchema)) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(spec.InputSchema, &fields); err != nil || fields == nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: input schema is not a JSON object", spec.Name)
		}
		def.Parameters = make(shared.FunctionParameters, len(fields)+1)
		for k, v := range fields {
			def.Parameters[k] = v
		}
		if _, ok := fields["type"]; !ok {
			// The API refuses parameters without "type": "object" at the
			// top; a schema that leaves it out describes an object anyway.
			def.Parameters["type"] = "object"
		}
	}
	return sdk.ChatCompletionFunctionTool(def), nil
}
