package swarm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC M7, M10, S6: a swarm a → b where a's first turn calls a tool and
// hands off, each model call using one token each way, cut off by a crash
// after any of its saves and carried on in a fresh runtime, ends with the
// uncrashed run's usage, per node and in all: a call made before the
// crash whose turn was saved is counted once, neither twice nor never.
func TestSwarmCrash_UsageOfANodeRunCutOffByACrashIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	one := model.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}
	mk := func() *swarm.Builder {
		work := tool.New("work", "works", func(context.Context, *tool.Context, struct{}) (string, error) { return "worked", nil })
		a := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			last, _ := req.LastMessage()
			if len(last.ToolResults()) > 0 {
				return model.Turn{Text: "a done", Usage: one}, nil
			}
			return model.Turn{Calls: []model.ToolCall{model.Call("w1", "work", map[string]any{}),
				model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "go on"})}, Usage: one}, nil
		})
		b := model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.Turn{Text: "b done", Usage: one}, nil })
		return swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: a, Tools: []tool.Tool{work}}).
			AddAgent(agent.Config{ID: "b", Model: b})
	}
	cs := &copyingStore{Store: memory.New()}
	s := build(t, mk(), swarm.Config{Session: manager(t, cs, "crash")})
	res := finishSwarm(t, s)
	want := model.Usage{InputTokens: 3, OutputTokens: 3, TotalTokens: 6}
	require.Equal(t, want, res.Usage)
	require.NoError(t, s.Close(ctx))
	cs.mu.Lock()
	copies := cs.copies
	cs.mu.Unlock()
	for i, exp := range copies {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		s2 := build(t, mk(), swarm.Config{Session: manager(t, st, "crash"), System: actorstest.System(t)})
		final := finishSwarm(t, s2)
		label := fmt.Sprintf("crash after save %d of %d", i+1, len(copies))
		assert.Equal(t, want, final.Usage, label)
		assert.Equal(t, res.Node("a").Usage, final.Node("a").Usage, "%s: node a", label)
		require.NoError(t, s2.Close(ctx))
	}
}
