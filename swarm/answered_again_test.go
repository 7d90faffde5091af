package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC I7, M5: a node's agent asks, is answered, runs the tool and asks
// again in its next cycle. Its first interrupt is then over (the agent
// no longer holds it), so a resume that answers it again is rejected as
// an unknown id with nothing changed: the swarm still waits for the
// second answer, runs nothing, and that answer then finishes the run.
func TestSwarm_AnAnswerToAnInterruptTheAgentHasMovedPastIsRejected(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	ask := tool.New("ask", "asks", func(ctx context.Context, tc *tool.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		ans, err := tc.Interrupt(in.Q, nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		r.add("ask:" + in.Q + "=" + s)
		return "got " + s, nil
	})
	m := model.Scripted(
		model.ToolTurn(model.Call("t1", "ask", map[string]any{"q": "first"})),
		model.ToolTurn(model.Call("t2", "ask", map[string]any{"q": "second"})),
		model.TextTurn("a done"))
	s := build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{ask}}), swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	first := res.Interrupts[0].ID
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(first, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	second := res.Interrupts[0].ID
	require.NotEqual(t, first, second)
	calls := m.Calls()

	_, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(first, "z")))
	require.ErrorIs(t, err, interrupt.ErrUnknownID)
	assert.Contains(t, err.Error(), first)
	assert.Equal(t, calls, m.Calls(), "nothing ran")
	st, err := s.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, st.Status, "still waiting")
	require.Len(t, st.Interrupts, 1)
	assert.Equal(t, second, st.Interrupts[0].ID)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(second, "w")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "a done", res.Text())
	assert.Equal(t, []string{"ask:first=x", "ask:second=w"}, r.events())
}

// SPEC I8, M4, M5: a node's agent whose model gives its tool uses the
// same id in two cycles (as models that number their calls per turn do)
// raises the same interrupt id again once the first was answered and
// used. The agent waits for a new answer, so the run lists it as
// unanswered, and the answer given to it then is the one its tool gets.
func TestSwarm_AnInterruptIDRaisedAgainAfterItsAnswerWasUsedIsAskedAgain(t *testing.T) {
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
	m := model.Scripted(
		model.ToolTurn(model.Call("call_0", "ask", map[string]any{})),
		model.ToolTurn(model.Call("call_0", "ask", map[string]any{})),
		model.TextTurn("a done"))
	s := build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{ask}}), swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(id, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1, "the agent waits for a new answer")
	assert.Equal(t, id, res.Interrupts[0].ID)
	st, err := s.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Interrupts, 1)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(id, "w")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"ask=x", "ask=w"}, r.events())
}

// SPEC I7 (last line), I6: a node's agent that stops with two interrupts
// and is answered one of them stays in the same interrupted state; a
// resume that answers the first again, with the second, replaces its
// answer, as it does on the agent alone.
func TestSwarm_ReansweringWithinTheSameInterruptedStateUpdatesTheAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	one := tool.New("one", "runs", func(context.Context, *tool.Context, struct{}) (string, error) {
		r.add("one ran")
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
	m := model.Scripted(model.ToolTurn(model.Call("t1", "one", map[string]any{})), model.TextTurn("a done"))
	s := build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{one},
		Hooks: []hook.Provider{x, y}}), swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	xi, yi := res.Interrupts[0], res.Interrupts[1]
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "a")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "y is still unanswered")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, yi.ID, res.Interrupts[0].ID)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "b"), interrupt.Respond(yi.ID, "c")))
	require.NoError(t, err, "re-answering x within the same interrupted state is allowed")
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"x=a", "x=b", "one ran"}, r.events(), "the x hook sees the new answer")
}
