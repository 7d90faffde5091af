// Package modeltest is the conformance suite every model.Model passes: the
// scripted model, and each provider against a local server that replays
// recorded exchanges. Run(t, factory) runs it.
//
// A provider's tests serve each Scenario from its own recorded exchanges
// (its wire format), with the contents fixed below, so the suite can check
// the same turn from every provider; what a provider sends (its request
// bodies) is for the provider's own tests to assert.
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// Scenario names a sequence of exchanges the model's API answers, in order.
// A scenario of one exchange answers every request the same way.
type Scenario string

// Scenarios and what each must contain.
const (
	// Text answers TextAnswer (in one or more deltas), stop end_turn,
	// usage TextUsage.
	Text Scenario = "text"
	// TwoTools answers ToolsPreamble, then the two tool uses of ToolCalls
	// (their arguments streamed in several fragments where the API streams
	// them), stop tool_use, usage ToolsUsage.
	TwoTools Scenario = "two_tools"
	// RoundTrip answers TwoTools, then (to the request that carries both tool
	// results) FinalAnswer with stop end_turn and usage FinalUsage.
	RoundTrip Scenario = "round_trip"
	// Slow sends a first text delta ("Thinking") and then nothing until the
	// caller goes away.
	Slow Scenario = "slow"
	// RetryThenText fails the first attempt with a retryable error (HTTP 503,
	// or the API's throttling error) and answers Text to the retry.
	RetryThenText Scenario = "retry_then_text"
	// ErrAuth, ErrUnknownModel, ErrRateLimit (on every attempt, retries
	// included), ErrContextWindow and ErrServer (on every attempt) answer
	// with the API's error for that case.
	ErrAuth          Scenario = "err_auth"
	ErrUnknownModel  Scenario = "err_unknown_model"
	ErrRateLimit     Scenario = "err_rate_limit"
	ErrContextWindow Scenario = "err_context_window"
	ErrServer        Scenario = "err_server"
)

// The fixed contents of the scenarios.
const (
	TextAnswer    = "Hello from the model."
	ToolsPreamble = "Let me check."
	FinalAnswer   = "It is sunny in Paris at noon."
)

// TextUsage is Text's usage.
func TextUsage() model.Usage { return model.Usage{InputTokens: 12, OutputTokens: 6, TotalTokens: 18} }

// ToolsUsage is TwoTools' usage.
func ToolsUsage() model.Usage { return model.Usage{InputTokens: 20, OutputTokens: 15, TotalTokens: 35} }

// FinalUsage is the usage of RoundTrip's second turn.
func FinalUsage() model.Usage { return model.Usage{InputTokens: 40, OutputTokens: 9, TotalTokens: 49} }

// ToolCalls returns TwoTools' tool uses (a new slice each call).
func ToolCalls() []model.ToolUse {
	return []model.ToolUse{
		{ToolUseID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
		{ToolUseID: "call_2", Name: "get_time", Input: json.RawMessage(`{"tz":"Europe/Paris"}`)},
	}
}

// Factory returns a model whose calls are answered by scenario s. It should
// configure retries with short waits, so the suite runs fast.
type Factory func(t *testing.T, s Scenario) model.Model

// Run runs the suite against the models factory makes.
func Run(t *testing.T, factory Factory) {
	t.Run("Text", func(t *testing.T) { testText(t, factory) })
	t.Run("TwoTools", func(t *testing.T) { testTwoTools(t, factory) })
	t.Run("AgentToolRoundTrip", func(t *testing.T) { testRoundTrip(t, factory, false) })
	t.Run("AgentInterruptResume", func(t *testing.T) { testRoundTrip(t, factory, true) })
	t.Run("CancelMidStream", func(t *testing.T) { testCancel(t, factory) })
	t.Run("RetryThenText", func(t *testing.T) {
		msg, stop := turn(t, factory(t, RetryThenText), userRequest())
		assert.Equal(t, TextAnswer, msg.Text())
		assert.Equal(t, model.StopEndTurn, stop.StopReason)
	})
	t.Run("Errors", func(t *testing.T) { testErrors(t, factory) })
	t.Run("ConcurrentUse", func(t *testing.T) { testConcurrent(t, factory) })
}

func userRequest() *model.Request {
	return &model.Request{
		SystemPrompt: "You are a test.",
		Messages:     []model.Message{model.UserText("What is the weather and the time in Paris?")},
		Tools:        Tools().Specs(),
	}
}

// turn streams one turn and folds it into a message.
func turn(t *testing.T, m model.Model, req *model.Request) (model.Message, model.MessageStop) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var acc model.Accumulator
	for ev, err := range m.Stream(ctx, req) {
		require.NoError(t, err)
		require.NoError(t, acc.Add(ev))
	}
	msg, stop, err := acc.Result()
	require.NoError(t, err, "the stream ends with a MessageStop")
	return msg, stop
}

func testText(t *testing.T, factory Factory) {
	msg, stop := turn(t, factory(t, Text), userRequest())
	assert.Equal(t, model.RoleAssistant, msg.Role)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, TextAnswer, msg.Text())
	assert.Equal(t, model.StopEndTurn, stop.StopReason)
	assert.Equal(t, TextUsage(), stop.Usage)
}

func testTwoTools(t *testing.T, factory Factory) {
	msg, stop := turn(t, factory(t, TwoTools), userRequest())
	require.Len(t, msg.Content, 3, "text, then two tool uses")
	require.NotNil(t, msg.Content[0].Text)
	assert.Equal(t, ToolsPreamble, *msg.Content[0].Text)
	requireToolUses(t, msg.ToolUses())
	assert.Equal(t, model.StopToolUse, stop.StopReason)
	assert.Equal(t, ToolsUsage(), stop.Usage)
}

func requireToolUses(t *testing.T, got []model.ToolUse) {
	t.Helper()
	require.Len(t, got, len(ToolCalls()))
	for i, want := range ToolCalls() {
		assert.Equal(t, want.ToolUseID, got[i].ToolUseID)
		assert.Equal(t, want.Name, got[i].Name)
		assert.JSONEq(t, string(want.Input), string(got[i].Input))
	}
}

// Tools returns get_weather and get_time, the tools of the scenarios: each
// answers a fixed text ("sunny", "noon").
func Tools() ToolSet {
	type weatherIn struct {
		City string `json:"city" jsonschema:"the city"`
	}
	type timeIn struct {
		TZ string `json:"tz" jsonschema:"an IANA time zone"`
	}
	var set ToolSet
	set.runs = map[string]*atomic.Int32{"get_weather": {}, "get_time": {}}
	set.Tools = []tool.Tool{
		tool.New("get_weather", "The weather in a city", func(ctx context.Context, tc *tool.Context, in weatherIn) (string, error) {
			set.runs["get_weather"].Add(1)
			return "sunny", nil
		}),
		tool.New("get_time", "The time in a time zone", func(ctx context.Context, tc *tool.Context, in timeIn) (string, error) {
			set.runs["get_time"].Add(1)
			return "noon", nil
		}),
	}
	return set
}

// ToolSet is the scenarios' tools, with a count of their runs.
type ToolSet struct {
	Tools []tool.Tool
	runs  map[string]*atomic.Int32
}

// Specs returns the tools' specs, as an agent sends them.
func (s ToolSet) Specs() []model.ToolSpec {
	out := make([]model.ToolSpec, len(s.Tools))
	for i, tl := range s.Tools {
		out[i] = tl.Spec()
	}
	return out
}

// Runs returns how many times the named tool ran.
func (s ToolSet) Runs(name string) int { return int(s.runs[name].Load()) }

// counting counts a model's calls.
type counting struct {
	model.Model
	calls atomic.Int32
}

func (c *counting) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	c.calls.Add(1)
	return c.Model.Stream(ctx, req)
}

// testRoundTrip runs RoundTrip through an agent; with interrupt, a hook asks
// before get_time, so the agent stops after the first model call, and the
// resume runs get_time and sends both results without calling the model
// again first (SPEC A7).
func testRoundTrip(t *testing.T, factory Factory, withInterrupt bool) {
	ctx := context.Background()
	tools := Tools()
	m := &counting{Model: factory(t, RoundTrip)}
	cfg := agent.Config{Model: m, SystemPrompt: "You are a test.", Tools: tools.Tools}
	if withInterrupt {
		cfg.Hooks = []hook.Provider{hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
			if ev.ToolUse.Name != "get_time" {
				return nil
			}
			answer, err := ev.Interrupt("approve-time", ev.ToolUse.InputMap())
			if err != nil {
				return err
			}
			if s, _ := answer.String(); s != "y" {
				ev.CancelTool("denied")
			}
			return nil
		})}
	}
	a, err := agent.New(context.Background(), cfg)
	require.NoError(t, err)
	defer a.Close(ctx)

	res, err := a.Invoke(ctx, agent.Text("What is the weather and the time in Paris?"))
	require.NoError(t, err)
	if withInterrupt {
		require.Equal(t, agent.StopInterrupt, res.StopReason)
		require.Len(t, res.Interrupts, 1)
		assert.Equal(t, int32(1), m.calls.Load(), "one model call before the interrupt")
		assert.Equal(t, 1, tools.Runs("get_weather"), "the other tool ran to completion")
		assert.Equal(t, 0, tools.Runs("get_time"))
		res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
		require.NoError(t, err)
	}
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, FinalAnswer, res.Message.Text())
	assert.Equal(t, int32(2), m.calls.Load())
	assert.Equal(t, 1, tools.Runs("get_weather"), "not run again on resume")
	assert.Equal(t, 1, tools.Runs("get_time"))

	snap, err := a.Snapshot(ctx)
	require.NoError(t, err)
	hist := snap.Messages
	require.Len(t, hist, 4, "user, assistant tool uses, user tool results, assistant answer")
	requireToolUses(t, hist[1].ToolUses())
	results := hist[2].ToolResults()
	require.Len(t, results, 2)
	assert.Equal(t, "call_1", results[0].ToolUseID)
	assert.Equal(t, "sunny", results[0].Text())
	assert.Equal(t, "call_2", results[1].ToolUseID)
	assert.Equal(t, "noon", results[1].Text())
	assert.Equal(t, FinalAnswer, hist[3].Text())
}

func testCancel(t *testing.T, factory Factory) {
	m := factory(t, Slow)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var last error
		first := true
		for ev, err := range m.Stream(ctx, userRequest()) {
			if err != nil {
				last = err
				break
			}
			if first {
				first = false
				if td, ok := ev.(*model.TextDelta); !ok || td.Text == "" {
					last = errors.New("the first event is not a text delta")
					break
				}
				cancel()
			}
			if _, ok := ev.(*model.MessageStop); ok {
				last = errors.New("the stream ended normally after the cancel")
			}
		}
		done <- last
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after its context was cancelled")
	}
}

func testErrors(t *testing.T, factory Factory) {
	for _, tc := range []struct {
		s    Scenario
		kind error
	}{
		{ErrAuth, model.ErrAuth},
		{ErrUnknownModel, model.ErrUnknownModel},
		{ErrRateLimit, model.ErrRateLimited},
		{ErrContextWindow, model.ErrContextWindow},
		{ErrServer, model.ErrServer},
	} {
		t.Run(string(tc.s), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var got error
			for _, err := range factory(t, tc.s).Stream(ctx, userRequest()) {
				if err != nil {
					got = err
					break
				}
			}
			require.Error(t, got)
			assert.ErrorIs(t, got, tc.kind)
			var pe *model.ProviderError
			require.True(t, errors.As(got, &pe), "%T: %v", got, got)
			assert.NotEmpty(t, pe.Provider)
			assert.Contains(t, got.Error(), pe.Provider)
		})
	}
}

func testConcurrent(t *testing.T, factory Factory) {
	m := factory(t, Text)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acc model.Accumulator
			for ev, err := range m.Stream(context.Background(), userRequest()) {
				if err != nil {
					errs <- err
					return
				}
				if err := acc.Add(ev); err != nil {
					errs <- err
					return
				}
			}
			msg, _, err := acc.Result()
			if err == nil && msg.Text() != TextAnswer {
				err = errors.New("got " + msg.Text())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
