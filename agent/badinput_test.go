package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
)

// The forms ParseInput accepts are named only by ParseInput's errors: a
// state value, an invocation value, a history or a prompt message that the
// agent refuses is reported as what it is, still matching ErrBadInput.
func TestBadInputErrorsNameWhatWasRefusedNotTheParseInputForms(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("ok"))})
	const parseForms = "input must be a string"

	err := a.SetState(ctx, "k", make(chan int))
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.Contains(t, err.Error(), `agent state "k"`)
	assert.NotContains(t, err.Error(), parseForms, "SetState was given no input")

	err = a.SetState(ctx, "", 1)
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.NotContains(t, err.Error(), parseForms)

	_, err = a.Invoke(ctx, agent.Text("hi"), agent.WithValues(map[string]any{"v": make(chan int)}))
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.Contains(t, err.Error(), `invocation value "v"`)
	assert.NotContains(t, err.Error(), parseForms)

	err = a.SetMessages(ctx, []model.Message{{Role: "system", Content: []model.ContentBlock{model.Text("x")}}})
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.NotContains(t, err.Error(), parseForms, "SetMessages was given a history")

	_, err = a.Invoke(ctx, agent.Messages(model.Message{Role: model.RoleUser}))
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.NotContains(t, err.Error(), parseForms, "the prompt came as messages, not JSON")

	// ParseInput still says which forms it takes.
	_, err = agent.ParseInput([]byte(`42`))
	require.ErrorIs(t, err, agent.ErrBadInput)
	assert.Contains(t, err.Error(), "a string, a list of content blocks, a list of messages, or a list of interruptResponse blocks")
}
