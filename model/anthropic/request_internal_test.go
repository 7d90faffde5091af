package anthropic

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
)

// The API refuses messages without content; a Braid history can hold one
// (an assistant turn that ended with nothing) and, once it is skipped, two
// messages of one role in a row, which are joined.
func TestParams_SkipsEmptyMessagesAndJoinsSameRole(t *testing.T) {
	m := &Model{cfg: Config{Model: "m", MaxTokens: 10}}
	p, err := m.params(&model.Request{Messages: []model.Message{
		model.UserText("first"),
		{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text("")}},
		model.UserText("second"),
		{Role: model.RoleAssistant},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text("answer")}},
	}})
	require.NoError(t, err)
	b, err := json.Marshal(p.Messages)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},
		{"role":"assistant","content":[{"type":"text","text":"answer"}]}
	]`, string(b))
}

// The API refuses a text block of whitespace alone ("text content blocks
// must contain non-whitespace text"), and a model can answer one (a "\n\n"
// before a tool use, a blank reply): kept in the history, it would fail
// every later call of the session. Such blocks are left out, in messages and
// in tool results, like empty ones.
func TestParams_LeavesOutWhitespaceOnlyText(t *testing.T) {
	m := &Model{cfg: Config{Model: "m", MaxTokens: 10}}
	p, err := m.params(&model.Request{Messages: []model.Message{
		model.UserText("first"),
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.Text("\n\n"),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "echo", Input: json.RawMessage(`{}`)}),
		}},
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.ToolResultBlock(model.TextResult("t1", "\n")),
		}},
		model.AssistantText(" \t"),
		model.UserText("second"),
	}})
	require.NoError(t, err)
	b, err := json.Marshal(p.Messages)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"first"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"echo","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"text","text":"second"}]}
	]`, string(b))
}

// A cache point before any message content marks the last tool when there
// is no system prompt, and is dropped when nothing comes before it.
func TestParams_CachePointBeforeAnyContentMarksTheLastToolOrNothing(t *testing.T) {
	m := &Model{cfg: Config{Model: "m", MaxTokens: 10}}
	cachePoint := model.ContentBlock{Other: json.RawMessage(`{"cachePoint":{"type":"default"}}`)}
	req := &model.Request{
		Tools:    []model.ToolSpec{{Name: "a"}, {Name: "b"}},
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.ContentBlock{cachePoint, model.Text("hi")}}},
	}
	p, err := m.params(req)
	require.NoError(t, err)
	require.Len(t, p.Tools, 2)
	assert.Zero(t, p.Tools[0].OfTool.CacheControl)
	assert.Equal(t, sdk.NewCacheControlEphemeralParam(), p.Tools[1].OfTool.CacheControl)
	b, err := json.Marshal(p.Messages)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`, string(b))

	req.Tools = nil
	p, err = m.params(req)
	require.NoError(t, err)
	b, err = json.Marshal(p.Messages)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`, string(b))
}

// The API refuses an error result without content ("content cannot be
// empty if `is_error` is true"); one whose content is empty, or is left
// out as whitespace, is sent with a text saying the tool gave no message.
// A success result may have none.
func TestParams_ErrorResultWithoutContentGetsAText(t *testing.T) {
	m := &Model{cfg: Config{Model: "m", MaxTokens: 10}}
	p, err := m.params(&model.Request{Messages: []model.Message{
		model.UserText("go"),
		{Role: model.RoleAssistant, Content: []model.ContentBlock{
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "a", Input: json.RawMessage(`{}`)}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t2", Name: "b", Input: json.RawMessage(`{}`)}),
			model.ToolUseBlock(model.ToolUse{ToolUseID: "t3", Name: "c", Input: json.RawMessage(`{}`)}),
		}},
		{Role: model.RoleUser, Content: []model.ContentBlock{
			model.ToolResultBlock(model.ErrorResult("t1", "")),
			model.ToolResultBlock(model.ErrorResult("t2", "\n")),
			model.ToolResultBlock(model.TextResult("t3", "")),
		}},
	}})
	require.NoError(t, err)
	b, err := json.Marshal(p.Messages[2])
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"user","content":[
		{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"The tool failed without a message."}]},
		{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":"The tool failed without a message."}]},
		{"type":"tool_result","tool_use_id":"t3"}
	]}`, string(b))
}

// SPEC A3: a tool use whose input a model answered as null is kept in the
// history (model.Accumulator keeps null as it keeps an empty input), so it
// is sent as the API takes a tool's input, an object: {} as for an empty
// input. Refused, it would fail every later call of the session.
func TestParams_SendsANullToolInputAsAnEmptyObject(t *testing.T) {
	var acc model.Accumulator
	require.NoError(t, acc.Add(&model.ToolUseStart{ToolUseID: "t1", Name: "echo"}))
	require.NoError(t, acc.Add(&model.ToolInputDelta{Partial: " null "}))
	require.NoError(t, acc.Add(&model.MessageStop{StopReason: model.StopToolUse}))
	answer, _, err := acc.Result()
	require.NoError(t, err)

	m := &Model{cfg: Config{Model: "m", MaxTokens: 10}}
	p, err := m.params(&model.Request{Messages: []model.Message{
		model.UserText("go"),
		answer,
		{Role: model.RoleUser, Content: []model.ContentBlock{model.ToolResultBlock(model.TextResult("t1", "done"))}},
	}})
	require.NoError(t, err)
	b, err := json.Marshal(p.Messages[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"echo","input":{}}]}`, string(b))
}
