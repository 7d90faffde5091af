package model_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
)

// noEscape encodes v as json.Encoder does with HTML escaping off.
func noEscape(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// SPEC A3 (message shapes): messages read and write the Strands JSON shapes
// byte for byte.
func TestMessage_StrandsShapesRoundTrip(t *testing.T) {
	cases := map[string]string{
		"user text":   `{"role":"user","content":[{"text":"hi"}]}`,
		"tool use":    `{"role":"assistant","content":[{"text":"Deleting."},{"toolUse":{"toolUseId":"t1","name":"delete_files","input":{"paths":["a/b/c.txt"]}}}]}`,
		"tool result": `{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"success","content":[{"text":"done"},{"json":{"n":1,"ok":true}}]}}]}`,
		"error":       `{"role":"user","content":[{"toolResult":{"toolUseId":"t2","status":"error","content":[{"text":"Unknown tool: nosuch"}]}}]}`,
	}
	for name, wire := range cases {
		t.Run(name, func(t *testing.T) {
			var m model.Message
			require.NoError(t, json.Unmarshal([]byte(wire), &m))
			assert.Equal(t, wire, noEscape(t, m))
			b, err := json.Marshal(m)
			require.NoError(t, err)
			assert.JSONEq(t, wire, string(b))
		})
	}

	var m model.Message
	require.NoError(t, json.Unmarshal([]byte(cases["tool use"]), &m))
	assert.Equal(t, model.RoleAssistant, m.Role)
	assert.Equal(t, "Deleting.", m.Text())
	uses := m.ToolUses()
	require.Len(t, uses, 1)
	assert.Equal(t, "t1", uses[0].ToolUseID)
	assert.Equal(t, "delete_files", uses[0].Name)
	assert.Equal(t, map[string]any{"paths": []any{"a/b/c.txt"}}, uses[0].InputMap())

	require.NoError(t, json.Unmarshal([]byte(cases["tool result"]), &m))
	rs := m.ToolResults()
	require.Len(t, rs, 1)
	assert.Equal(t, model.ToolSuccess, rs[0].Status)
	assert.Equal(t, "done", rs[0].Text())
	require.Len(t, rs[0].Content, 2)
	assert.JSONEq(t, `{"n":1,"ok":true}`, string(rs[0].Content[1].JSON))
}

// SPEC A3: the constructors write the same shapes.
func TestMessage_ConstructorsWriteStrandsShapes(t *testing.T) {
	assert.Equal(t, `{"role":"user","content":[{"text":"hi"}]}`, noEscape(t, model.UserText("hi")))
	assert.Equal(t, `{"role":"assistant","content":[{"text":"yo"}]}`, noEscape(t, model.AssistantText("yo")))
	assert.Equal(t, `{"toolUseId":"t1","status":"error","content":[{"text":"no"}]}`, noEscape(t, model.ErrorResult("t1", "no")))
	assert.Equal(t, `{"toolResult":{"toolUseId":"t1","status":"success","content":[{"text":"ok"}]}}`,
		noEscape(t, model.ToolResultBlock(model.TextResult("t1", "ok"))))
	_, err := json.Marshal(model.ContentBlock{})
	assert.ErrorIs(t, err, model.ErrEmptyBlock)
}

// SPEC A3: blocks of unknown kinds are kept verbatim and written back
// byte-identical.
func TestContentBlock_UnknownKindsKeptVerbatim(t *testing.T) {
	image := `{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}`
	reasoning := `{"reasoningContent":{"reasoningText":{"text":"hmm <think>","signature":"abc"}}}`
	twoKeys := `{"text":"x","cachePoint":{"type":"default"}}`
	wire := `{"role":"assistant","content":[` + reasoning + `,{"text":"see"},` + image + `,` + twoKeys + `]}`
	var m model.Message
	require.NoError(t, json.Unmarshal([]byte(wire), &m))
	require.Len(t, m.Content, 4)
	assert.Equal(t, reasoning, string(m.Content[0].Other))
	assert.Equal(t, "reasoningContent", m.Content[0].Kind())
	assert.Equal(t, "text", m.Content[1].Kind())
	assert.Equal(t, image, string(m.Content[2].Other))
	assert.Equal(t, "image", m.Content[2].Kind())
	assert.Equal(t, twoKeys, string(m.Content[3].Other), "an object with several keys is kept whole")
	assert.Nil(t, m.Content[3].Text)
	assert.Equal(t, "see", m.Text())
	assert.Equal(t, wire, noEscape(t, m), "written back byte-identical")

	spaced := []byte(`{ "document" : { "name": "a b" } }`)
	var b model.ContentBlock
	require.NoError(t, json.Unmarshal(spaced, &b))
	assert.Equal(t, string(spaced), string(b.Other), "Other holds the bytes as given")
	out, err := b.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(spaced), string(out))

	c := m.Clone()
	c.Content[2].Other[2] = 'X'
	assert.Equal(t, image, string(m.Content[2].Other), "Clone copies Other")
}

// SPEC I1 (wire JSON, as in Strands): HTML characters are not escaped.
func TestContentBlock_HTMLNotEscaped(t *testing.T) {
	b := model.Text(`<b>"a" & 'b'</b>`)
	out, err := b.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"text":"<b>\"a\" & 'b'</b>"}`, string(out))
	tu := model.ToolUseBlock(model.ToolUse{ToolUseID: "t<1>", Name: "n", Input: json.RawMessage(`{"q":"a&b"}`)})
	out, err = tu.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"toolUse":{"toolUseId":"t<1>","name":"n","input":{"q":"a&b"}}}`, string(out))
	assert.Equal(t, `{"role":"user","content":[{"text":"<&>"}]}`, noEscape(t, model.UserText("<&>")))
}

// SPEC A3: invalid blocks are errors, not silently dropped.
func TestContentBlock_InvalidJSON(t *testing.T) {
	var b model.ContentBlock
	assert.Error(t, json.Unmarshal([]byte(`"just text"`), &b))
	assert.Error(t, json.Unmarshal([]byte(`{"text":3}`), &b))
	assert.Error(t, json.Unmarshal([]byte(`{"toolUse":"nope"}`), &b))
}

// SPEC A3: Clone is deep.
func TestMessage_CloneIsDeep(t *testing.T) {
	m := model.Message{Role: model.RoleAssistant, Content: []model.ContentBlock{
		model.Text("a"),
		model.ToolUseBlock(model.ToolUse{ToolUseID: "t1", Name: "x", Input: json.RawMessage(`{"k":1}`)}),
		model.ToolResultBlock(model.ToolResult{ToolUseID: "t1", Status: model.ToolSuccess, Content: []model.ToolResultContent{{JSON: json.RawMessage(`{"v":2}`)}}}),
	}}
	c := m.Clone()
	*c.Content[0].Text = "changed"
	c.Content[1].ToolUse.Input[1] = 'X'
	c.Content[2].ToolResult.Content[0].JSON[1] = 'X'
	assert.Equal(t, "a", m.Text())
	assert.Equal(t, `{"k":1}`, string(m.Content[1].ToolUse.Input))
	assert.Equal(t, `{"v":2}`, string(m.Content[2].ToolResult.Content[0].JSON))
}

// ---------------------------------------------------------------------------
// Accumulator

// SPEC A2 (model turn): the accumulator assembles text and tool uses from
// deltas and reports tool_use.
func TestAccumulator_TextAndTwoToolUses(t *testing.T) {
	var acc model.Accumulator
	events := []model.StreamEvent{
		&model.TextDelta{Text: "Let me "},
		&model.TextDelta{Text: "check."},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "t1", Name: "inspect_files"},
		&model.ToolInputDelta{Partial: `{"pa`},
		&model.ToolInputDelta{Partial: `ths":["a/`},
		&model.ToolInputDelta{Partial: `b.txt"]}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "t2", Name: "delete_files"},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}},
	}
	for _, ev := range events {
		require.NoError(t, acc.Add(ev))
	}
	msg, stop, err := acc.Result()
	require.NoError(t, err)
	assert.Equal(t, model.RoleAssistant, msg.Role)
	assert.Equal(t, model.StopToolUse, stop.StopReason, "tool uses make the stop tool_use")
	assert.Equal(t, 7, stop.Usage.TotalTokens)
	require.Len(t, msg.Content, 3)
	assert.Equal(t, "Let me check.", msg.Text())
	uses := msg.ToolUses()
	require.Len(t, uses, 2)
	assert.Equal(t, "t1", uses[0].ToolUseID)
	assert.Equal(t, "inspect_files", uses[0].Name)
	assert.JSONEq(t, `{"paths":["a/b.txt"]}`, string(uses[0].Input))
	assert.Equal(t, "t2", uses[1].ToolUseID)
	assert.JSONEq(t, `{}`, string(uses[1].Input), "no input deltas is an empty object")
}

// SPEC A2: a text-only turn keeps the model's stop reason; MessageStop
// closes an open block.
func TestAccumulator_TextOnlyKeepsStopReason(t *testing.T) {
	var acc model.Accumulator
	require.NoError(t, acc.Add(&model.TextDelta{Text: "partial"}))
	require.NoError(t, acc.Add(&model.MessageStop{StopReason: model.StopMaxTokens}))
	msg, stop, err := acc.Result()
	require.NoError(t, err)
	assert.Equal(t, model.StopMaxTokens, stop.StopReason)
	assert.Equal(t, "partial", msg.Text())
}

// SPEC A13 (model input): invalid tool input JSON is an error (at the
// turn's MessageStop, whose stop reason says why).
func TestAccumulator_InvalidToolInputIsError(t *testing.T) {
	var acc model.Accumulator
	require.NoError(t, acc.Add(&model.ToolUseStart{ToolUseID: "t1", Name: "x"}))
	require.NoError(t, acc.Add(&model.ToolInputDelta{Partial: `{"paths":[`}))
	require.NoError(t, acc.Add(&model.BlockStop{}))
	err := acc.Add(&model.MessageStop{StopReason: model.StopToolUse})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "t1")
	assert.Contains(t, err.Error(), "not valid JSON")
	assert.NotErrorIs(t, err, model.ErrMaxTokensInToolUse)
	_, _, err = acc.Result()
	assert.Error(t, err, "no turn after a failed MessageStop")

	var acc2 model.Accumulator
	require.NoError(t, acc2.Add(&model.ToolUseStart{ToolUseID: "t1", Name: "x"}))
	require.NoError(t, acc2.Add(&model.ToolInputDelta{Partial: `not json`}))
	assert.Error(t, acc2.Add(&model.MessageStop{StopReason: model.StopToolUse}))
}

// SPEC A9: a turn that reaches max_tokens in the middle of a tool use's
// input fails with ErrMaxTokensInToolUse, which names the cause, rather
// than as a model that wrote invalid JSON.
func TestAccumulator_MaxTokensInsideToolInputIsErrMaxTokensInToolUse(t *testing.T) {
	var acc model.Accumulator
	for _, ev := range []model.StreamEvent{
		&model.TextDelta{Text: "Writing the file."},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "t1", Name: "write_file"},
		&model.ToolInputDelta{Partial: `{"path":"a.txt","content":"lorem ip`},
		&model.BlockStop{},
	} {
		require.NoError(t, acc.Add(ev))
	}
	err := acc.Add(&model.MessageStop{StopReason: model.StopMaxTokens})
	require.ErrorIs(t, err, model.ErrMaxTokensInToolUse)
	assert.Contains(t, err.Error(), "write_file")
	assert.Contains(t, err.Error(), "t1")
}

// SPEC A2: malformed streams are errors.
func TestAccumulator_MalformedStreams(t *testing.T) {
	var acc model.Accumulator
	assert.Error(t, acc.Add(&model.ToolInputDelta{Partial: "{}"}), "input outside a tool use")
	assert.Error(t, acc.Add(&model.ToolUseStart{ToolUseID: "t1"}), "a tool use without a name")
	assert.Error(t, acc.Add(nil))
}

// SPEC A2: a stream without MessageStop is ErrIncompleteStream.
func TestAccumulator_NoMessageStopIsIncomplete(t *testing.T) {
	var acc model.Accumulator
	require.NoError(t, acc.Add(&model.TextDelta{Text: "cut off"}))
	_, _, err := acc.Result()
	assert.ErrorIs(t, err, model.ErrIncompleteStream)
	var empty model.Accumulator
	_, _, err = empty.Result()
	assert.ErrorIs(t, err, model.ErrIncompleteStream)
}

// ---------------------------------------------------------------------------
// Scripted model

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.UserText(text)}}
}

// SPEC A7 (tests count model calls): Scripted plays its turns in order,
// counts calls and fails when exhausted.
func TestScripted_PlaysTurnsInOrder(t *testing.T) {
	boom := errors.New("model down")
	m := model.Scripted(
		model.TextTurn("first"),
		model.ToolTurn(model.Call("t1", "delete_files", map[string]any{"paths": []string{"<a>"}}), model.Call("t2", "noop", nil)),
		model.Turn{Err: boom},
		model.Turn{Text: "capped", StopReason: model.StopMaxTokens, Usage: model.Usage{TotalTokens: 5}},
	)
	ctx := context.Background()
	assert.Equal(t, 4, m.Remaining())

	msg, stop, err := model.Complete(ctx, m, userReq("1"))
	require.NoError(t, err)
	assert.Equal(t, "first", msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
	assert.Equal(t, 1, m.Calls())

	msg, stop, err = model.Complete(ctx, m, userReq("2"))
	require.NoError(t, err)
	assert.Equal(t, model.StopToolUse, stop.StopReason)
	uses := msg.ToolUses()
	require.Len(t, uses, 2)
	assert.Equal(t, "t1", uses[0].ToolUseID)
	assert.Equal(t, `{"paths":["<a>"]}`, string(uses[0].Input))
	assert.Equal(t, `{}`, string(uses[1].Input))

	_, _, err = model.Complete(ctx, m, userReq("3"))
	assert.ErrorIs(t, err, boom, "Turn.Err is returned")

	msg, stop, err = model.Complete(ctx, m, userReq("4"))
	require.NoError(t, err)
	assert.Equal(t, "capped", msg.Text())
	assert.Equal(t, model.StopMaxTokens, stop.StopReason)
	assert.Equal(t, 5, stop.Usage.TotalTokens)
	assert.Equal(t, 0, m.Remaining())

	_, _, err = model.Complete(ctx, m, userReq("5"))
	assert.ErrorIs(t, err, model.ErrScriptExhausted)
	assert.Equal(t, 5, m.Calls())
}

// SPEC A12 (ctx): Scripted honours a cancelled ctx without using up a turn.
func TestScripted_HonoursCancelledCtx(t *testing.T) {
	m := model.Scripted(model.TextTurn("kept"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := model.Complete(ctx, m, userReq("x"))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, m.Remaining(), "the turn is not used up")
	msg, _, err := model.Complete(context.Background(), m, userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "kept", msg.Text())
}

// SPEC A12 (ctx): the Model contract says a stream whose ctx is cancelled
// ends with ctx.Err(); that holds for a ScriptedFunc whose ctx is cancelled
// while it computes a tool turn.
func TestScriptedFunc_CtxCancelledDuringToolTurn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		cancel()
		return model.ToolTurn(model.Call("t1", "x", nil)), nil
	})
	_, _, err := model.Complete(ctx, m, userReq("x"))
	assert.ErrorIs(t, err, context.Canceled)
}

// SPEC A12 (ctx): the same for a text turn.
func TestScriptedFunc_CtxCancelledDuringTextTurn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		cancel()
		return model.TextTurn("too late"), nil
	})
	_, _, err := model.Complete(ctx, m, userReq("x"))
	assert.ErrorIs(t, err, context.Canceled)
}

// SPEC A7 (tests): ScriptedFunc sees the request messages.
func TestScriptedFunc_SeesRequest(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, errors.New("empty")
		}
		mu.Lock()
		seen = append(seen, last.Text())
		mu.Unlock()
		return model.TextTurn("echo " + last.Text() + " / " + req.SystemPrompt), nil
	})
	req := &model.Request{SystemPrompt: "sys", Messages: []model.Message{model.UserText("one"), model.AssistantText("a"), model.UserText("two")}}
	msg, _, err := model.Complete(context.Background(), m, req)
	require.NoError(t, err)
	assert.Equal(t, "echo two / sys", msg.Text())
	_, _, err = model.Complete(context.Background(), m, &model.Request{})
	assert.EqualError(t, err, "empty")
	assert.Equal(t, []string{"two"}, seen)
	assert.Equal(t, 2, m.Calls())
	assert.Equal(t, 0, m.Remaining())
	_, ok := (*model.Request)(nil).LastMessage()
	assert.False(t, ok)
}

// SPEC A2: a scripted call whose input is not valid JSON fails the stream.
func TestScripted_InvalidRawInput(t *testing.T) {
	m := model.Scripted(model.ToolTurn(model.Call("t1", "x", json.RawMessage(`{bad`))))
	_, _, err := model.Complete(context.Background(), m, userReq("x"))
	assert.Error(t, err)
}

// SPEC A2: a consumer that stops early stops the stream.
func TestScripted_StopsWhenConsumerStops(t *testing.T) {
	m := model.Scripted(model.Turn{Text: "a", Calls: []model.ToolCall{model.Call("t1", "x", nil)}})
	n := 0
	for _, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		n++
		break
	}
	assert.Equal(t, 1, n)
}

// SPEC A9: usage adds up.
func TestUsage_Add(t *testing.T) {
	u := model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}.Add(model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30})
	assert.Equal(t, model.Usage{InputTokens: 11, OutputTokens: 22, TotalTokens: 33}, u)
}

// A turn the provider stopped with its content filter or a guardrail
// keeps its stop reason and loses its tool uses: the agent must not run a
// tool the provider blocked, nor keep a tool use no result will answer
// (SPEC A3).
func TestAccumulator_ABlockedTurnKeepsItsStopReasonAndNoToolUse(t *testing.T) {
	for _, reason := range []model.StopReason{model.StopContentFiltered, model.StopGuardrailIntervened} {
		t.Run(string(reason), func(t *testing.T) {
			var acc model.Accumulator
			for _, ev := range []model.StreamEvent{
				&model.TextDelta{Text: "I will delete them."},
				&model.BlockStop{},
				&model.ToolUseStart{ToolUseID: "t1", Name: "delete_files"},
				&model.ToolInputDelta{Partial: `{"paths":["/"]}`},
				&model.BlockStop{},
				&model.MessageStop{StopReason: reason},
			} {
				require.NoError(t, acc.Add(ev))
			}
			msg, stop, err := acc.Result()
			require.NoError(t, err)
			assert.Equal(t, reason, stop.StopReason)
			assert.Empty(t, msg.ToolUses())
			assert.Equal(t, "I will delete them.", msg.Text())
		})
	}
}

// SPEC A13 (model input): a tool input that is JSON but not an object (a
// list, a string, a number) fails the turn naming the tool, whatever the
// stop reason, as no provider could be sent that history again; null and
// an empty input are kept (as null and {}).
func TestAccumulator_ToolInputThatIsNotAnObjectFailsTheTurn(t *testing.T) {
	for _, input := range []string{`[1,2]`, ` "text" `, `42`, `true`} {
		for _, reason := range []model.StopReason{model.StopToolUse, model.StopMaxTokens} {
			var acc model.Accumulator
			require.NoError(t, acc.Add(&model.ToolUseStart{ToolUseID: "t1", Name: "x"}))
			require.NoError(t, acc.Add(&model.ToolInputDelta{Partial: input}))
			err := acc.Add(&model.MessageStop{StopReason: reason})
			require.Error(t, err, "input %s, stop %s", input, reason)
			assert.Contains(t, err.Error(), `tool "x" (t1): input is not a JSON object`)
			assert.NotErrorIs(t, err, model.ErrMaxTokensInToolUse, "a whole input was not cut off")
		}
	}
	for input, want := range map[string]string{`null`: `null`, ``: `{}`, ` {"a":1} `: `{"a":1}`} {
		var acc model.Accumulator
		require.NoError(t, acc.Add(&model.ToolUseStart{ToolUseID: "t1", Name: "x"}))
		require.NoError(t, acc.Add(&model.ToolInputDelta{Partial: input}))
		require.NoError(t, acc.Add(&model.MessageStop{StopReason: model.StopToolUse}))
		msg, _, err := acc.Result()
		require.NoError(t, err)
		require.Len(t, msg.ToolUses(), 1)
		assert.JSONEq(t, want, string(msg.ToolUses()[0].Input))
	}
}
