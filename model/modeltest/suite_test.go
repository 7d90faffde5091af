package modeltest_test

import (
	"encoding/json"
	"testing"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
)

// The scripted model, the in-memory Model, passes the suite.
func TestScripted(t *testing.T) {
	text := model.Turn{Text: modeltest.TextAnswer, Usage: modeltest.TextUsage()}
	var calls []model.ToolCall
	for _, c := range modeltest.ToolCalls() {
		calls = append(calls, model.Call(c.ToolUseID, c.Name, json.RawMessage(c.Input)))
	}
	tools := model.Turn{Text: modeltest.ToolsPreamble, Calls: calls, Usage: modeltest.ToolsUsage()}
	fail := func(kind error) model.Turn {
		return model.Turn{Err: &model.ProviderError{Provider: "scripted", Model: "script", Kind: kind}}
	}
	repeat := func(tr model.Turn) model.Model {
		return model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return tr, nil })
	}
	modeltest.Run(t, func(t *testing.T, s modeltest.Scenario) model.Model {
		switch s {
		case modeltest.Text, modeltest.RetryThenText:
			return repeat(text)
		case modeltest.TwoTools:
			return repeat(tools)
		case modeltest.RoundTrip:
			return model.Scripted(tools, model.Turn{Text: modeltest.FinalAnswer, Usage: modeltest.FinalUsage()})
		case modeltest.Slow:
			return repeat(model.Turn{Text: "Thinking"})
		case modeltest.ErrAuth:
			return repeat(fail(model.ErrAuth))
		case modeltest.ErrUnknownModel:
			return repeat(fail(model.ErrUnknownModel))
		case modeltest.ErrRateLimit:
			return repeat(fail(model.ErrRateLimited))
		case modeltest.ErrContextWindow:
			return repeat(fail(model.ErrContextWindow))
		case modeltest.ErrServer:
			return repeat(fail(model.ErrServer))
		}
		t.Fatalf("unknown scenario %s", s)
		return nil
	})
}
