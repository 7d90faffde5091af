package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// SPEC M7, M10: a run's usage is the sum of its nodes' model usage, across
// a resume in a fresh runtime, and so is a node's over its runs; a run's
// execution time is summed across invocations, the time between them
// left out.
func TestGraph_UsageAndDurationAreSummedAcrossResumes(t *testing.T) {
	ctx := context.Background()
	st := persistence.NewMemoryStore()
	a := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		return model.Turn{Text: "a done", Usage: model.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}, nil
	})})
	ask := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	asker := agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.Turn{Text: "asked", Usage: model.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}}, nil
		}
		return model.Turn{Calls: []model.ToolCall{model.Call("t1", "lookup", map[string]any{})},
			Usage: model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}}, nil
	})})
	b := graph.NewBuilder().AddNode("a", a).AddNode("ask", asker).AddEdge("a", "ask")
	g := build(t, b, graph.Config{Session: manager(t, st, "s")})

	start := time.Now()
	first, err := g.Invoke(ctx, agent.Text("go"))
	wall1 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	assert.Equal(t, model.Usage{InputTokens: 11, OutputTokens: 22, TotalTokens: 33}, first.Usage)
	assert.Equal(t, model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}, first.Node("ask").Usage)
	firstAsk := first.Node("ask").Duration

	// Between the invocations the graph is closed and another is built
	// (a fresh runtime loads the run): that time is not the run's.
	require.NoError(t, g.Close(ctx))
	g = build(t, b, graph.Config{Session: manager(t, st, "s"), System: freshSystem(t)})
	start = time.Now()
	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	wall2 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	assert.Equal(t, model.Usage{InputTokens: 111, OutputTokens: 222, TotalTokens: 333}, final.Usage)
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
	ask := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	asker := agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.Turn{Text: "asked", Usage: model.Usage{InputTokens: 100, OutputTokens: 200, TotalTokens: 300}}, nil
		}
		return model.Turn{Calls: []model.ToolCall{model.Call("t1", "lookup", map[string]any{})},
			Usage: model.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}}, nil
	})})
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
