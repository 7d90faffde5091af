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
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// afterToolsHangs calls fetch, then, given the tool results, hangs (once)
// until its context ends, signalling calling; later it answers.
type afterToolsHangs struct {
	calling chan struct{}
	hung    atomic.Bool
}

func (m *afterToolsHangs) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	last, _ := req.LastMessage()
	if rs := last.ToolResults(); len(rs) > 0 {
		if !m.hung.Swap(true) {
			return hangingModel{calling: m.calling}.Stream(ctx, req)
		}
		return model.Scripted(model.TextTurn("saw: "+rs[0].Text())).Stream(ctx, req)
	}
	return model.Scripted(model.ToolTurn(model.Call("t1", "fetch", map[string]any{}))).Stream(ctx, req)
}

// SPEC S6, A3, S1: a Close during the model call that follows a finished
// tool cycle leaves the run to carry on: a new agent on the session is
// Incomplete, refuses a prompt, and carried on with the empty input
// answers without running the tool again; the history stays valid.
func TestAgent_S6_CloseDuringTheModelCallAfterTheToolsIsCarriedOnWithoutRunningThemAgain(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	var runs atomic.Int32
	fetch := tool.New("fetch", "fetches", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "fetched", nil
	}, tool.AtMostOnce())
	m := &afterToolsHangs{calling: make(chan struct{})}
	mk := func() *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "s")
		require.NoError(t, err)
		a, err := agent.New(ctx, agent.Config{ID: "a", Session: sm, Model: m, Tools: []tool.Tool{fetch}, System: actorstest.System(t)})
		require.NoError(t, err)
		return a
	}
	a := mk()
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-m.calling
	require.NoError(t, a.Close(ctx))
	require.ErrorIs(t, <-errc, agent.ErrClosed)

	b := mk()
	defer b.Close(ctx)
	require.True(t, agenttest.Incomplete(t, b))
	_, err := b.Invoke(ctx, agent.Text("other"))
	require.ErrorIs(t, err, agent.ErrIncompleteRun)
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, "saw: fetched", res.Message.Text())
	assert.Equal(t, int32(1), runs.Load())
	msgs := agenttest.Messages(t, b)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
}

// SPEC S6, A3, A7: a Close while an AfterTools hook runs (the cycle's
// tools all finished) leaves the run to carry on: carried on by a new
// agent on the session, the finished tool is not run again and the model
// answers its result; the history stays valid.
func TestAgent_S6_CloseDuringAfterToolsIsCarriedOnWithoutRunningTheToolsAgain(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	var runs, hooks atomic.Int32
	fetch := tool.New("fetch", "fetches", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "fetched", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("saw: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", "fetch", map[string]any{})), nil
	})
	inHook := make(chan struct{}, 1)
	mk := func() *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "s")
		require.NoError(t, err)
		a, err := agent.New(ctx, agent.Config{ID: "a", Session: sm, Model: m, Tools: []tool.Tool{fetch}, System: actorstest.System(t),
			Hooks: []hook.Provider{hook.Func(func(ctx context.Context, ev *agent.AfterToolsEvent) error {
				if hooks.Add(1) == 1 {
					inHook <- struct{}{}
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			})}})
		require.NoError(t, err)
		return a
	}
	a := mk()
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-inHook
	require.NoError(t, a.Close(ctx))
	require.ErrorIs(t, <-errc, agent.ErrClosed)

	b := mk()
	defer b.Close(ctx)
	require.True(t, agenttest.Incomplete(t, b))
	res, err := b.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	assert.Equal(t, "saw: fetched", res.Message.Text())
	assert.Equal(t, int32(1), runs.Load(), "the finished tool is not run again")
	msgs := agenttest.Messages(t, b)
	requireValidHistory(t, msgs)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
}
