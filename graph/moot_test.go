package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// SPEC I8, M5: a node's agent given the seed's trust answer for one of two
// deletions lets the other run unasked; the graph then no longer lists
// that one's question, nor takes an answer for it: it lists what the
// node's agent still waits for.
func TestGraph_ANodesMootQuestionIsNoLongerListed(t *testing.T) {
	ctx := context.Background()
	var deletes atomic.Int32
	del := tool.New("delete_files", "deletes", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		deletes.Add(1)
		return "deleted", nil
	})
	ask := tool.New("which_day", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("day", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	trust := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		if s, _ := ev.Agent.State().GetString("approval"); s == "t" {
			return nil
		}
		ans, err := ev.Interrupt("approval", nil)
		if err != nil {
			return err
		}
		s, _ := ans.String()
		return ev.Agent.State().Set("approval", s)
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("d1", "delete_files", nil), model.Call("d2", "delete_files", nil), model.Call("q", "which_day", nil)), nil
	})
	node := agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{del, ask}, Hooks: []hook.Provider{trust}})
	g := build(t, graph.NewBuilder().AddNode("cleaner", node), graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("clean up"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 3)
	first, second := res.Interrupts[0], res.Interrupts[1]

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(first.ID, "t")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	assert.Equal(t, int32(2), deletes.Load())
	require.Len(t, res.Interrupts, 1, "only the day: %v", res.Interrupts)
	assert.Equal(t, "day", res.Interrupts[0].Name)

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(second.ID, "n")))
	require.ErrorIs(t, err, interrupt.ErrUnknownID, "the moot question takes no answer")
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "monday")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
