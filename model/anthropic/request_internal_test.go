package anthropic

import (
	"encoding/json"
	"testing"

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
