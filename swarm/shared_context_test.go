package swarm_test

// SPEC M9: the swarm's shared context.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// SPEC M9: the shared context is merged per agent: an agent that hands
// off twice with different keys shares both. a → b (a shares x) → a (a
// shares y) → c: c is told x and y, both from a.
func TestSwarm_SharedContextOfOneAgentIsMergedAcrossItsHandoffs(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var mu sync.Mutex
	calls := 0
	a := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("a done"), nil
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		h := handoff{to: "b", message: "first", context: map[string]any{"x": 1}}
		if n > 1 {
			h = handoff{to: "c", message: "second", context: map[string]any{"y": 2}}
		}
		return model.ToolTurn(model.Call(fmt.Sprintf("h-a-%d", n), swarm.HandoffTool, h.args())), nil
	})
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: a}).
		AddAgent(teamAgent(r, "b", handoff{to: "a", message: "back"})).AddAgent(teamAgent(r, "c", handoff{}))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a", "b", "a", "c"}, res.ExecutionOrder)
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], `- a: {"x":1,"y":2}`, "a's second handoff adds to what it shared")
}

// SPEC M9: every handoff call the tool answered with success shares its
// context, not only the one that wins: a's one answer hands off to b
// sharing x and k, then to c sharing y and a new k; c runs (the last call
// wins) and is told x, y and the later k.
func TestSwarm_EverySuccessfulHandoffOfARunSharesItsContext(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	a := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("a done"), nil
		}
		return model.ToolTurn(
			model.Call("h1", swarm.HandoffTool, handoff{to: "b", message: "first", context: map[string]any{"x": 1, "k": "old"}}.args()),
			model.Call("h2", swarm.HandoffTool, handoff{to: "c", message: "second", context: map[string]any{"y": 2, "k": "new"}}.args()),
		), nil
	})
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: a}).
		AddAgent(teamAgent(r, "b", handoff{})).AddAgent(teamAgent(r, "c", handoff{}))
	res, err := build(t, b, swarm.Config{}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a", "c"}, res.ExecutionOrder)
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], "Handoff message from a: second")
	assert.Contains(t, r.prompts("c")[0], `- a: {"k":"new","x":1,"y":2}`, "the first call's context is kept, the later key wins")
}
