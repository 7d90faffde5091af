package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// SPEC M3, M9: a BeforeNodeCall gate on the node a handoff leads to
// interrupts the run before that node runs; answered, the node runs with
// the handoff message it was handed, not the bare original task (a
// Strands TS defect).
func TestSwarm_GatedHandoffTargetRunsWithHandoffMessageOnResume(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "review the diff"})).AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{gate(r, "b")}})

	res, err := s.Invoke(ctx, agent.Text("ship it"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, interrupt.BeforeNodeCallID("b", "approval"), in.ID, "a top-level swarm's gate ids are Strands' v1 form")
	assert.Equal(t, interrupt.SourceMultiAgentHook, in.Source)
	assert.Equal(t, multiagent.StatusInterrupted, statuses(res)["b"])
	assert.Equal(t, 0, r.count("model:b"))

	_, err = s.Invoke(ctx, agent.Text("again"))
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired, "a prompt while interrupted is rejected")

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "b done", res.Text())
	assert.Len(t, r.prompts("a"), 1, "a is not run again")
	assert.Equal(t, 1, r.count("gate:b"))
	require.Len(t, r.prompts("b"), 1)
	assert.Contains(t, r.prompts("b")[0], "Handoff message from a: review the diff")
	assert.Contains(t, r.prompts("b")[0], "User request: ship it")
	assert.Contains(t, r.prompts("b")[0], "in order: a")
}

// SPEC M3: a denied gate cancels the handoff target: CANCELLED with the
// hook's message, AfterNodeCall fires for it (not for the gated run
// before), and the run ends there.
func TestSwarm_DeniedGateCancelsHandoffTarget(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	after := hook.Func(func(ctx context.Context, ev *multiagent.AfterNodeCallEvent) error {
		r.add("after:" + ev.NodeID + ":" + string(ev.Result.Status))
		return nil
	})
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "delete it"})).AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{gate(r, "b"), after}})
	res, err := s.Invoke(ctx, agent.Text("clean up"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "n")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	n := res.Node("b")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusCancelled, n.Status)
	assert.Equal(t, "b denied", n.Message)
	assert.Equal(t, 0, r.count("model:b"))
	assert.Equal(t, 1, r.count("after:a:COMPLETED"))
	assert.Equal(t, 1, r.count("after:b:CANCELLED"))
	assert.Zero(t, r.count("after:b:INTERRUPTED"), "not for the gated run")
}

// SPEC M4, M5, M9, I2: a node's agent interrupts from a tool it ran beside
// a handoff call; the run is INTERRUPTED with an id carrying the node
// path. The answer resumes that agent (its model does not start over, its
// completed handoff call does not run again), and then the swarm follows
// the handoff it made.
func TestSwarm_NodeToolInterruptResumesAgentThenFollowsItsHandoff(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "look it up"})).
		AddAgent(askingAgent(r, "b", handoff{to: "c", message: "summarise", context: map[string]any{"source": "wiki"}})).
		AddAgent(teamAgent(r, "c", handoff{}))
	s := build(t, b, swarm.Config{})

	res, err := s.Invoke(ctx, agent.Text("research"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, interrupt.SourceTool, in.Source)
	assert.Equal(t, "default_swarm/b/"+interrupt.ToolCallID("t1", "which"), in.ID, "the id carries the node path")
	assert.Equal(t, 0, r.count("model:c"), "the handoff waits until b stops")

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "blue")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "b done: Handing off to c: summarise; answer blue", res.Node("b").Text())
	assert.Equal(t, "c done", res.Text())
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 2, r.count("model:b"), "b resumed: one turn before the interrupt, one after")
	assert.Len(t, r.prompts("a"), 1)
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], "Handoff message from b: summarise")
	assert.Contains(t, r.prompts("c")[0], "in order: a → b")
	assert.Contains(t, r.prompts("c")[0], `- b: {"source":"wiki"}`)
}

// SPEC M6: on a swarm node, a gate answered, then the node's own tool
// interrupt, then its answer: the gate is not raised a second time and
// the tool's answer is not lost (the Strands TS defect re-gated here).
func TestSwarm_AnsweredGateIsNotRaisedAgainAfterNodeInterrupt(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(askingAgent(r, "a", handoff{}))
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{gate(r, "a")}})
	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, interrupt.SourceMultiAgentHook, res.Interrupts[0].Source)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, interrupt.SourceTool, res.Interrupts[0].Source)

	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "7")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("gate:a"), "no second gate")
	assert.Equal(t, "a done: answer 7", res.Node("a").Text())
}

// SPEC M6, I7: re-answering a node's gate with "no" while the node's
// agent waits in its tool cancels the node and the run. A new prompt
// starts a new run in which that agent runs afresh; it must not fail on
// the cancelled run's interrupt, which nothing can answer any more.
func TestSwarm_NewRunAfterAGateDeniedAnInterruptedAgentRunsItAfresh(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	s := build(t, swarm.NewBuilder().AddAgent(askingAgent(r, "a", handoff{})), swarm.Config{Hooks: []hook.Provider{gate(r, "a")}})
	res, err := s.Invoke(ctx, agent.Text("first"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	gateID := res.Interrupts[0].ID
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the agent's tool asks")
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "n")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCancelled, res.Status)

	res, err = s.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the new run's gate")
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.NoError(t, res.Node("a").Err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "the new run's agent asks again")
}
