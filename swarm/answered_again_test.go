package swarm_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
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

// SPEC I7, I8, M5: a node's agent stops with two questions (tool uses c0
// and c1), is answered the first, and the second goes moot (its tool runs
// without asking again): the cycle ends, and in its next cycle the model
// gives its tool use the id c1 again, so the agent asks a question whose
// id is the moot one's. The agent has moved on and forgot the first
// answer: answering it again is refused as an unknown id with nothing
// changed, as on the agent alone (here with the swarm rebuilt on a fresh
// runtime from its session in between), and the run still waits for the
// new question, which then finishes it.
func TestSwarm_AnAnswerToAnInterruptOfAnEndedCycleIsRejectedWhenAnIDIsReused(t *testing.T) {
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
	var mu sync.Mutex // the cycle's tools run concurrently
	asked := false
	once := tool.New("once", "asks the first time only", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		mu.Lock()
		first := !asked
		asked = true
		mu.Unlock()
		if first {
			_, err := tc.Interrupt("q", nil)
			return "", err
		}
		r.add("once ran")
		return "ok", nil
	})
	m := model.Scripted(
		model.ToolTurn(model.Call("c0", "ask", map[string]any{}), model.Call("c1", "once", map[string]any{})),
		model.ToolTurn(model.Call("c1", "ask", map[string]any{})),
		model.TextTurn("a done"))
	store := sqliteStore(t)
	open := func() *swarm.Swarm {
		return build(t, swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{ask, once}}),
			swarm.Config{ID: "sw", Session: manager(t, store, "reused-id"), System: actorstest.System(t)})
	}
	s := open()

	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	first, second := res.Interrupts[0].ID, res.Interrupts[1].ID
	if strings.Contains(second, ":c0:") {
		first, second = second, first
	}
	require.Contains(t, first, ":c0:")
	require.NoError(t, s.Close(ctx))

	s = open() // a fresh runtime, from the session
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(first, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, second, res.Interrupts[0].ID, "the next cycle's question has the moot one's id")
	require.ElementsMatch(t, []string{"ask=x", "once ran"}, r.events())
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
	assert.Equal(t, "ask=w", r.events()[len(r.events())-1])
	assert.Len(t, r.events(), 3)
}
