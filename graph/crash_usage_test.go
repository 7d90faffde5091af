package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC M7, M10, S6: a graph w → ask, whose agents make a tool turn and
// then a text turn (ask's tool interrupts once, and is answered), each
// model call using one token each way, cut off by a crash after any of
// its saves and carried on in a fresh runtime, ends with the uncrashed
// run's usage, per node and in all: a model call whose turn was saved
// before the crash is counted once, neither twice nor never.
func TestGraphCrash_UsageOfANodeRunCutOffByACrashIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	one := model.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}
	node := func(id string, ask bool) agent.Config {
		work := tool.New("work", "works", func(_ context.Context, tc *tool.Context, _ struct{}) (string, error) {
			if ask {
				if _, err := tc.Interrupt("approve", nil); err != nil {
					return "", err
				}
			}
			return "worked", nil
		})
		m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			last, _ := req.LastMessage()
			if len(last.ToolResults()) > 0 {
				return model.Turn{Text: id + " done", Usage: one}, nil
			}
			return model.Turn{Calls: []model.ToolCall{model.Call("w1", "work", map[string]any{})}, Usage: one}, nil
		})
		return agent.Config{Model: m, Tools: []tool.Tool{work}}
	}
	mk := func() *graph.Builder {
		return graph.NewBuilder().AddNode("w", agentnode.Agent(node("w", false))).
			AddNode("ask", agentnode.Agent(node("ask", true))).AddEdge("w", "ask")
	}
	cs := &copyingStore{Store: memory.New(), session: "crash"}
	g := build(t, mk(), graph.Config{ID: "g", Session: manager(t, cs, "crash")})
	res := finish(t, g)
	two := one.Add(one)
	require.Equal(t, two.Add(two), res.Usage)
	require.Equal(t, two, res.Node("w").Usage)
	require.Equal(t, two, res.Node("ask").Usage)
	require.NoError(t, g.Close(ctx))

	for i, exp := range cs.since(0) {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		g2 := build(t, mk(), graph.Config{ID: "g", Session: manager(t, st, "crash"), System: actorstest.System(t)})
		final := finish(t, g2)
		label := fmt.Sprintf("crash after save %d", i+1)
		assert.Equal(t, res.Usage, final.Usage, label)
		for _, id := range []string{"w", "ask"} {
			assert.Equal(t, res.Node(id).Usage, final.Node(id).Usage, "%s: node %s", label, id)
		}
		require.NoError(t, g2.Close(ctx))
	}
}
