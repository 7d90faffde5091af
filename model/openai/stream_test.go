package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
	"github.com/braidhq/braid/model/openai"
)

func userRequest() *model.Request {
	return &model.Request{
		SystemPrompt: "You are a test.",
		Messages:     []model.Message{model.UserText("What is the weather and the time in Paris?")},
		Tools:        modeltest.Tools().Specs(),
	}
}

// collect streams one turn and returns its events and the error it ended
// with, checking that the events fold into a message as they come.
func collect(t *testing.T, m model.Model, req *model.Request) ([]model.StreamEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var evs []model.StreamEvent
	var acc model.Accumulator
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return evs, err
		}
		require.NoError(t, acc.Add(ev), "event %d (%T) breaks the sequence", len(evs), ev)
		evs = append(evs, ev)
	}
	return evs, nil
}

// complete streams one turn and folds it.
func complete(t *testing.T, m model.Model, req *model.Request) (model.Message, model.MessageStop) {
	t.Helper()
	evs, err := collect(t, m, req)
	require.NoError(t, err)
	var acc model.Accumulator
	for _, ev := range evs {
		require.NoError(t, acc.Add(ev))
	}
	msg, stop, err := acc.Result()
	require.NoError(t, err)
	return msg, stop
}

func TestStream_TextDeltasThenBlockStopThenMessageStopWithUsage(t *testing.T) {
	evs, err := collect(t, newModel(t, newReplay(t, "text")), userRequest())
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{
		&model.TextDelta{Text: "Hello"},
		&model.TextDelta{Text: " from"},
		&model.TextDelta{Text: " the"},
		&model.TextDelta{Text: " model"},
		&model.TextDelta{Text: "."},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopEndTurn, Usage: modeltest.TextUsage()},
	}, evs)
}

func TestStream_TwoToolCallsStreamTheirArgumentFragmentsInOrder(t *testing.T) {
	evs, err := collect(t, newModel(t, newReplay(t, "two_tools")), userRequest())
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{
		&model.TextDelta{Text: "Let"},
		&model.TextDelta{Text: " me"},
		&model.TextDelta{Text: " check"},
		&model.TextDelta{Text: "."},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_1", Name: "get_weather"},
		&model.ToolInputDelta{Partial: `{"`},
		&model.ToolInputDelta{Partial: `city`},
		&model.ToolInputDelta{Partial: `":"`},
		&model.ToolInputDelta{Partial: `Paris`},
		&model.ToolInputDelta{Partial: `"}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_2", Name: "get_time"},
		&model.ToolInputDelta{Partial: `{"`},
		&model.ToolInputDelta{Partial: `tz`},
		&model.ToolInputDelta{Partial: `":"`},
		&model.ToolInputDelta{Partial: `Europe`},
		&model.ToolInputDelta{Partial: `/Paris`},
		&model.ToolInputDelta{Partial: `"}`},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopToolUse, Usage: modeltest.ToolsUsage()},
	}, evs)
}

// A server may start a call before the previous one's arguments are done,
// go back to it, and send text in between: the events stay a valid
// sequence, each call gets its own arguments, and the text comes after the
// calls.
func TestStream_TwoToolCallsInterleavedWithTextStayValid(t *testing.T) {
	r := newInline(t, sse(
		text("Checking"),
		toolStart(0, "call_1", "get_weather", `{"ci`),
		toolStart(1, "call_2", "get_time", `{"tz":`),
		text(" both"),
		toolArgs(0, `ty":"Paris"}`),
		toolArgs(1, `"Europe/Paris"}`),
		finish("tool_calls"),
		usage(20, 15),
		done,
	))
	evs, err := collect(t, newModel(t, r), userRequest())
	require.NoError(t, err)
	var acc model.Accumulator
	for _, ev := range evs {
		require.NoError(t, acc.Add(ev))
	}
	msg, stop, err := acc.Result()
	require.NoError(t, err)
	require.Len(t, msg.Content, 4, "text, two tool uses, the held text")
	assert.Equal(t, "Checking", *msg.Content[0].Text)
	uses := msg.ToolUses()
	require.Len(t, uses, 2)
	assert.Equal(t, "call_1", uses[0].ToolUseID)
	assert.JSONEq(t, `{"city":"Paris"}`, string(uses[0].Input))
	assert.Equal(t, "call_2", uses[1].ToolUseID)
	assert.JSONEq(t, `{"tz":"Europe/Paris"}`, string(uses[1].Input))
	assert.Equal(t, " both", *msg.Content[3].Text)
	assert.Equal(t, model.StopToolUse, stop.StopReason)
	assert.Equal(t, modeltest.ToolsUsage(), stop.Usage)

	// Every block is ended (BlockStop) before the next starts.
	inText, inTool := false, false
	for i, ev := range evs {
		switch ev.(type) {
		case *model.TextDelta:
			assert.False(t, inTool, "event %d: text inside a tool use", i)
			inText = true
		case *model.ToolUseStart:
			assert.False(t, inText || inTool, "event %d: a tool use starts inside another block", i)
			inTool = true
		case *model.ToolInputDelta:
			assert.True(t, inTool, "event %d: tool input outside a tool use", i)
		case *model.BlockStop:
			assert.True(t, inText || inTool, "event %d: BlockStop with no block", i)
			inText, inTool = false, false
		case *model.MessageStop:
			assert.False(t, inText || inTool, "event %d: MessageStop inside a block", i)
		}
	}
}

// Once a call's arguments are complete JSON, the next call starts at once
// (it does not wait for the finish).
func TestStream_NextToolCallStartsWhenPreviousArgumentsComplete(t *testing.T) {
	r := newInline(t, exchange{
		response: sse(toolStart(0, "call_1", "get_weather", `{"city":"Paris"}`), toolStart(1, "call_2", "get_time", "")).response,
		hold:     true,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.StreamEvent
	for ev, err := range newModel(t, r).Stream(ctx, userRequest()) {
		if err != nil {
			break
		}
		got = append(got, ev)
		if len(got) == 4 {
			cancel()
		}
	}
	require.GreaterOrEqual(t, len(got), 4)
	assert.Equal(t, []model.StreamEvent{
		&model.ToolUseStart{ToolUseID: "call_1", Name: "get_weather"},
		&model.ToolInputDelta{Partial: `{"city":"Paris"}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_2", Name: "get_time"},
	}, got[:4])
}

// Servers such as Ollama send each call whole in one chunk, and may say
// "stop" for a turn with calls.
func TestStream_WholeToolCallsInOneChunkReportToolUse(t *testing.T) {
	both := chunk(`[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[`+
		`{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},`+
		`{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"Europe/Paris\"}"}}]},"finish_reason":null}]`, "null")
	r := newInline(t, sse(both, finish("stop"), usage(5, 5), done))
	evs, err := collect(t, newModel(t, r), userRequest())
	require.NoError(t, err)
	assert.Equal(t, []model.StreamEvent{
		&model.ToolUseStart{ToolUseID: "call_a", Name: "get_weather"},
		&model.ToolInputDelta{Partial: `{"city":"Paris"}`},
		&model.BlockStop{},
		&model.ToolUseStart{ToolUseID: "call_b", Name: "get_time"},
		&model.ToolInputDelta{Partial: `{"tz":"Europe/Paris"}`},
		&model.BlockStop{},
		&model.MessageStop{StopReason: model.StopToolUse, Usage: model.Usage{InputTokens: 5, OutputTokens: 5, TotalTokens: 10}},
	}, evs)
}

// The usage chunk comes after the finish_reason chunk: the blocks end at
// the finish, the MessageStop (with the usage) at the end of the stream.
func TestStream_UsageChunkAfterFinishReasonLandsInMessageStop(t *testing.T) {
	r := newInline(t, exchange{response: sse(text("Hi"), finish("stop")).response, hold: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.StreamEvent
	for ev, err := range newModel(t, r).Stream(ctx, userRequest()) {
		if err != nil {
			break
		}
		got = append(got, ev)
		if len(got) == 2 {
			cancel() // the blocks ended without waiting for the usage
		}
	}
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hi"}, &model.BlockStop{}}, got)

	r = newInline(t, sse(text("Hi"), finish("stop"), usage(3, 1), done))
	evs, err := collect(t, newModel(t, r), userRequest())
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, &model.MessageStop{StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}}, evs[len(evs)-1])
}

// A server that ignores include_usage ends the turn with zero usage.
func TestStream_NoUsageChunkGivesZeroUsage(t *testing.T) {
	msg, stop := complete(t, newModel(t, newInline(t, sse(text("Hi"), finish("stop"), done))), userRequest())
	assert.Equal(t, "Hi", msg.Text())
	assert.Equal(t, model.Usage{}, stop.Usage)
}

func TestStream_FinishReasonMapsToStopReason(t *testing.T) {
	for finishReason, want := range map[string]model.StopReason{
		"stop":           model.StopEndTurn,
		"length":         model.StopMaxTokens,
		"content_filter": model.StopContentFiltered,
		"something_new":  model.StopEndTurn,
		"tool_calls":     model.StopEndTurn, // without any call: not a tool round
	} {
		t.Run(finishReason, func(t *testing.T) {
			_, stop := complete(t, newModel(t, newInline(t, sse(text("x"), finish(finishReason), done))), userRequest())
			assert.Equal(t, want, stop.StopReason)
		})
	}
}

// A turn cut off by max_tokens (finish_reason length) in the middle of a
// tool call's arguments fails with model.ErrMaxTokensInToolUse, not as
// arguments the model got wrong.
func TestStream_LengthInsideToolArgumentsIsErrMaxTokensInToolUse(t *testing.T) {
	r := newInline(t, sse(text("Writing."), toolStart(0, "call_1", "write_file", `{"content":"lorem ip`), finish("length"), usage(3, 2), done))
	m := newModel(t, r)
	_, _, err := model.Complete(context.Background(), m, userRequest())
	require.ErrorIs(t, err, model.ErrMaxTokensInToolUse)
	assert.Contains(t, err.Error(), "write_file")
}

func TestStream_RefusalIsText(t *testing.T) {
	refusal := chunk(`[{"index":0,"delta":{"refusal":"I can't help with that."},"finish_reason":null}]`, "null")
	msg, stop := complete(t, newModel(t, newInline(t, sse(refusal, finish("stop"), done))), userRequest())
	assert.Equal(t, "I can't help with that.", msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
}

func TestStream_CancelMidStreamEndsPromptlyWithContextCanceled(t *testing.T) {
	r := newReplay(t, "slow")
	m := newModel(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var got []model.StreamEvent
	var last error
	for ev, err := range m.Stream(ctx, userRequest()) {
		if err != nil {
			last = err
			break
		}
		got = append(got, ev)
		cancel()
	}
	require.Len(t, got, 1)
	assert.Equal(t, &model.TextDelta{Text: "Thinking"}, got[0])
	require.Error(t, last)
	assert.ErrorIs(t, last, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Len(t, r.requestBodies(), 1, "a cancelled stream is not retried")
}

// A consumer that cancels the context on the first event ends the stream
// with ctx.Err() even when the whole answer has arrived already (a short
// answer read in one go): the turn is not finished after the cancel
// (model.Model's contract).
func TestStream_CancelAfterTheAnswerIsBufferedEndsWithContextCanceled(t *testing.T) {
	r := newInline(t, sse(text("Hel"), text("lo"), finish("stop"), usage(3, 2), done))
	m := newModel(t, r, func(c *openai.Config) {
		c.HTTPClient = &http.Client{Transport: modeltest.BufferedTransport{Next: c.HTTPClient.Transport}}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.StreamEvent
	var last error
	for ev, err := range m.Stream(ctx, userRequest()) {
		if err != nil {
			last = err
			break
		}
		got = append(got, ev)
		cancel()
	}
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hel"}}, got, "nothing after the cancel")
	assert.ErrorIs(t, last, context.Canceled)
}

func TestStream_CancelDuringBackoffEndsWithContextCanceled(t *testing.T) {
	r := newReplay(t, "err_server")
	m := newModel(t, r, func(c *openai.Config) { c.RetryBaseDelay = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	var last error
	for _, err := range m.Stream(ctx, userRequest()) {
		last = err
	}
	assert.ErrorIs(t, last, context.Canceled)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Len(t, r.requestBodies(), 1)
}

func TestStream_CancelledContextSendsNothing(t *testing.T) {
	r := newReplay(t, "text")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var last error
	for _, err := range newModel(t, r).Stream(ctx, userRequest()) {
		last = err
	}
	assert.ErrorIs(t, last, context.Canceled)
	assert.Empty(t, r.requestBodies())
}

// A connection that breaks mid-stream is an error, not a partial turn, and
// (content having been yielded) is not retried.
func TestStream_ConnectionCutMidStreamIsIncompleteStreamError(t *testing.T) {
	r := newInline(t, exchange{response: sse(text("Hello"), text(" from")).response, cut: true})
	evs, err := collect(t, newModel(t, r), userRequest())
	require.Error(t, err)
	assert.Equal(t, []model.StreamEvent{&model.TextDelta{Text: "Hello"}, &model.TextDelta{Text: " from"}}, evs)
	assert.ErrorIs(t, err, model.ErrIncompleteStream)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, openai.ProviderName, pe.Provider)
	assert.ErrorIs(t, err, model.ErrServer, "a broken stream is a server failure, for every provider")
	assert.Len(t, r.requestBodies(), 1)
}

// A stream that ends cleanly but without a finish_reason (nor [DONE]) is
// an error too.
func TestStream_EndWithoutFinishReasonIsIncompleteStreamError(t *testing.T) {
	r := newInline(t, sse(text("Hello")))
	evs, err := collect(t, newModel(t, r), userRequest())
	assert.Len(t, evs, 1)
	assert.ErrorIs(t, err, model.ErrIncompleteStream)
	assert.Contains(t, err.Error(), "finish_reason")
	assert.Len(t, r.requestBodies(), 1)
}

// A connection that breaks before anything was yielded is retried.
func TestStream_ConnectionCutBeforeAnyEventIsRetried(t *testing.T) {
	cut := exchange{response: []byte("HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"), cut: true}
	r := newInline(t, cut, sse(text("Hi"), finish("stop"), done))
	msg, _ := complete(t, newModel(t, r), userRequest())
	assert.Equal(t, "Hi", msg.Text())
	assert.Len(t, r.requestBodies(), 2)
}

// An error event inside the stream, after content, ends it with a
// ProviderError classified by its type, without a retry.
func TestStream_ErrorEventMidStreamIsProviderError(t *testing.T) {
	r := newInline(t, sse(text("Hel"),
		`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`))
	evs, err := collect(t, newModel(t, r), userRequest())
	assert.Len(t, evs, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, model.ErrServer)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.StatusCode)
	assert.Equal(t, "server_error", pe.Code)
	assert.Contains(t, err.Error(), "The server had an error while processing your request")
	assert.Len(t, r.requestBodies(), 1)
}

// The same error before any content is retried.
func TestStream_ErrorEventBeforeContentIsRetried(t *testing.T) {
	r := newInline(t,
		sse(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`),
		sse(text("Hi"), finish("stop"), done))
	msg, _ := complete(t, newModel(t, r), userRequest())
	assert.Equal(t, "Hi", msg.Text())
	assert.Len(t, r.requestBodies(), 2)
}

func TestStream_TimeoutEndsWithDeadlineExceeded(t *testing.T) {
	r := newReplay(t, "slow")
	// 2 s leaves the replay room for its first event on a loaded machine under -race.
	m := newModel(t, r, func(c *openai.Config) { c.Timeout = 2 * time.Second })
	evs, err := collect(t, m, userRequest())
	assert.Len(t, evs, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "timeout")
}

// The consumer may stop early; the stream stops without error.
func TestStream_ConsumerBreakStopsTheStream(t *testing.T) {
	r := newReplay(t, "two_tools")
	n := 0
	for ev, err := range newModel(t, r).Stream(context.Background(), userRequest()) {
		require.NoError(t, err)
		require.NotNil(t, ev)
		n++
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
}

// A malformed tool call (no function name) is an error, not a turn.
func TestStream_ToolCallWithoutNameIsError(t *testing.T) {
	r := newInline(t, sse(toolStart(0, "call_1", "", `{}`), finish("tool_calls"), done))
	_, err := collect(t, newModel(t, r), userRequest())
	require.Error(t, err)
	var pe *model.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Contains(t, err.Error(), "no function name")
}

// The tool input of an accumulated turn is the concatenated fragments.
func TestStream_AccumulatedToolInputsAreTheConcatenatedFragments(t *testing.T) {
	msg, _ := complete(t, newModel(t, newReplay(t, "two_tools")), userRequest())
	uses := msg.ToolUses()
	require.Len(t, uses, 2)
	for i, want := range modeltest.ToolCalls() {
		assert.Equal(t, want.ToolUseID, uses[i].ToolUseID)
		assert.Equal(t, json.RawMessage(want.Input), uses[i].Input)
	}
}

// Config.Timeout bounds the whole Stream call, the waits between attempts
// included: a 429 asking for a one-second wait under a 200ms Timeout ends the
// call at the Timeout, with no second request.
func TestStream_TimeoutBoundsTheWaitsBetweenAttempts(t *testing.T) {
	limited := `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	r := newInline(t, httpError(429, limited, "Retry-After: 1"), sse(text("Hi"), finish("stop"), done))
	m := newModel(t, r, func(c *openai.Config) { c.Timeout = 200 * time.Millisecond })
	start := time.Now()
	_, err := collect(t, m, userRequest())
	assert.Less(t, time.Since(start), 900*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Error(), "timeout")
	assert.Len(t, r.requestBodies(), 1)
}

// SPEC S6: a server that sends tool calls without ids (some
// OpenAI-compatible servers do) gets ids that no other tool use of the
// session has: the agent keys a tool's idempotency key and at-most-once
// start mark by it, so ids that repeat across turns (call_0 in every
// turn) would make a new call look like one that ran already.
// A tool-use id the provider makes up for a server that sent none is one
// every provider takes back in a later request: at most 40 characters (the
// Chat Completions API's limit on tool_call ids) of letters, digits, '_'
// and '-' (the only characters Anthropic's and Bedrock's ids allow).
func TestStream_ToolCallWithoutIDGetsAnIDEveryProviderAccepts(t *testing.T) {
	m := newModel(t, newInline(t, sse(toolStart(0, "", "get_weather", `{}`), finish("tool_calls"), done)))
	msg, _ := complete(t, m, userRequest())
	uses := msg.ToolUses()
	require.Len(t, uses, 1)
	id := uses[0].ToolUseID
	assert.LessOrEqual(t, len(id), 40, "id %q", id)
	assert.Regexp(t, `^[a-zA-Z0-9_-]+$`, id)
}

func TestStream_ToolCallsWithoutIDsGetIDsUniqueAcrossTurns(t *testing.T) {
	turn := sse(toolStart(0, "", "get_weather", `{}`), toolStart(1, "", "get_time", `{}`), finish("tool_calls"), done)
	m := newModel(t, newInline(t, turn, turn))
	seen := map[string]bool{}
	for range 2 {
		msg, _ := complete(t, m, userRequest())
		uses := msg.ToolUses()
		require.Len(t, uses, 2)
		for _, u := range uses {
			require.NotEmpty(t, u.ToolUseID)
			assert.False(t, seen[u.ToolUseID], "tool use id %q given twice", u.ToolUseID)
			seen[u.ToolUseID] = true
		}
	}
}
