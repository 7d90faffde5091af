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
