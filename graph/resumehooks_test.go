package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M5, R3: a Cancel while a resume's BeforeInvocation hooks run ends
// the invocation before any node runs and does not apply the answers: the
// run is as it was, its interrupt still listed, and answering it again
// finishes the run.
func TestGraph_CancelDuringResumeHooksKeepsTheInterruptToAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	block := make(chan struct{})
	entered := make(chan struct{}, 1)
	h := hook.Func(func(ctx context.Context, ev *multiagent.BeforeMultiAgentInvocationEvent) error {
		if ev.Resuming {
			entered <- struct{}{}
			<-block
		}
		return nil
	})
	g := build(t, graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which")), graph.Config{Hooks: []hook.Provider{h}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
		assert.NoError(t, err)
		done <- res
	}()
	<-entered
	ok, err := g.Cancel(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	close(block)
	res = <-done
	assert.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, id, res.Interrupts[0].ID)
	assert.Zero(t, r.count("tool:ask"))
	go func() { <-entered }()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:ask"))
}

// SPEC M5, I7: a resume whose BeforeInvocation hook fails ends with the
// hook's error and applies nothing: the interrupt is still listed, and
// answering it again finishes the run.
func TestGraph_FailedResumeHookAppliesNoAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var failOnce = true
	h := hook.Func(func(ctx context.Context, ev *multiagent.BeforeMultiAgentInvocationEvent) error {
		if ev.Resuming && failOnce {
			failOnce = false
			return assert.AnError
		}
		return nil
	})
	g := build(t, graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which")), graph.Config{Hooks: []hook.Provider{h}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	id := res.Interrupts[0].ID
	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.ErrorIs(t, err, assert.AnError)
	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, st.Status)
	require.Len(t, st.Interrupts, 1, "the interrupt is no longer listed")
	assert.Zero(t, r.count("tool:ask"))
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:ask"))
}
