package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC M2, M5, I7 (DESIGN, multi-agent choices: "a new prompt starts a
// new run"): a run that ended FAILED while a node's agent waited in its
// tool is over, and its interrupt can never be answered. A new prompt
// starts a new run in which that node runs afresh (its agent asks again);
// it must not fail because the agent still holds the dead run's
// interrupt ("interrupted: resume with interrupt responses, not a
// prompt"), run after run, with no way to clear it but deleting the
// session.
func TestGraph_NewRunAfterAFailedRunRunsTheNodeWhoseAgentWasInterrupted(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var fail atomic.Bool
	fail.Store(true)
	flaky := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		if fail.Load() {
			return nil, errors.New("boom")
		}
		return []model.ContentBlock{model.Text("ok")}, nil
	})
	g := build(t, graph.NewBuilder().AddNode("asks", toolAgent(r, "asks", "lookup", "which")).AddNode("flaky", flaky), graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.Equal(t, multiagent.StatusInterrupted, res.Node("asks").Status)

	fail.Store(false)
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	asks := res.Node("asks")
	require.NotNil(t, asks)
	assert.NoError(t, asks.Err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "the new run's asks asks again")
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC M6, I7: re-answering a node's gate while the node's agent waits
// in its tool updates the answer; a "no" cancels the node, and with it
// the agent's interrupt. A new run then runs the node afresh: it must
// not fail on the cancelled run's interrupt.
func TestGraph_NewRunAfterAGateDeniedAnInterruptedNodeRunsItAfresh(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("asks", toolAgent(r, "asks", "lookup", "which")),
		graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "asks")}})
	gateID, _ := pastTheGate(t, g, "first")
	res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "n")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCancelled, res.Status)

	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the new run's gate")
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.NoError(t, res.Node("asks").Err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "the new run's agent asks again")
}

// SPEC M2, R3 (Graph.Cancel: the running nodes end CANCELLED, the run is
// CANCELLED unless a node failed or interrupted): a Cancel that reaches a
// node while its agent's tool is about to interrupt must leave the node
// and its agent agreeing. Reported CANCELLED (no interrupt to answer), the
// node must run afresh in the next run, not fail it on an interrupt its
// agent activated after the node was reported cancelled.
func TestGraph_CancelWhileANodesToolInterruptsLeavesNoHiddenInterrupt(t *testing.T) {
	ctx := context.Background()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	late := tool.New("lookup", "asks once the cancel is in", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("t1", "lookup", map[string]any{})), nil
	})
	g := build(t, graph.NewBuilder().AddNode("asks", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{late}})), graph.Config{ID: "g"})
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(ctx, agent.Text("first"))
		assert.NoError(t, err)
		done <- res
	}()
	<-entered
	ok, err := g.Cancel(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	close(release)
	res := <-done
	require.NotNil(t, res)
	if res.Status == multiagent.StatusInterrupted {
		require.Len(t, res.Interrupts, 1, "an interrupted run lists the interrupt")
		return
	}
	require.Equal(t, multiagent.StatusCancelled, res.Node("asks").Status)
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	assert.NoError(t, res.Node("asks").Err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "the new run's agent asks")
}

// flakyNode fails while fail is set and answers "ok" otherwise.
func flakyNode(fail *atomic.Bool) actors.Node {
	return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		if fail.Load() {
			return nil, errors.New("boom")
		}
		return []model.ContentBlock{model.Text("ok")}, nil
	})
}

// SPEC A3, M2, M10: the agent of a node that waited in its tool when its
// run ended FAILED gets back, in the next run, the history it had before
// that run (the dead run's prompt is taken back, in the session too),
// here in a new process that rebuilt the graph on the stored session, at
// any nesting depth: a nested graph whose node's agent waited starts a
// fresh run of its own.
func TestGraph_NewRunTakesBackWhatTheDeadRunLeftInItsNodesAgents(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	var fail atomic.Bool
	fail.Store(true)
	topology := func() *graph.Builder {
		inner := graph.NewBuilder().AddNode("deep", toolAgent(r, "deep", "lookup", "which"))
		return graph.NewBuilder().
			AddNode("asks", toolAgent(r, "asks", "lookup", "which")).
			AddNode("mid", inner.AsNode(graph.Config{})).
			AddNode("flaky", flakyNode(&fail))
	}
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)}
	}
	g := build(t, topology(), cfg())
	res, err := g.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.Equal(t, multiagent.StatusInterrupted, res.Node("asks").Status)
	require.Equal(t, multiagent.StatusInterrupted, res.Node("mid").Status)
	require.NoError(t, g.Close(ctx))

	fail.Store(false)
	g = build(t, topology(), cfg()) // a new process: a fresh System, the stored session
	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "both agents ask again: %v", res.Node("asks").Err)
	require.Len(t, res.Interrupts, 2)
	var answers []interrupt.Response
	for _, in := range res.Interrupts {
		answers = append(answers, interrupt.Respond(in.ID, "y"))
	}
	res, err = g.Invoke(ctx, agent.Resume(answers...))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:asks"), "each tool ran once, answered")
	assert.Equal(t, 1, r.count("tool:deep"))

	recs, err := st.Session(ctx, "s")
	require.NoError(t, err)
	agents := 0
	for _, rec := range recs {
		if rec.Key.Kind != persistence.KindAgent {
			continue
		}
		agents++
		id := rec.Key.ID
		var texts []string
		for _, raw := range rec.Messages {
			m, err := model.ParseMessage(raw)
			require.NoError(t, err)
			texts = append(texts, string(m.Role)+":"+m.Text())
		}
		assert.NotContains(t, strings.Join(texts, "|"), "first", "%s: the dead run's prompt is taken back: %q", id, texts)
		assert.Len(t, texts, 4, "%s: the new run's prompt, tool use, tool result and answer: %q", id, texts)
	}
	assert.Equal(t, 2, agents, "asks and mid's deep")
}
