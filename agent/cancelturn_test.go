package agent_test

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// firstHangs is a model whose first call signals calling and streams
// nothing until its context ends; later calls answer "answer".
type firstHangs struct {
	calling chan struct{}
	calls   atomic.Int32
}

func (m *firstHangs) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	if m.calls.Add(1) == 1 {
		return hangingModel{calling: m.calling}.Stream(ctx, req)
	}
	return model.Scripted(model.TextTurn("answer")).Stream(ctx, req)
}

// SPEC A3, A9: an invocation Cancel stops during its model call is over,
// not incomplete: the history does not end with its unanswered prompt
// (an assistant message says it was cancelled), and the next prompt is
// taken and answered. Before, the agent held the prompt as an incomplete
// run and refused every prompt with ErrIncompleteRun.
func TestAgent_A3_ACancelDuringTheModelCallEndsTheRunAndTheNextPromptIsTaken(t *testing.T) {
	ctx := context.Background()
	m := &firstHangs{calling: make(chan struct{})}
	a := newAgent(t, agent.Config{ID: "a", Model: m, System: actorstest.System(t)})
	done := make(chan *agent.Result, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := a.Invoke(ctx, agent.Text("first"))
		errc <- err
		done <- res
	}()
	<-m.calling
	_, err := a.Cancel(ctx)
	require.NoError(t, err)
	require.NoError(t, <-errc)
	assert.Equal(t, agent.StopCancelled, (<-done).StopReason)
	assert.Equal(t, agent.ActivityIdle, agenttest.Status(t, a).State, "a cancelled run is over")

	res, err := a.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	assert.Equal(t, "answer", res.Message.Text())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:text", "user:text", "assistant:text"}, describeAll(msgs))
}

// SPEC A3, A8, A9: an invocation Cancel stops while its tool runs ends
// with the tool's result in the history and then an assistant message, so
// the next prompt is taken. Before, the history ended with the tool
// results and every prompt was refused with ErrIncompleteRun.
func TestAgent_A3_ACancelDuringAToolEndsTheRunAndTheNextPromptIsTaken(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	var runs atomic.Int32
	fetch := tool.New("fetch", "fetches", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		runs.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if last.Text() == "second" {
			return model.TextTurn("answer"), nil
		}
		return model.ToolTurn(model.Call("t1", "fetch", map[string]any{})), nil
	})
	a := newAgent(t, agent.Config{ID: "a", Model: m, Tools: []tool.Tool{fetch}, System: actorstest.System(t)})
	errc := make(chan error, 1)
	go func() {
		res, err := a.Invoke(ctx, agent.Text("first"))
		if err == nil && res.StopReason != agent.StopCancelled {
			err = assert.AnError
		}
		errc <- err
	}()
	<-started
	_, err := a.Cancel(ctx)
	require.NoError(t, err)
	require.NoError(t, <-errc)
	assert.Equal(t, agent.ActivityIdle, agenttest.Status(t, a).State, "a cancelled run is over")

	res, err := a.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	assert.Equal(t, "answer", res.Message.Text())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text", "user:text", "assistant:text"}, describeAll(msgs))
	assert.Equal(t, int32(1), runs.Load())
}
