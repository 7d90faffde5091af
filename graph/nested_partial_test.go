package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC I7, M5, M11: a nested graph whose two nodes each asked is answered
// one of them: that node finishes, and the nested graph, which keeps no
// interrupt of a finished node, still waits for the other. The outer
// graph refuses a resume that answers the finished node's question again,
// as the nested graph alone does (an unknown id, nothing changed), rather
// than routing it down where the nested graph would refuse it and fail
// the run; the other answer then finishes the run.
func TestGraphNesting_AnAnswerToAFinishedNestedNodeIsRejected(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	inner := graph.NewBuilder().AddNode("a", toolAgent(r, "a", "ask", "qa")).AddNode("b", toolAgent(r, "b", "ask", "qb"))
	g := build(t, graph.NewBuilder().AddNode("in", inner.AsNode(graph.Config{})), graph.Config{ID: "top"})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	var qa, qb string
	for _, in := range res.Interrupts {
		if strings.HasPrefix(in.ID, "top/in/a/") {
			qa = in.ID
		} else {
			qb = in.ID
		}
	}
	require.NotEmpty(t, qa)
	require.NotEmpty(t, qb)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(qa, "1")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, qb, res.Interrupts[0].ID)
	require.Equal(t, 1, r.count("tool:a"))

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(qa, "2"), interrupt.Respond(qb, "3")))
	require.ErrorIs(t, err, interrupt.ErrUnknownID)
	assert.Contains(t, err.Error(), qa)
	assert.Equal(t, 0, r.count("tool:b"), "nothing ran")
	st, err := g.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, st.Status, "still waiting")
	require.Len(t, st.Interrupts, 1)
	assert.Equal(t, qb, st.Interrupts[0].ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(qb, "3")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:a"))
	assert.Equal(t, 1, r.count("tool:b"))
}

// xyAgent is an agent whose one tool call (t1) is held by two
// BeforeToolCall hooks, asking "x" and "y"; the x hook records the answer
// it sees under "x=<answer>", the tool its runs under "tool:<id>".
func xyAgent(r *recorder, id string) agent.Config {
	one := tool.New("one", "runs", func(context.Context, *tool.Context, struct{}) (string, error) {
		r.add("tool:" + id)
		return "ok", nil
	})
	x := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		ans, err := ev.Interrupt("x", nil)
		if err != nil {
			return err
		}
		s, _ := ans.String()
		r.add("x=" + s)
		return nil
	})
	y := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("y", nil)
		return err
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn(id + " done"), nil
		}
		return model.ToolTurn(model.Call("t1", "one", map[string]any{})), nil
	})
	return agent.Config{ID: id, Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{x, y}}
}

// SPEC I7 (last line), M11, M10: a swarm inside a graph whose agent stops
// with x and y and is answered x stays in the same interrupted state, also
// when the whole tree is rebuilt on a fresh runtime from the session
// before each resume: a
// resume that answers x again, with y, replaces x's answer, as on the
// agent alone.
func TestGraphNesting_ReansweringANestedAgentInTheSameStateUpdatesTheAnswer(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	top := func() *graph.Graph {
		sw := swarm.NewBuilder().AddAgent(xyAgent(r, "a"))
		return build(t, graph.NewBuilder().AddNode("sw", sw.AsNode(swarm.Config{})),
			graph.Config{ID: "top", Session: manager(t, st, "nested-reanswer"), System: actorstest.System(t)})
	}
	g := top()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	xi, yi := res.Interrupts[0], res.Interrupts[1]
	require.Equal(t, "x", xi.Name)
	require.NoError(t, g.Close(ctx))

	g = top()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "a")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, yi.ID, res.Interrupts[0].ID)
	require.NoError(t, g.Close(ctx))

	g = top()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "b"), interrupt.Respond(yi.ID, "c")))
	require.NoError(t, err, "x is re-answered within the same interrupted state")
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("x=a"))
	assert.Equal(t, 1, r.count("x=b"), "the x hook sees the new answer")
	assert.Equal(t, 1, r.count("tool:a"))
}
