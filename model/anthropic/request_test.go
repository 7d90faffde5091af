package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/anthropic"
	"github.com/braidhq/braid/model/modeltest"
)

func TestRequest_TextSendsSystemMessagesToolsAndSettings(t *testing.T) {
	m, r := newModel(t, "text", nil)
	complete(t, m, weatherRequest())

	require.Equal(t, 1, r.Count())
	// The whole body, exactly: model id, max_tokens, temperature, stream,
	// system, the user message and the tools with their JSON schemas.
	assert.JSONEq(t, readFixture(t, "text/1.request.json"), string(r.Requests()[0]))
	var body struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(r.Requests()[0], &body))
	specs := modeltest.Tools().Specs()
	require.Len(t, body.Tools, len(specs))
	for i, spec := range specs {
		assert.Equal(t, spec.Name, body.Tools[i].Name)
		assert.JSONEq(t, string(spec.InputSchema), string(body.Tools[i].InputSchema), "input_schema is the tool's JSON schema")
	}
}

func TestRequest_SendsTheAPIKeyAndVersion(t *testing.T) {
	m, r := newModel(t, "text", nil)
	complete(t, m, weatherRequest())

	h := r.Header(0)
	assert.Equal(t, "Bearer "+testAPIKey, h.Get("Authorization"), "the SDK sends the key as a bearer token")
	assert.NotEmpty(t, h.Get("Anthropic-Version"))
	assert.Equal(t, "application/json", h.Get("Content-Type"))
}

func TestRequest_DefaultsOmitTemperatureAndSendMaxTokens4096(t *testing.T) {
	m, r := newModel(t, "text", func(c *anthropic.Config) {
		c.Temperature = nil
		c.MaxTokens = 0
	})
	// The replay server checks bodies against the fixture, which has the
	// test settings; this request is checked here instead.
	r.Expect(0, expectedWithout(t, readFixture(t, "text/1.request.json"), "temperature", anthropic.DefaultMaxTokens))
	complete(t, m, weatherRequest())

	var body map[string]any
	require.NoError(t, json.Unmarshal(r.Requests()[0], &body))
	assert.NotContains(t, body, "temperature")
	assert.EqualValues(t, anthropic.DefaultMaxTokens, body["max_tokens"])
}

// expectedWithout returns the fixture body without key and with max_tokens.
func expectedWithout(t *testing.T, fixture, key string, maxTokens int) []byte {
	t.Helper()
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(fixture), &body))
	delete(body, key)
	body["max_tokens"] = maxTokens
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	return raw
}

func TestRequest_RoundTripSendsToolUsesThenToolResultsInOrder(t *testing.T) {
	m, r := newModel(t, "round_trip", nil)
	req := weatherRequest()
	first, _ := complete(t, m, req)
	require.Len(t, first.ToolUses(), 2)

	req.Messages = append(req.Messages, first, model.Message{Role: model.RoleUser, Content: []model.ContentBlock{
		model.ToolResultBlock(model.TextResult("call_1", "sunny")),
		model.ToolResultBlock(model.TextResult("call_2", "noon")),
	}})
	final, stop := complete(t, m, req)
	assert.Equal(t, modeltest.FinalAnswer, final.Text())
	assert.Equal(t, modeltest.FinalUsage(), stop.Usage)

	require.Equal(t, 2, r.Count())
	assert.JSONEq(t, readFixture(t, "round_trip/2.request.json"), string(r.Requests()[1]))
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(r.Requests()[1], &body))
	require.Len(t, body.Messages, 3)
	asst, user := body.Messages[1], body.Messages[2]
	assert.Equal(t, "assistant", asst.Role)
	require.Len(t, asst.Content, 3)
	assert.Equal(t, []string{"text", "tool_use", "tool_use"}, []string{asst.Content[0].Type, asst.Content[1].Type, asst.Content[2].Type})
	assert.Equal(t, "call_1", asst.Content[1].ID)
	assert.Equal(t, "call_2", asst.Content[2].ID)
	assert.Equal(t, "user", user.Role, "both results in one user message")
	require.Len(t, user.Content, 2)
	assert.Equal(t, "tool_result", user.Content[0].Type)
	assert.Equal(t, "call_1", user.Content[0].ToolUseID)
	assert.Equal(t, "call_2", user.Content[1].ToolUseID)
}

// A JSON result is sent as its compact JSON text; an error result has
// is_error true. No system prompt, no tools, no temperature: none are sent.
func TestRequest_ToolResultsMapErrorStatusAndJSONContent(t *testing.T) {
	m, r := newModel(t, "tool_results", func(c *anthropic.Config) {
		c.Temperature = nil
		c.MaxTokens = 0
	})
	orderJSON := json.RawMessage(`{"id": 42, "items": ["tea", "cups"], "paid": true}`)
	req := &model.Request{Messages: []model.Message{
		model.UserText("Look up order 42 and its invoice."),
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "toolu_01A", Name: "get_order", Input: json.RawMessage(`{"id":42}`)}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "toolu_01B", Name: "get_invoice", Input: json.RawMessage(`{"order":42}`)}),
		}},
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.ToolResultBlock(model.ToolResult{ToolUseID: "toolu_01A", Status: model.ToolSuccess, Content: []model.ToolResultContent{
				{JSON: orderJSON},
				{Text: ptr("from the orders service")},
			}}),
			model.ToolResultBlock(model.ErrorResult("toolu_01B", "invoice service unavailable")),
		}},
	}}
	msg, _ := complete(t, m, req)
	assert.Equal(t, "Order 42 is paid; its invoice is unavailable.", msg.Text())

	require.Equal(t, 1, r.Count())
	assert.JSONEq(t, readFixture(t, "tool_results/1.request.json"), string(r.Requests()[0]))
}

func ptr(s string) *string { return &s }

// Images and documents of a user message are sent as image and document
// blocks in their place (a pdf as base64, a text document as text, titled
// with its name); reasoning is left out, and a cache point marks the block
// before it.
func TestRequest_ImagesAndDocumentsBecomeBlocks(t *testing.T) {
	m, r := newModel(t, "media", func(c *anthropic.Config) { c.Temperature = nil })
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.Text("What do these show?"),
			{Other: json.RawMessage(`{"image":{"format":"jpg","source":{"bytes":"AAEC"}}}`)},
			{Other: json.RawMessage(`{"document":{"format":"pdf","name":"spec.pdf","source":{"bytes":"JVBERg=="}}}`)},
			{Other: json.RawMessage(`{"document":{"format":"txt","name":"notes","source":{"bytes":"aGVsbG8="}}}`)},
			{Other: json.RawMessage(`{"cachePoint":{"type":"default"}}`)},
		}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"reasoningContent":{"reasoningText":{"text":"hmm"}}}`)}, model.Text("Let me look."),
		}},
		model.UserText("Go on."),
	}}
	complete(t, m, req)
	require.Equal(t, 1, r.Count())
	assert.JSONEq(t, readFixture(t, "media/1.request.json"), string(r.Requests()[0]))
}

func TestRequest_UnsupportedInputFailsBeforeSending(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *model.Request
		want string
	}{
		{"nil request", nil, "nil"},
		{"unknown block", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"video":{"format":"mp4","source":{"bytes":"AAAA"}}}`)},
		}}}}, `"video" blocks cannot be sent`},
		{"image from assistant", &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"png","source":{"bytes":"AAAA"}}}`)},
		}}}}, "only be sent in user messages"},
		{"image format", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"tiff","source":{"bytes":"AAAA"}}}`)},
		}}}}, `"tiff"`},
		{"image by reference", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}`)},
		}}}}, "inline sources"},
		{"document format", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"document":{"format":"docx","name":"d","source":{"bytes":"AAAA"}}}`)},
		}}}}, `"docx"`},
		{"text document not UTF-8", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"document":{"format":"txt","name":"d","source":{"bytes":"/w=="}}}`)},
		}}}}, "not UTF-8"},
		{"empty block", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{{}}}}}, "no content"},
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "system", Content: []model.ContentBlock{model.Text("x")}}}}, "unknown role"},
		{"tool input not an object", &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "f", Input: json.RawMessage(`[1]`)}),
		}}}}, "not a JSON object"},
		{"cache point ttl", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			model.Text("x"), {Other: json.RawMessage(`{"cachePoint":{"type":"default","ttl":"1d"}}`)},
		}}}}, `ttl "1d"`},
		{"schema not an object type", &model.Request{
			Messages: []model.Message{model.UserText("hi")},
			Tools:    []model.ToolSpec{{Name: "f", InputSchema: json.RawMessage(`{"type":"string"}`)}},
		}, `needs "object"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := newModel(t, "text", nil)
			_, err := collect(t, m, tc.req)
			require.Error(t, err)
			assert.ErrorIs(t, err, model.ErrBadRequest)
			var pe *model.ProviderError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, "anthropic", pe.Provider)
			assert.Zero(t, pe.StatusCode)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, r.Count(), "nothing was sent")
		})
	}
}

// A cache point (Converse's cachePoint block) is Anthropic's cache_control
// {"type": "ephemeral"} on the block sent before it, as Strands maps it:
// text, tool use, tool result or document, in the same message or the one
// before; the system prompt (or, without one, the last tool) for a cache
// point before any message content. Its ttl is kept. Nothing is sent for
// the cache point itself.
func TestRequest_CachePointMarksTheBlockBeforeIt(t *testing.T) {
	m, r := newModel(t, "text", nil)
	cachePoint := model.ContentBlock{Other: json.RawMessage(`{"cachePoint":{"type":"default"}}`)}
	req := &model.Request{
		SystemPrompt: "You are a test.",
		Tools:        []model.ToolSpec{{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.ContentBlock{
				cachePoint,
				model.Text("A long document."),
				{Other: json.RawMessage(`{"cachePoint":{"type":"default","ttl":"1h"}}`)},
				model.Text("What does it say?"),
			}},
			{Role: model.RoleAssistant, Content: []model.ContentBlock{
				model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "echo", Input: json.RawMessage(`{}`)}),
				model.Text("\n\n"), // not sent: the cache point marks the tool use
				cachePoint,
			}},
			{Role: model.RoleUser, Content: []model.ContentBlock{
				model.ToolResultBlock(model.TextResult("t1", "echoed")),
				cachePoint,
			}},
		},
	}
	want := `{
		"model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 0.2, "stream": true,
		"system": [{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}],
		"tools": [{"name": "echo", "description": "Echoes.", "input_schema": {"type": "object", "properties": {}}}],
		"messages": [
			{"role": "user", "content": [
				{"type": "text", "text": "A long document.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
				{"type": "text", "text": "What does it say?"}
			]},
			{"role": "assistant", "content": [
				{"type": "tool_use", "id": "t1", "name": "echo", "input": {}, "cache_control": {"type": "ephemeral"}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "echoed"}], "cache_control": {"type": "ephemeral"}}
			]}
		]
	}`
	r.Expect(0, []byte(want))
	complete(t, m, req)
	require.Equal(t, 1, r.Count())
	assert.JSONEq(t, want, string(r.Requests()[0]))
}

// The API takes at most four cache_control blocks in a request (and answers
// 400 to more). A request whose cache points mark more blocks fails before
// anything is sent, with model.ErrBadRequest and a message that gives the
// count and the limit; none is dropped to fit. Cache points count by the
// blocks they mark: two on one block count once, one with nothing before
// it (dropped) not at all.
func TestRequest_MoreThanFourCachedBlocksFailBeforeSending(t *testing.T) {
	cachePoint := model.ContentBlock{Other: json.RawMessage(`{"cachePoint":{"type":"default"}}`)}
	turns := func(n int) []model.Message {
		var msgs []model.Message
		for i := range n {
			msgs = append(msgs,
				model.Message{Role: model.RoleUser, Content: []model.ContentBlock{model.Text(fmt.Sprintf("question %d", i)), cachePoint}},
				model.AssistantText(fmt.Sprintf("answer %d", i)))
		}
		return append(msgs, model.UserText("last question"))
	}

	m, r := newModel(t, "text", nil)
	_, err := collect(t, m, &model.Request{SystemPrompt: "You are a test.", Messages: append([]model.Message{
		{Role: model.RoleUser, Content: []model.ContentBlock{cachePoint, cachePoint}},
	}, turns(4)...)})
	require.Error(t, err)
	assert.ErrorIs(t, err, model.ErrBadRequest)
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Zero(t, pe.StatusCode)
	assert.Contains(t, err.Error(), "5 blocks")
	assert.Contains(t, err.Error(), "at most 4")
	assert.Zero(t, r.Count(), "nothing was sent")

	// Seven cache points, four marked blocks: sent.
	m, r = newModel(t, "text", nil)
	msgs := turns(3)
	msgs[0].Content = append([]model.ContentBlock{cachePoint, cachePoint}, append(msgs[0].Content, cachePoint)...)
	cached := func(text string) string {
		return `{"type": "text", "text": "` + text + `", "cache_control": {"type": "ephemeral"}}`
	}
	want := `{
		"model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 0.2, "stream": true,
		"system": [` + cached("You are a test.") + `],
		"messages": [
			{"role": "user", "content": [` + cached("question 0") + `]},
			{"role": "assistant", "content": [{"type": "text", "text": "answer 0"}]},
			{"role": "user", "content": [` + cached("question 1") + `]},
			{"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]},
			{"role": "user", "content": [` + cached("question 2") + `]},
			{"role": "assistant", "content": [{"type": "text", "text": "answer 2"}]},
			{"role": "user", "content": [{"type": "text", "text": "last question"}]}
		]
	}`
	r.Expect(0, []byte(want))
	complete(t, m, &model.Request{SystemPrompt: "You are a test.", Messages: msgs})
	require.Equal(t, 1, r.Count())
	assert.JSONEq(t, want, string(r.Requests()[0]))
}

// The API requires every tool's input_schema; a tool that takes no input
// (schema {"type": "object"}, or none) still sends one, with empty
// properties, where the SDK would leave an empty schema out.
func TestRequest_ToolWithoutPropertiesStillSendsAnInputSchema(t *testing.T) {
	m, r := newModel(t, "text", nil)
	req := &model.Request{
		Messages: []model.Message{model.UserText("What time is it?")},
		Tools: []model.ToolSpec{
			{Name: "now", Description: "The time.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "today", Description: "The date."},
		},
	}
	want := `{
		"model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 0.2, "stream": true,
		"messages": [{"role": "user", "content": [{"type": "text", "text": "What time is it?"}]}],
		"tools": [
			{"name": "now", "description": "The time.", "input_schema": {"type": "object", "properties": {}}},
			{"name": "today", "description": "The date.", "input_schema": {"type": "object", "properties": {}}}
		]
	}`
	r.Expect(0, []byte(want))
	complete(t, m, req)
	require.Equal(t, 1, r.Count())
	assert.JSONEq(t, want, string(r.Requests()[0]))
}
