package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
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

// SPEC I7, S5, R2: a prompt message, or an initial history, that the
// session could not load back (a role other than user or assistant, a
// block of no kind, a tool use without an id) is refused with a typed
// error before anything changes, as the protobuf form and SetMessages
// refuse it. Before, it was appended and saved, and every later agent on
// the session failed to load it (a *DamageError), or the save failed with
// "message 0 is not JSON-encodable".
func TestInvoke_I7_APromptTheSessionCouldNotLoadBackIsRefusedBeforeAnythingChanges(t *testing.T) {
	ctx := context.Background()
	bad := map[string]model.Message{
		"system role":           {Role: "system", Content: []model.ContentBlock{model.Text("be brief")}},
		"block of no kind":      {Role: model.RoleUser, Content: []model.ContentBlock{{}}},
		"tool use without id":   {Role: model.RoleAssistant, Content: []model.ContentBlock{{ToolUse: &model.ToolUse{Name: "x"}}}},
		"result without status": {Role: model.RoleUser, Content: []model.ContentBlock{{ToolResult: &model.ToolResult{ToolUseID: "t1"}}}},
	}
	for name, m := range bad {
		t.Run(name, func(t *testing.T) {
			store := memory.New()
			sm, err := persistence.NewSessionManager(store, "bad")
			require.NoError(t, err)
			mod := model.Scripted(model.TextTurn("ok"), model.TextTurn("ok"))
			a := newAgent(t, agent.Config{Model: mod, Session: sm, System: actorstest.System(t)})
			_, err = a.Invoke(ctx, agent.Messages(m))
			require.ErrorIs(t, err, agent.ErrBadInput)
			assert.Contains(t, err.Error(), "prompt message 0")
			assert.Zero(t, mod.Calls(), "the model is not called")
			assert.Empty(t, agenttest.Messages(t, a))
			require.NoError(t, a.Close(ctx))

			again := newAgent(t, agent.Config{Model: mod, Session: sm, System: actorstest.System(t)})
			res, err := again.Invoke(ctx, agent.Text("hi"))
			require.NoError(t, err, "the session loads")
			assert.Equal(t, "ok", res.Message.Text())

			_, err = agent.New(ctx, agent.Config{Model: mod, Messages: []model.Message{m}})
			require.ErrorIs(t, err, agent.ErrConfig, "nor is it taken as the initial history")
			assert.Contains(t, err.Error(), "Messages: message 0")
		})
	}
}

// SPEC A13, S5, R2: a tool result the session could not load back (a
// content block of neither text nor JSON, JSON that is empty or not JSON)
// becomes an error result naming the tool, and the loop goes on; a result
// an AfterToolCall hook sets that has no status fails the invocation with
// ErrBadInput. Before, both were saved into the history, and every later
// agent on the session failed to load it (a *DamageError), or the save
// failed with "not JSON-encodable".
func TestToolResult_A13_AResultTheSessionCouldNotLoadBackIsNotSaved(t *testing.T) {
	ctx := context.Background()
	raw := func(content ...model.ToolResultContent) tool.Tool {
		return &tool.Raw{ToolSpec: model.ToolSpec{Name: "odd", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, *tool.Context, json.RawMessage) ([]model.ToolResultContent, error) {
				return content, nil
			}}
	}
	// run invokes an agent with tool tl and returns its result and the
	// history a new agent loads from its session.
	run := func(t *testing.T, tl tool.Tool, hooks ...hook.Provider) ([]model.Message, *agent.Result, error) {
		t.Helper()
		sm, err := persistence.NewSessionManager(memory.New(), "odd")
		require.NoError(t, err)
		a := newAgent(t, agent.Config{Session: sm, System: actorstest.System(t), Tools: []tool.Tool{tl}, Hooks: hooks,
			Model: toolThenText("done", model.Call("t1", "odd", map[string]any{}))})
		res, err := a.Invoke(ctx, agent.Text("go"))
		require.NoError(t, a.Close(ctx))
		again := newAgent(t, agent.Config{Session: sm, System: actorstest.System(t), Model: model.Scripted(model.TextTurn("ok"))})
		msgs := agenttest.Messages(t, again)
		requireValidHistory(t, msgs)
		return msgs, res, err
	}
	for name, c := range map[string]model.ToolResultContent{
		"neither text nor json": {},
		"json that is not json": {JSON: json.RawMessage(`{"a":`)},
		"empty json":            {JSON: json.RawMessage{}},
		"json not in utf-8":     {JSON: json.RawMessage("\"y\xff\"")},
	} {
		t.Run(name, func(t *testing.T) {
			msgs, res, err := run(t, raw(c))
			require.NoError(t, err)
			assert.Equal(t, agent.StopEndTurn, res.StopReason, "the loop goes on")
			require.Len(t, msgs, 4)
			results := msgs[2].ToolResults()
			require.Len(t, results, 1)
			assert.Equal(t, model.ToolError, results[0].Status)
			assert.Contains(t, results[0].Text(), "tool odd returned an invalid result")
		})
	}
	t.Run("SetResult without a status", func(t *testing.T) {
		text := "replaced"
		set := hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error {
			ev.SetResult(model.ToolResult{Content: []model.ToolResultContent{{Text: &text}}})
			return nil
		})
		msgs, _, err := run(t, raw(model.ToolResultContent{Text: &text}), set)
		require.ErrorIs(t, err, agent.ErrBadInput)
		assert.Contains(t, err.Error(), "SetResult")
		assert.Empty(t, msgs, "the failed invocation took its prompt back")
	})
}

// SPEC A11: the key/value state holds JSON only, and JSON text is UTF-8:
// a json.RawMessage value, or a key, that is not UTF-8 is an error at Set
// (SetState, or a hook's or tool's State().Set) and changes nothing; the
// agent and its session go on. Before, the value was taken, and every
// later save of the agent failed ("damaged session data"), so that every
// invocation failed until the agent was built again.
func TestState_A11_AValueOrKeyThatIsNotUTF8IsRefusedAtSet(t *testing.T) {
	ctx := context.Background()
	sm, err := persistence.NewSessionManager(memory.New(), "utf8")
	require.NoError(t, err)
	bad := json.RawMessage("\"y\xff\"")
	var toolErr error
	setter := tool.New("setter", "sets state", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		toolErr = tc.State.Set("k", bad)
		return "set", nil
	})
	a := newAgent(t, agent.Config{Session: sm, System: actorstest.System(t), Tools: []tool.Tool{setter},
		Model: toolThenText("done", model.Call("t1", "setter", nil))})

	require.ErrorIs(t, a.SetState(ctx, "k", bad), agent.ErrBadInput)
	require.ErrorIs(t, a.SetState(ctx, "k\xff", 1), agent.ErrBadInput)
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err, "the agent's saves go on")
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	require.Error(t, toolErr, "a tool's Set is refused too")
	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	assert.Empty(t, snap.State)
}

// SPEC A3, I7: tool results in a prompt must answer the tool uses just
// before them (the history's last message, or the prompt's own assistant
// message), each once, in order; a prompt whose results answer nothing is
// refused before anything changes, since every provider refuses such a
// history, and would refuse every later call with it.
func TestInvoke_A3_APromptWhoseToolResultsAnswerNoToolUseIsRefused(t *testing.T) {
	ctx := context.Background()
	use := model.Message{Role: model.RoleAssistant, Content: []model.ContentBlock{model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "lookup", Input: []byte(`{}`)})}}
	result := func(id string) model.Message {
		return model.Message{Role: model.RoleUser, Content: []model.ContentBlock{model.ToolResultBlock(model.TextResult(id, "found"))}}
	}
	for name, prompt := range map[string][]model.Message{
		"a result alone":               {result("t1")},
		"a result of another tool use": {use, result("t2")},
		"a result before its tool use": {result("t1"), use},
	} {
		t.Run(name, func(t *testing.T) {
			mod := model.Scripted(model.TextTurn("ok"))
			a := newAgent(t, agent.Config{Model: mod, System: actorstest.System(t)})
			_, err := a.Invoke(ctx, agent.Messages(prompt...))
			require.ErrorIs(t, err, agent.ErrBadInput)
			assert.Contains(t, err.Error(), "do not answer the tool uses")
			assert.Zero(t, mod.Calls(), "the model is not called")
			assert.Empty(t, agenttest.Messages(t, a))
		})
	}
	mod := model.Scripted(model.TextTurn("ok"))
	a := newAgent(t, agent.Config{Model: mod, System: actorstest.System(t)})
	res, err := a.Invoke(ctx, agent.Messages(use, result("t1")))
	require.NoError(t, err, "a result that answers the prompt's own tool use")
	assert.Equal(t, "ok", res.Message.Text())
}
