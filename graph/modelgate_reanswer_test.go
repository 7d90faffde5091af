package graph_test

import (
	"context"
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

// SPEC I7, A7, M5: a node's agent asks at its model call's gate
// (BeforeModelCall), is answered, and its model then asks for a tool that
// asks in turn: the gate has passed and the agent cleared its answer
// (its history has not grown: the tool cycle's messages are pending). A
// resume that answers the gate's question again is refused as an unknown
// id with nothing changed, as on the agent alone, rather than routed to
// the agent, whose refusal would fail the node and the run; the tool's
// answer then finishes the run.
func TestGraph_AnAnswerToAPassedModelGateIsRejected(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	ask := tool.New("ask", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("q", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		r.add("ask=" + s)
		return "got " + s, nil
	})
	gateHook := hook.Func(func(_ context.Context, ev *agent.BeforeModelCallEvent) error {
		if last, _ := ev.Request.LastMessage(); len(last.ToolResults()) > 0 {
			return nil // only the first model call is gated
		}
		ans, err := ev.Interrupt("m", nil)
		if err != nil {
			return err
		}
		s, _ := ans.String()
		r.add("m=" + s)
		return nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model")
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn("a done"), nil
		}
		return model.ToolTurn(model.Call("t1", "ask", map[string]any{})), nil
	})
	a := agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{ask}, Hooks: []hook.Provider{gateHook}})
	g := build(t, graph.NewBuilder().AddNode("a", a), graph.Config{ID: "top"})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	mi := res.Interrupts[0].ID
	require.Equal(t, "m", res.Interrupts[0].Name)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(mi, "1")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	qi := res.Interrupts[0].ID
	require.Equal(t, "q", res.Interrupts[0].Name)
	require.Equal(t, 1, r.count("model"))

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(mi, "2"), interrupt.Respond(qi, "3")))
	require.ErrorIs(t, err, interrupt.ErrUnknownID)
	assert.Contains(t, err.Error(), mi)
	assert.Equal(t, 0, r.count("ask=3"), "nothing ran")
	st, err := g.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, st.Status, "still waiting")
	require.Len(t, st.Interrupts, 1)
	assert.Equal(t, qi, st.Interrupts[0].ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(qi, "3")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("m=1"))
	assert.Equal(t, 0, r.count("m=2"))
	assert.Equal(t, 1, r.count("ask=3"))
}
