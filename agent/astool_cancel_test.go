package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC M11, A12, R5: the outer agent is cancelled while its sub agent's
// tool runs, a tool that takes a moment to stop once its context ends.
// The call ends with the sub agent's run, as a call of any tool ends with
// the tool: when the outer agent's cancelled Invoke returns, the sub agent
// runs nothing. The next call, whose sub agent asks for approval, asks
// once and is answered: the sub agent runs once for it. Before, the
// cancelled call returned while the sub agent still ran; the next call
// marked its run where the cancelled run's prompt was, then took its own
// run for a dead call's on resume and ran it again: the question was
// asked twice, the sub agent's model called twice.
func TestAgentAsTool_M11_ACancelledCallEndsWithItsSubAgentsRun(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(memory.New(), "c")
	require.NoError(t, err)
	runs := &counter{}
	started := make(chan struct{})
	var once sync.Once
	act := tool.New("act", "acts", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(in.Paths[0])
		if in.Paths[0] != "first" {
			return "acted", nil
		}
		once.Do(func() { close(started) })
		<-ctx.Done()
		<-time.After(50 * time.Millisecond) // a tool slow to stop; nothing waits on this
		return "", ctx.Err()
	})
	subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("sub: " + rs[0].Text()), nil
		}
		runs.inc("model " + last.Text())
		return model.ToolTurn(model.Call("s1", "act", pathsIn{Paths: []string{last.Text()}})), nil
	})
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.InputMap()["paths"].([]any)[0] == "first" {
			return nil
		}
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	sub := newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm, Model: subModel,
		Tools: []tool.Tool{act}, Hooks: []hook.Provider{gate}})
	outerModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("outer: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("o1", "helper", agent.ToolInput{Prompt: last.Text()})), nil
	})
	outer := newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm, Model: outerModel,
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})

	done := make(chan *agent.Result, 1)
	go func() {
		res, err := outer.Invoke(ctx, agent.Text("first"))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	was, err := outer.Cancel(ctx)
	require.NoError(t, err)
	require.True(t, was)
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, agent.StopCancelled, res.StopReason)
	st, err := sub.Status(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, agent.ActivityRunning, st.State, "the call ended with the sub agent's run")

	res, err = outer.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	stops := answerAll(t, outer, res)
	assert.Len(t, stops, 1, "the question is asked once")
	assert.Equal(t, 1, runs.get("model second"), "the sub agent ran once for the call")
	assert.Equal(t, 1, runs.get("second"))
	snap, err := outer.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, "outer: sub: acted", snap.Messages[len(snap.Messages)-1].Text())
	subSnap, err := sub.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, subSnap.Messages)
}
