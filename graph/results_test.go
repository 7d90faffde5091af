package graph_test

import (
	"context"
	"testing"
	"time"

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
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// askingUsageAgent is a node whose agent calls the tool lookup, which
// interrupts, using 10 tokens in and 20 out, and once the answer is in
// answers "asked", using 100 in and 200 out.
func askingUsageAgent() actors.Node {
	ask := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		// The answered run takes time the clock can see: a coarse clock
		// (Windows') reads the same across a short run.
		for t0 := time.Now(); !time.Now().After(t0); {
		}
		s, _ := ans.String()
		return s, nil
	})
	return agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.Turn{Text: "asked", Usage: model.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}}, nil
		}
		return model.Turn{Calls: []model.ToolCall{model.Call("t1", "lookup", map[string]any{})},
			Usage: model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}}, nil
	})})
}

// SPEC M7, M10: a run's usage is the sum of its nodes' model usage, across
// a resume in a fresh runtime, and so is a node's over its runs; a run's
// execution time is summed across invocations, the time between them
// left out.
func TestGraph_UsageAndDurationAreSummedAcrossResumes(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	a := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		return model.Turn{Text: "a done", Usage: model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}, nil
	})})
	asker := askingUsageAgent()
	b := graph.NewBuilder().AddNode("a", a).AddNode("ask", asker).AddEdge("a", "ask")
	g := build(t, b, graph.Config{Session: manager(t, st, "s")})

	start := time.Now()
	first, err := g.Invoke(ctx, agent.Text("go"))
	wall1 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	assert.Equal(t, model.Usage{InputTokens: 11, OutputTokens: 22, TotalTokens: 33}, first.Usage)
	assert.Equal(t, first.Usage, first.InvocationUsage, "a fresh run's first invocation")
	assert.Equal(t, model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}, first.Node("ask").Usage)
	firstAsk := first.Node("ask").Duration

	// Between the invocations the graph is closed and another is built
	// (a fresh runtime loads the run): that time is not the run's.
	require.NoError(t, g.Close(ctx))
	g = build(t, b, graph.Config{Session: manager(t, st, "s"), System: actorstest.System(t)})
	start = time.Now()
	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	wall2 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	assert.Equal(t, model.Usage{InputTokens: 111, OutputTokens: 222, TotalTokens: 333}, final.Usage)
	assert.Equal(t, model.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}, final.InvocationUsage, "the resume's own")
	assert.Equal(t, model.Usage{InputTokens: 110, OutputTokens: 220, TotalTokens: 330}, final.Node("ask").Usage)
	assert.Equal(t, model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}, final.Node("a").Usage)

	assert.Greater(t, final.Node("ask").Duration, firstAsk, "the node's second run adds to its time")
	assert.GreaterOrEqual(t, final.Duration, first.Duration+final.Node("ask").Duration-firstAsk, "summed across invocations")
	assert.LessOrEqual(t, final.Duration, wall1+wall2, "the wait is not counted")
}

// SPEC M7, M11: a nested graph's node reports the usage of each of its
// runs, not the nested run's total so far: across a resume, the nested
// node's usage and the outer run's are the nested agent's, counted once.
func TestGraph_NestedUsageIsCountedOnceAcrossAResume(t *testing.T) {
	ctx := context.Background()
	asker := askingUsageAgent()
	inner := graph.NewBuilder().AddNode("ask", asker)
	g := build(t, graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{})), graph.Config{})
	first, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	assert.Equal(t, model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}, first.Usage)

	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	want := model.Usage{InputTokens: 110, OutputTokens: 220, TotalTokens: 330}
	assert.Equal(t, want, final.Node("inner").Usage)
	assert.Equal(t, want, final.Usage)
	assert.Equal(t, want, final.Node("inner").Multi.Usage, "the nested run's own total")
}

// usageAgent is a node whose agent answers at once, using n tokens in and
// n out.
func usageAgent(id string, n int) actors.Node {
	return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		return model.Turn{Text: id + " done", Usage: model.Usage{InputTokens: n, OutputTokens: n, TotalTokens: 2 * n}}, nil
	})})
}

// SPEC M7, M10, M11: a graph with a nested graph (a → b → c using 10, 100
// and 1000 tokens, b gated), cut off by a crash after each of its saves
// and carried on by a fresh runtime, ends with the outer run's usage equal
// to the nested run's, every token counted once: a nested node reports
// each call's usage, and a call that carries on a cut-off one counts from
// where that one began (saved with the nested run).
func TestGraph_NestedUsageIsCountedOnceAcrossCrashes(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	cs := &copyingStore{Store: memory.New(), session: "crash"}
	mk := func() *graph.Builder {
		inner := graph.NewBuilder().AddNode("a", usageAgent("a", 10)).AddNode("b", usageAgent("b", 100)).
			AddNode("c", usageAgent("c", 1000)).AddEdge("a", "b").AddEdge("b", "c")
		return graph.NewBuilder().AddNode("mid", inner.AsNode(graph.Config{Hooks: []hook.Provider{gate(r, "b")}}))
	}
	want := model.Usage{InputTokens: 1110, OutputTokens: 1110, TotalTokens: 2220}
	g := build(t, mk(), graph.Config{ID: "top", Session: manager(t, cs, "crash")})
	res := finish(t, g)
	require.Equal(t, want, res.Usage)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(0)
	require.Greater(t, len(copies), 5)
	for i, exp := range copies {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		g := build(t, mk(), graph.Config{ID: "top", Session: manager(t, st, "crash"), System: actorstest.System(t)})
		f := finish(t, g)
		assert.Equal(t, want, f.Node("mid").Multi.Usage, "save %d: the nested run's own", i)
		assert.Equal(t, want, f.Usage, "save %d", i)
		assert.Equal(t, want, f.Node("mid").Usage, "save %d", i)
		require.NoError(t, g.Close(ctx))
	}
}
