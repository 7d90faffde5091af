package swarm_test

import (
	"context"
	"strings"
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

// The seed's rules for interrupts in a swarm: all hooks configured on the
// interrupted BeforeNodeCallEvent execute and may interrupt, a single hook
// raises several interrupts one at a time, and a single node raises
// several interrupts following the single-agent patterns.

// SPEC I4, I5, I8, M3: two BeforeNodeCall hooks on the seed's cleanup
// agent both interrupt; one of them, answered, interrupts again with
// another name. The run lists every unanswered interrupt each time, and
// the agent runs once, after the last answer.
func TestSwarm_AllGateHooksRunAndOneInterruptsAgainAfterItsAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	sequential := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		r.add("hook:sequential")
		a1, err := ev.Interrupt("first", nil)
		if err != nil {
			return err
		}
		s, _ := a1.String()
		_, err = ev.Interrupt("second", "after "+s)
		return err
	})
	other := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		r.add("hook:other")
		_, err := ev.Interrupt("other", nil)
		return err
	})
	s := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "cleanup", handoff{})), swarm.Config{Hooks: []hook.Provider{sequential, other}})

	res, err := s.Invoke(ctx, agent.Text("Clean up my resources"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	assert.Equal(t, "first", res.Interrupts[0].Name)
	assert.Equal(t, "other", res.Interrupts[1].Name)
	assert.Equal(t, 1, r.count("hook:other"), "the second hook ran after the first interrupted")
	otherID := res.Interrupts[1].ID

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "r1")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	assert.Equal(t, otherID, res.Interrupts[0].ID, "still waiting, in the order raised")
	assert.Equal(t, "second", res.Interrupts[1].Name)
	assert.JSONEq(t, `"after r1"`, string(res.Interrupts[1].Reason))
	assert.Equal(t, 0, r.count("model:cleanup"))

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[1].ID, "r2"), interrupt.Respond(otherID, "r3")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "cleanup done", res.Text())
	assert.Equal(t, 1, r.count("model:cleanup"))
}

// SPEC M4, M5, I6: a swarm node's agent raises two interrupts at once
// (two concurrent tools); answered one at a time, the agent resumes each
// time, and each tool runs once after its answer.
func TestSwarm_NodeRaisesTwoInterruptsAnsweredOneAtATime(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			var texts []string
			for _, tr := range trs {
				texts = append(texts, tr.Text())
			}
			return model.TextTurn("done: " + strings.Join(texts, "; ")), nil
		}
		r.add("model")
		return model.ToolTurn(model.Call("t1", "a", map[string]any{}), model.Call("t2", "b", map[string]any{})), nil
	})
	cfg := agent.Config{ID: "cleanup", Model: m, Tools: []tool.Tool{askTool(r, "a", "a", "qa"), askTool(r, "b", "b", "qb")}}
	s := build(t, swarm.NewBuilder().AddAgent(cfg), swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	ids := map[string]string{} // the tools raise concurrently: in either order
	for _, in := range res.Interrupts {
		ids[in.Name] = in.ID
	}
	require.Len(t, ids, 2)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(ids["qa"], "A")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, ids["qb"], res.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("tool:a"))

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(ids["qb"], "B")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "done: answer A; answer B", res.Text())
	assert.Equal(t, 1, r.count("model"), "the agent resumed, it did not start again")
	assert.Equal(t, 1, r.count("tool:a"))
	assert.Equal(t, 1, r.count("tool:b"))
}

// SPEC I7, I1, I6: while the swarm waits at a gate, an unknown id, a
// block without "response", an id answered twice and a mix of responses
// and text are each rejected with its typed error and run nothing; JSON
// null in the Strands bytes is then an answer (not "y": the seed's hook
// cancels the node).
func TestSwarm_BadResumesAreRejectedAndNullIsAnAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	s := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "cleanup", handoff{})), swarm.Config{Hooks: []hook.Provider{gate(r, "cleanup")}})
	res, err := s.Invoke(ctx, agent.Text("clean"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID

	for _, tc := range []struct {
		name, input string
		is          error
	}{
		{"unknown id", `[{"interruptResponse":{"interruptId":"nope","response":"y"}}]`, interrupt.ErrUnknownID},
		{"no response", `[{"interruptResponse":{"interruptId":"` + id + `"}}]`, interrupt.ErrMissingResponse},
		{"answered twice", `[{"interruptResponse":{"interruptId":"` + id + `","response":"y"}},{"interruptResponse":{"interruptId":"` + id + `","response":"n"}}]`, interrupt.ErrDuplicateResponse},
		{"mixed", `[{"interruptResponse":{"interruptId":"` + id + `","response":"y"}},{"text":"hi"}]`, interrupt.ErrMixedInput},
	} {
		in, err := agent.ParseInput([]byte(tc.input))
		if err == nil {
			_, err = s.Invoke(ctx, in)
		}
		assert.ErrorIs(t, err, tc.is, tc.name)
	}
	assert.Equal(t, 0, r.count("model:cleanup"))
	st, err := s.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, st.Status, "still waiting for the same answer")

	in, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"` + id + `","response":null}}]`))
	require.NoError(t, err)
	res, err = s.Invoke(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	assert.Equal(t, 0, r.count("model:cleanup"))
}

// SPEC M12, I9: a swarm's Stream yields the gate's InterruptEvent (naming
// the gated node) before the result; a consumer that stops reading there
// leaves a run that refuses a prompt and that a resume completes.
func TestSwarmStream_AConsumerThatStopsAtTheInterruptLeavesAResumableRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "go on"})).AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{ID: "sw", Hooks: []hook.Provider{gate(r, "b")}})
	var got *multiagent.InterruptEvent
	for ev, err := range s.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		if e, ok := ev.(*multiagent.InterruptEvent); ok {
			got = e
			break
		}
	}
	require.NotNil(t, got)
	assert.Equal(t, "sw/b", got.Node)
	assert.Equal(t, interrupt.SourceMultiAgentHook, got.Interrupt.Source)

	_, err := s.Invoke(ctx, agent.Text("again"))
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	res, err := s.Invoke(ctx, agent.Resume(interrupt.Respond(got.Interrupt.ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:b"))
	assert.Len(t, r.prompts("a"), 1, "a is not run again")
}
