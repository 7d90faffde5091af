package bedrock

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
)

// Converse refuses blank text blocks (empty or whitespace alone: "The text
// field in the ContentBlock object ... is blank"), messages without
// content, and two messages of one role in a row; a Braid history can hold
// all three (an assistant turn that ended with nothing or with "\n\n", a
// prompt after a failed call).
func TestInput_JoinsSameRoleMessagesAndDropsEmptyOnes(t *testing.T) {
	m := &Model{cfg: Config{Model: "m"}}
	in, err := m.input(&model.Request{Messages: []model.Message{
		model.UserText("first"),
		model.UserText("second"),
		{Role: model.RoleAssistant},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text(""), model.Text("answer")}},
		{Role: model.RoleUser, Content: []model.ContentBlock{model.Text(" \n\t")}},
		model.UserText("third"),
	}})
	require.NoError(t, err)
	require.Len(t, in.Messages, 3)
	texts := func(msg types.Message) []string {
		var out []string
		for _, c := range msg.Content {
			out = append(out, c.(*types.ContentBlockMemberText).Value)
		}
		return out
	}
	assert.Equal(t, types.ConversationRoleUser, in.Messages[0].Role)
	assert.Equal(t, []string{"first", "second"}, texts(in.Messages[0]))
	assert.Equal(t, types.ConversationRoleAssistant, in.Messages[1].Role)
	assert.Equal(t, []string{"answer"}, texts(in.Messages[1]))
	assert.Equal(t, types.ConversationRoleUser, in.Messages[2].Role)
	assert.Equal(t, []string{"third"}, texts(in.Messages[2]))
}

// A request without tools and without tool blocks has no toolConfig.
func TestInput_NoToolsAndNoToolBlocksSendNoToolConfig(t *testing.T) {
	m := &Model{cfg: Config{Model: "m"}}
	in, err := m.input(&model.Request{Messages: []model.Message{model.UserText("hi")}})
	require.NoError(t, err)
	assert.Nil(t, in.ToolConfig)
}

// A tool's input schema has "type": "object" at the top, which the models
// behind Converse require of a tool's schema, also when the tool's schema
// leaves the type out; a schema with a type is sent as it is.
func TestInput_ToolSchemaIsAnObjectAtTheTop(t *testing.T) {
	m := &Model{cfg: Config{Model: "m"}}
	in, err := m.input(&model.Request{Messages: []model.Message{model.UserText("hi")}, Tools: []model.ToolSpec{
		{Name: "untyped", InputSchema: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "typed", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		{Name: "none"},
	}})
	require.NoError(t, err)
	require.NotNil(t, in.ToolConfig)
	var got []string
	for _, tl := range in.ToolConfig.Tools {
		doc := tl.(*types.ToolMemberToolSpec).Value.InputSchema.(*types.ToolInputSchemaMemberJson).Value
		raw, err := doc.MarshalSmithyDocument()
		require.NoError(t, err)
		got = append(got, string(raw))
	}
	require.Len(t, got, 3)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, got[0])
	assert.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`, got[1])
	assert.JSONEq(t, `{"type":"object"}`, got[2])
}
