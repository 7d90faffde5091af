package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// SPEC M5, M8: with ResetOnRevisit, a node revisited by a back edge
// starts its agent afresh; when its tool interrupts on that revisit, the
// resume continues the revisit's run, it does not reset the agent again:
// the answer reaches the tool that asked, which runs once, and the
// revisit's history keeps its own prompt.
func TestGraph_AResetRevisitThatInterruptsResumesWithoutAnotherReset(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var runs []string // the tool's runs, with the answer it got
	act := tool.New("act", "acts, asking on the second visit", func(ctx context.Context, tc *tool.Context, in struct {
		Visit int `json:"visit"`
	}) (string, error) {
		ans := "-"
		if in.Visit == 2 {
			v, err := tc.Interrupt("ok", nil)
			if err != nil {
				return "", err
			}
			ans, _ = v.String()
		}
		mu.Lock()
		runs = append(runs, ans)
		mu.Unlock()
		return "acted", nil
	})
	visits := 0 // the model's prompts (each visit's first call)
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		mu.Lock()
		visits++
		v := visits
		mu.Unlock()
		require.Len(t, req.Messages, 1, "each visit starts afresh")
		return model.ToolTurn(model.Call("t1", "act", map[string]int{"visit": v})), nil
	})
	r := newRecorder()
	b := graph.NewBuilder().AddNode("work", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{act}})).
		AddNode("back", fn(r, "back", nil)).AddEdge("work", "back").
		AddEdge("back", "work", func(s *graph.State) bool { return s.Result("work").ExecutionCount < 2 }).
		SetEntryPoint("work").ResetOnRevisit(true)
	g := build(t, b, graph.Config{})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "the revisit asks")
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"-", "y"}, runs, "the revisit's tool got the answer, once")
	assert.Equal(t, 2, visits, "two visits: the resume did not start a third")
}
