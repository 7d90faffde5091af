package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
	"github.com/braidhq/braid/model/openai"
)

func readFixture(t *testing.T, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, path...)...))
	require.NoError(t, err)
	return string(b)
}

// decode unmarshals a JSON body into a map.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	return m
}

// The text scenario's request: the model id, the system prompt as a system
// message, the user message, both tools with their JSON schemas as
// parameters, stream and stream_options.include_usage; no temperature or
// max_tokens when they are not configured.
func TestRequest_TextBodyHasSystemUserToolsAndStreamOptions(t *testing.T) {
	r := newReplay(t, "text")
	complete(t, newModel(t, r), userRequest())
	reqs := r.requestBodies()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, readFixture(t, "text", "1.request.json"), string(reqs[0]))

	body := decode(t, reqs[0])
	assert.Equal(t, testModel, body["model"])
	assert.NotContains(t, body, "temperature")
	assert.NotContains(t, body, "max_tokens")
	assert.NotContains(t, body, "max_completion_tokens")
	tools := body["tools"].([]any)
	require.Len(t, tools, 2)
	for i, spec := range modeltest.Tools().Specs() {
		fn := tools[i].(map[string]any)["function"].(map[string]any)
		assert.Equal(t, spec.Name, fn["name"])
		params, err := json.Marshal(fn["parameters"])
		require.NoError(t, err)
		assert.JSONEq(t, string(spec.InputSchema), string(params))
	}
}

func TestRequest_TemperatureAndMaxTokensAreSentWhenSet(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	temp := 0.25
	m := newModel(t, r, func(c *openai.Config) {
		c.Temperature = &temp
		c.MaxTokens = 256
	})
	complete(t, m, userRequest())
	want := decode(t, []byte(readFixture(t, "text", "1.request.json")))
	want["temperature"] = 0.25
	want["max_tokens"] = 256
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	reqs := r.requestBodies()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, string(wantJSON), string(reqs[0]))
}

// Newer OpenAI models take the limit as max_completion_tokens.
func TestRequest_MaxCompletionTokensFieldWhenAsked(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	m := newModel(t, r, func(c *openai.Config) {
		c.MaxTokens = 300
		c.MaxCompletionTokensField = true
	})
	complete(t, m, userRequest())
	want := decode(t, []byte(readFixture(t, "text", "1.request.json")))
	want["max_completion_tokens"] = 300
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	reqs := r.requestBodies()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, string(wantJSON), string(reqs[0]))
}

// A zero temperature is a setting, not "unset".
func TestRequest_ZeroTemperatureIsSent(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	zero := 0.0
	complete(t, newModel(t, r, func(c *openai.Config) { c.Temperature = &zero }), userRequest())
	body := decode(t, r.requestBodies()[0])
	assert.Contains(t, body, "temperature")
	assert.Equal(t, 0.0, body["temperature"])
}

// The second request of a round trip carries the assistant message with
// both tool calls, then one tool message per result, in order.
func TestRequest_RoundTripSecondRequestCarriesToolCallsThenResultsInOrder(t *testing.T) {
	r := newReplay(t, "round_trip")
	m := newModel(t, r)
	req := userRequest()
	msg, stop := complete(t, m, req)
	require.Equal(t, model.StopToolUse, stop.StopReason)
	req.Messages = append(req.Messages, msg, model.Message{Role: model.RoleUser, Content: []model.ContentBlock{
		model.ToolResultBlock(model.TextResult("call_1", "sunny")),
		model.ToolResultBlock(model.TextResult("call_2", "noon")),
	}})
	final, stop := complete(t, m, req)
	assert.Equal(t, modeltest.FinalAnswer, final.Text())
	assert.Equal(t, modeltest.FinalUsage(), stop.Usage)

	reqs := r.requestBodies()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, readFixture(t, "round_trip", "2.request.json"), string(reqs[1]))
	assertToolsThenResults(t, reqs[1])
}

func assertToolsThenResults(t *testing.T, body []byte) {
	t.Helper()
	msgs := decode(t, body)["messages"].([]any)
	require.Len(t, msgs, 5, "system, user, assistant, tool, tool")
	assistant := msgs[2].(map[string]any)
	assert.Equal(t, "assistant", assistant["role"])
	calls := assistant["tool_calls"].([]any)
	require.Len(t, calls, 2)
	for i, want := range modeltest.ToolCalls() {
		call := calls[i].(map[string]any)
		fn := call["function"].(map[string]any)
		assert.Equal(t, want.ToolUseID, call["id"])
		assert.Equal(t, "function", call["type"])
		assert.Equal(t, want.Name, fn["name"])
		assert.JSONEq(t, string(want.Input), fn["arguments"].(string))
	}
	for i, want := range []struct{ id, content string }{{"call_1", "sunny"}, {"call_2", "noon"}} {
		tm := msgs[3+i].(map[string]any)
		assert.Equal(t, "tool", tm["role"])
		assert.Equal(t, want.id, tm["tool_call_id"])
		assert.Equal(t, want.content, tm["content"])
	}
}

// Through an agent: the hook interrupts before get_time; the resume runs
// it and sends one request carrying both results (and no request is made
// between the interrupt and the resume).
func TestRequest_AgentResumeSendsBothToolResults(t *testing.T) {
	ctx := context.Background()
	r := newReplay(t, "round_trip")
	tools := modeltest.Tools()
	a, err := agent.New(context.Background(), agent.Config{
		Model:        newModel(t, r),
		SystemPrompt: "You are a test.",
		Tools:        tools.Tools,
		Hooks: []hook.Provider{hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
			if ev.ToolUse.Name != "get_time" {
				return nil
			}
			_, err := ev.Interrupt("approve-time", ev.ToolUse.InputMap())
			return err
		})},
	})
	require.NoError(t, err)
	defer a.Close(ctx)

	res, err := a.Invoke(ctx, agent.Text("What is the weather and the time in Paris?"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, r.requestBodies(), 1)

	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, modeltest.FinalAnswer, res.Message.Text())
	reqs := r.requestBodies()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, readFixture(t, "round_trip", "2.request.json"), string(reqs[1]))
	assertToolsThenResults(t, reqs[1])
}

// A tool result with status error is sent with "Error: " in front of its
// text; JSON content blocks are sent as compact JSON text, blocks joined by
// newlines; the user text after tool results follows the tool messages.
func TestRequest_ToolResultErrorStatusAndJSONContent(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	boom := "boom: disk full"
	note := "see the numbers"
	req := &model.Request{Messages: []model.Message{
		model.UserText("go"),
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "a", Input: json.RawMessage(`{}`)}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t2", Name: "b", Input: json.RawMessage(`{"x": 1}`)}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t3", Name: "c"}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t4", Name: "d"}),
		}},
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.ToolResultBlock(model.ToolResult{ToolUseID: "t1", Status: model.ToolError, Content: []model.ToolResultContent{{Text: &boom}}}),
			model.ToolResultBlock(model.ToolResult{ToolUseID: "t2", Status: model.ToolSuccess, Content: []model.ToolResultContent{{JSON: json.RawMessage(`{"n": 1, "ok": true}`)}}}),
			model.ToolResultBlock(model.ToolResult{ToolUseID: "t3", Status: model.ToolSuccess, Content: []model.ToolResultContent{{Text: &note}, {JSON: json.RawMessage(`[1,2]`)}}}),
			model.ToolResultBlock(model.ToolResult{ToolUseID: "t4", Status: model.ToolError}),
			model.Text("and now?"),
		}},
	}}
	complete(t, newModel(t, r), req)
	reqs := r.requestBodies()
	require.Len(t, reqs, 1)
	body := decode(t, reqs[0])
	assert.NotContains(t, body, "tools", "no tools, no tools field")
	msgs, err := json.Marshal(body["messages"])
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[
			{"id":"t1","type":"function","function":{"name":"a","arguments":"{}"}},
			{"id":"t2","type":"function","function":{"name":"b","arguments":"{\"x\": 1}"}},
			{"id":"t3","type":"function","function":{"name":"c","arguments":"{}"}},
			{"id":"t4","type":"function","function":{"name":"d","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"t1","content":"Error: boom: disk full"},
		{"role":"tool","tool_call_id":"t2","content":"{\"n\":1,\"ok\":true}"},
		{"role":"tool","tool_call_id":"t3","content":"see the numbers\n[1,2]"},
		{"role":"tool","tool_call_id":"t4","content":"Error"},
		{"role":"user","content":"and now?"}
	]`, string(msgs))
}

// Several text blocks are sent as an array of text parts; blocks Braid
// does not model are left out; an empty system prompt sends no system
// message.
func TestRequest_SeveralTextBlocksBecomeTextParts(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.ContentBlock{model.Text("one"), model.Text("two")}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text("a"), model.Text("b")}},
		model.UserText("three"),
	}}
	complete(t, newModel(t, r), req)
	msgs, err := json.Marshal(decode(t, r.requestBodies()[0])["messages"])
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},
		{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"user","content":"three"}
	]`, string(msgs))
}

// Images and pdf documents of a user message are sent as image_url and file
// parts in their place among the text parts, their bytes as data URLs;
// reasoning and cache points are left out, as the API takes neither.
func TestRequest_ImagesAndDocumentsBecomeParts(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.Text("look"),
			{Other: json.RawMessage(`{"image":{"format":"jpg","source":{"bytes":"AAEC"}}}`)},
			{Other: json.RawMessage(`{"document":{"format":"pdf","name":"spec.pdf","source":{"bytes":"JVBERg=="}}}`)},
			{Other: json.RawMessage(`{"cachePoint":{"type":"default"}}`)},
		}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"reasoningContent":{"reasoningText":{"text":"hmm"}}}`)}, model.Text("seen"),
		}},
		{Role: model.RoleUser, Content: []model.ContentBlock{{Other: json.RawMessage(`{"image":{"format":"png","source":{"bytes":"AA=="}}}`)}}},
	}}
	complete(t, newModel(t, r), req)
	msgs, err := json.Marshal(decode(t, r.requestBodies()[0])["messages"])
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[
			{"type":"text","text":"look"},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAEC"}},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERg==","filename":"spec.pdf"}}
		]},
		{"role":"assistant","content":"seen"},
		{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}
	]`, string(msgs))
}

func TestRequest_InvalidMessagesFailWithoutSending(t *testing.T) {
	for name, req := range map[string]*model.Request{
		"nil request":          nil,
		"schema not an object": {Messages: []model.Message{model.UserText("hi")}, Tools: []model.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}},
		"tool use from user": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t", Name: "x"})}}}},
		"tool result from assistant": {Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolResultBlock(model.TextResult("t", "x"))}}}},
		"unknown role": {Messages: []model.Message{{Role: "system", Content: []model.ContentBlock{model.Text("x")}}}},
		"image from assistant": {Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"png","source":{"bytes":"AA=="}}}`)}}}}},
		"image format": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"tiff","source":{"bytes":"AA=="}}}`)}}}}},
		"image by reference": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}`)}}}}},
		"document not pdf": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"document":{"format":"docx","name":"d","source":{"bytes":"AA=="}}}`)}}}}},
		"unknown block": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"video":{"format":"mp4"}}`)}}}}},
		"empty block": {Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{{}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			r := newInline(t, sse(text("ok"), finish("stop"), done))
			_, err := collect(t, newModel(t, r), req)
			require.ErrorIs(t, err, model.ErrBadRequest)
			var perr *model.ProviderError
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, openai.ProviderName, perr.Provider)
			assert.Empty(t, r.requestBodies())
		})
	}
}

// A tool's parameters have "type": "object" at the top, which the Chat
// Completions API requires ("schema must be a JSON Schema of 'type:
// "object"'"), also when the tool's schema leaves the type out; the rest
// of the schema is sent as it is, and a tool without a schema sends no
// parameters.
func TestRequest_ToolParametersAreAnObjectAtTheTop(t *testing.T) {
	r := newInline(t, sse(text("ok"), finish("stop"), done))
	req := userRequest()
	req.Tools = []model.ToolSpec{
		{Name: "untyped", Description: "d", InputSchema: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "typed", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "none", Description: "d"},
	}
	complete(t, newModel(t, r), req)
	reqs := r.requestBodies()
	require.Len(t, reqs, 1)
	tools := decode(t, reqs[0])["tools"].([]any)
	require.Len(t, tools, 3)
	params := func(i int) string {
		b, err := json.Marshal(tools[i].(map[string]any)["function"].(map[string]any)["parameters"])
		require.NoError(t, err)
		return string(b)
	}
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, params(0))
	assert.JSONEq(t, `{"type":"object","properties":{}}`, params(1))
	assert.NotContains(t, tools[2].(map[string]any)["function"], "parameters")
}
