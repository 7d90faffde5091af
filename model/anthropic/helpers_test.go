package anthropic_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/modeltest"
)

// weatherRequest is the request of the fixtures' first exchanges (the same
// as the conformance suite's).
func weatherRequest() *model.Request {
	return &model.Request{
		SystemPrompt: "You are a test.",
		Messages:     []model.Message{model.UserText("What is the weather and the time in Paris?")},
		Tools:        modeltest.Tools().Specs(),
	}
}

// collect runs one call and returns its events and the error that ended it.
func collect(t *testing.T, m model.Model, req *model.Request) ([]model.StreamEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var events []model.StreamEvent
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// complete runs one call that must succeed and folds it into a message.
func complete(t *testing.T, m model.Model, req *model.Request) (model.Message, model.MessageStop) {
	t.Helper()
	events, err := collect(t, m, req)
	require.NoError(t, err)
	var acc model.Accumulator
	for _, ev := range events {
		require.NoError(t, acc.Add(ev))
	}
	msg, stop, err := acc.Result()
	require.NoError(t, err)
	return msg, stop
}
