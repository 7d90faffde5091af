package agent_test

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// crashingModel copies the session while it is called (what a process
// killed during the model call leaves) and then fails.
type crashingModel struct {
	st   persistence.Store
	copy chan<- *export.Session
}

func (m crashingModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		exp, err := export.Read(ctx, m.st, "s")
		if err != nil {
			yield(nil, err)
			return
		}
		m.copy <- exp
		yield(nil, context.Canceled)
	}
}

// SPEC A3, S1: a process killed during the model call leaves the prompt
// saved and unanswered. The agent a new process builds on the session
// holds an incomplete run: a new prompt is refused with ErrIncompleteRun
// and changes nothing (it would make two user messages in a row, which
// models refuse or misread), and the empty input carries the run on: the
// model answers the saved prompt.
func TestAgent_A3_ACrashDuringTheModelCallLeavesARunToCarryOnNotTwoPromptsInARow(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	copies := make(chan *export.Session, 1)
	sm, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	a := newAgent(t, agent.Config{ID: "a", Session: sm, Model: crashingModel{st: st, copy: copies}, System: actorstest.System(t)})
	_, err = a.Invoke(ctx, agent.Text("first"))
	require.Error(t, err)

	crashed := memory.New()
	require.NoError(t, export.Write(ctx, crashed, <-copies))
	sm2, err := persistence.NewSessionManager(crashed, "s")
	require.NoError(t, err)
	b := newAgent(t, agent.Config{ID: "a", Session: sm2, Model: model.Scripted(model.TextTurn("answer")), System: actorstest.System(t)})
	st2 := agenttest.Status(t, b)
	require.Equal(t, agent.ActivityIncomplete, st2.State)
	require.Equal(t, 1, st2.Messages, "the prompt was saved")

	_, err = b.Invoke(ctx, agent.Text("second"))
	require.ErrorIs(t, err, agent.ErrIncompleteRun)
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, b)), "the refused prompt changed nothing")

	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, "answer", res.Message.Text())
	msgs := agenttest.Messages(t, b)
	assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(msgs))
	requireValidHistory(t, msgs)
	assert.Equal(t, agent.ActivityIdle, agenttest.Status(t, b).State)
}
