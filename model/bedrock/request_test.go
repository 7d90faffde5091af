package bedrock_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/bedrock"
	"github.com/braidhq/braid/model/modeltest"
)

// userRequest is the suite's first request: a system prompt, one question,
// the two tools.
func userRequest() *model.Request {
	return &model.Request{
		SystemPrompt: "You are a test.",
		Messages:     []model.Message{model.UserText("What is the weather and the time in Paris?")},
		Tools:        modeltest.Tools().Specs(),
	}
}

func fixture(t *testing.T, scenario, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", scenario, name))
	require.NoError(t, err)
	return string(raw)
}

// body decodes a request body as generic JSON.
func body(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestRequest_SendsSystemPromptMessagesAndToolSchemas(t *testing.T) {
	m, r := newReplayModel(t, "text")
	_, _, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)

	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, fixture(t, "text", "1.request.json"), string(reqs[0].Body))

	b := body(t, reqs[0].Body)
	assert.Equal(t, []any{map[string]any{"text": "You are a test."}}, b["system"], "the system prompt is one system text block")
	assert.NotContains(t, b, "inferenceConfig", "no inference settings unless configured")
	assert.NotContains(t, b, "modelId", "the model id goes in the path")
	tools := b["toolConfig"].(map[string]any)["tools"].([]any)
	require.Len(t, tools, 2)
	spec := tools[0].(map[string]any)["toolSpec"].(map[string]any)
	assert.Equal(t, "get_weather", spec["name"])
	assert.Equal(t, "The weather in a city", spec["description"])
	schema := spec["inputSchema"].(map[string]any)["json"].(map[string]any)
	assert.Equal(t, "object", schema["type"])
	assert.Equal(t, []any{"city"}, schema["required"])

	// Signed with SigV4 for bedrock in the configured region.
	auth := reqs[0].Header.Get("Authorization")
	assert.True(t, strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTESTTESTTEST/"), auth)
	assert.Contains(t, auth, "/"+testRegion+"/bedrock/aws4_request")
	assert.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
}

func TestRequest_SendsInferenceConfigWhenSet(t *testing.T) {
	m, r := newReplayModel(t, "inference_config", func(c *bedrock.Config) {
		temp := 0.2
		c.Temperature = &temp
		c.MaxTokens = 512
	})
	msg, _, err := model.Complete(context.Background(), m, userRequest())
	require.NoError(t, err)
	assert.Equal(t, "OK.", msg.Text())
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, fixture(t, "inference_config", "1.request.json"), string(reqs[0].Body))
	assert.Equal(t, map[string]any{"temperature": 0.2, "maxTokens": float64(512)}, body(t, reqs[0].Body)["inferenceConfig"])
}

func TestRequest_RoundTripSendsToolUsesThenOneMessageOfResults(t *testing.T) {
	m, r := newReplayModel(t, "round_trip")
	ctx := context.Background()
	req := userRequest()
	msg, stop, err := model.Complete(ctx, m, req)
	require.NoError(t, err)
	require.Equal(t, model.StopToolUse, stop.StopReason)
	uses := msg.ToolUses()
	require.Len(t, uses, 2)

	req.Messages = append(req.Messages, msg, model.Message{Role: model.RoleUser, Content: []model.ContentBlock{
		model.ToolResultBlock(model.TextResult(uses[0].ToolUseID, "sunny")),
		model.ToolResultBlock(model.TextResult(uses[1].ToolUseID, "noon")),
	}})
	final, stop, err := model.Complete(ctx, m, req)
	require.NoError(t, err)
	assert.Equal(t, modeltest.FinalAnswer, final.Text())
	assert.Equal(t, modeltest.FinalUsage(), stop.Usage)

	reqs := r.Requests()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, fixture(t, "round_trip", "2.request.json"), string(reqs[1].Body))
	msgs := body(t, reqs[1].Body)["messages"].([]any)
	require.Len(t, msgs, 3)
	assistant := msgs[1].(map[string]any)
	assert.Equal(t, "assistant", assistant["role"])
	var kinds []string
	for _, c := range assistant["content"].([]any) {
		for k := range c.(map[string]any) {
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"text", "toolUse", "toolUse"}, kinds)
	results := msgs[2].(map[string]any)
	assert.Equal(t, "user", results["role"])
	content := results["content"].([]any)
	require.Len(t, content, 2, "both results in one user message")
	for i, id := range []string{"call_1", "call_2"} {
		tr := content[i].(map[string]any)["toolResult"].(map[string]any)
		assert.Equal(t, id, tr["toolUseId"], "results in the order of the tool uses")
		assert.Equal(t, "success", tr["status"])
	}
}

func TestRequest_PathCarriesTheEscapedModelID(t *testing.T) {
	const arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0"
	for _, tc := range []struct{ model, path string }{
		{testModel, "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"},
		{arn, "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, r := newReplayModel(t, "text", func(c *bedrock.Config) { c.Model = tc.model })
			_, _, err := model.Complete(context.Background(), m, userRequest())
			require.NoError(t, err)
			reqs := r.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.path, reqs[0].Path)
		})
	}
}

// toolResultsRequest has an error result and a result with JSON content.
func toolResultsRequest() *model.Request {
	jsonResult := model.ToolResult{ToolUseID: "call_2", Status: model.ToolSuccess, Content: []model.ToolResultContent{
		{JSON: json.RawMessage(`{"tz":"Europe/Paris","time":"12:00","dst":false}`)},
		{Text: ptr("noon")},
	}}
	return &model.Request{
		SystemPrompt: "You are a test.",
		Messages: []model.Message{
			model.UserText("What is the weather in Atlantis and the time in Paris?"),
			{Role: model.RoleAssistant, Content: []model.ContentBlock{
				model.ToolUseBlock(model.ToolUse{ToolUseID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Atlantis","id":12345678901234567890}`)}),
				model.ToolUseBlock(model.ToolUse{ToolUseID: "call_2", Name: "get_time", Input: json.RawMessage(`{"tz":"Europe/Paris"}`)}),
			}},
			{Role: model.RoleUser, Content: []model.ContentBlock{
				model.ToolResultBlock(model.ErrorResult("call_1", "unknown city: Atlantis")),
				model.ToolResultBlock(jsonResult),
			}},
		},
		Tools: modeltest.Tools().Specs(),
	}
}

func ptr[T any](v T) *T { return &v }

func TestRequest_ToolResultsCarryErrorStatusAndJSONContent(t *testing.T) {
	m, r := newReplayModel(t, "tool_results")
	_, _, err := model.Complete(context.Background(), m, toolResultsRequest())
	require.NoError(t, err)
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, fixture(t, "tool_results", "1.request.json"), string(reqs[0].Body))
	assert.Contains(t, string(reqs[0].Body), `"status":"error"`)
	assert.Contains(t, string(reqs[0].Body), `"json":{`)
	assert.Contains(t, string(reqs[0].Body), `12345678901234567890`, "tool input numbers are sent exactly")
}

func TestRequest_ToolResultStatusOnlyForClaudeUnlessConfigured(t *testing.T) {
	for _, tc := range []struct {
		name     string
		model    string
		status   *bool
		scenario string
	}{
		{"claude includes it", testModel, nil, "tool_results"},
		{"nova omits it", "amazon.nova-pro-v1:0", nil, "tool_results_no_status"},
		{"nova configured to include it", "amazon.nova-pro-v1:0", ptr(true), "tool_results"},
		{"claude configured to omit it", testModel, ptr(false), "tool_results_no_status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := newReplayModel(t, tc.scenario, func(c *bedrock.Config) {
				c.Model = tc.model
				c.IncludeToolResultStatus = tc.status
			})
			_, _, err := model.Complete(context.Background(), m, toolResultsRequest())
			require.NoError(t, err)
			reqs := r.Requests()
			require.Len(t, reqs, 1)
			assert.JSONEq(t, fixture(t, tc.scenario, "1.request.json"), string(reqs[0].Body))
		})
	}
}

func TestRequest_MapsImageDocumentCachePointAndReasoningBlocks(t *testing.T) {
	other := func(s string) model.ContentBlock { return model.ContentBlock{Other: json.RawMessage(s)} }
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.Text("Describe these."),
			other(`{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}`),
			other(`{"document":{"format":"txt","name":"notes","source":{"bytes":"aGVsbG8="}}}`),
			other(`{"cachePoint":{"type":"default","ttl":"1h"}}`), // the ttl is kept
		}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			other(`{"reasoningContent":{"reasoningText":{"text":"Two attachments.","signature":"sig-1"}}}`),
			model.Text("\n\n"), // whitespace alone: not sent
			model.Text("An image and a note."),
		}},
		model.UserText("Thanks."),
	}}
	m, r := newReplayModel(t, "other_blocks")
	_, _, err := model.Complete(context.Background(), m, req)
	require.NoError(t, err)
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, fixture(t, "other_blocks", "1.request.json"), string(reqs[0].Body))
}

func TestRequest_InvalidRequestsFailBeforeSending(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *model.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "system", Content: []model.ContentBlock{model.Text("x")}}}}, `role "system"`},
		{"unsupported block", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{
			{Other: json.RawMessage(`{"video":{"format":"mp4"}}`)},
		}}}}, `"video" is not supported`},
		{"empty block", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{{}}}}}, "no content"},
		{"tool input not JSON", &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t", Name: "n", Input: json.RawMessage(`{"a":`)}),
		}}}}, "invalid JSON"},
		{"tool schema not JSON", &model.Request{Messages: []model.Message{model.UserText("x")},
			Tools: []model.ToolSpec{{Name: "n", InputSchema: json.RawMessage(`{`)}}}, `tool "n": input schema`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, r := newReplayModel(t, "text")
			_, err := collect(context.Background(), m, tc.req)
			require.ErrorIs(t, err, model.ErrBadRequest, "as every provider reports a request it cannot send")
			var pe *model.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "bedrock", pe.Provider)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, r.Requests(), "nothing is sent")
		})
	}
}

// Converse refuses a request whose messages hold toolUse or toolResult
// blocks without a toolConfig ("The toolConfig field must be defined when
// using toolUse and toolResult content blocks."): a request with such a
// history and no tools (a summary of the conversation, say) gets, as in
// both Strands SDKs, a toolConfig with one no-op tool the model is told to
// ignore.
func TestRequest_ToolHistoryWithoutToolsSendsANoopToolConfig(t *testing.T) {
	m, r := newReplayModel(t, "tool_history_without_tools")
	req := toolResultsRequest()
	req.Tools = nil
	_, _, err := model.Complete(context.Background(), m, req)
	require.NoError(t, err)
	reqs := r.Requests()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, fixture(t, "tool_history_without_tools", "1.request.json"), string(reqs[0].Body))
}
