package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// A callback added through a.Hooks() after New for an event an agent never
// fires (an orchestrator's BeforeNodeCallEvent gate) is refused like one
// given in Config.Hooks: the next invocation fails with hook.ErrNotFired
// before anything runs, instead of running without the gate.
func TestHookAddedAfterNewForAnEventTheAgentNeverFiresFailsTheNextInvocation(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("ran"))})
	gateRan := make(chan struct{}, 1)
	hook.Add(a.Hooks(), func(context.Context, *multiagent.BeforeNodeCallEvent) error {
		gateRan <- struct{}{}
		return nil
	})

	res, err := a.Invoke(ctx, agent.Text("hi"))
	require.ErrorIs(t, err, hook.ErrNotFired)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "multiagent.BeforeNodeCallEvent")
	st, err := a.Status(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Messages, "the prompt was not taken")
	assert.Empty(t, gateRan)
}

// A callback added after New for an event the agent fires runs from the
// next invocation on.
func TestHookAddedAfterNewForAnAgentEventRuns(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("ran"))})
	seen := make(chan bool, 1)
	hook.Add(a.Hooks(), func(_ context.Context, ev *agent.BeforeInvocationEvent) error {
		seen <- ev.Resuming
		return nil
	})
	res, err := a.Invoke(ctx, agent.Text("hi"))
	require.NoError(t, err)
	assert.Equal(t, "ran", res.Message.Text())
	assert.False(t, <-seen)
}
