package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// SPEC M11, I2: a swarm is a node of a graph; an interrupt raised by one
// of its agents surfaces at the top with an id carrying the whole path,
// the answer resumes that agent, the swarm carries on, and the graph
// after it.
func TestSwarmAsGraphNode_InnerInterruptSurfacesWithPathAndResumes(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	team := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "check"})).AddAgent(askingAgent(r, "b", handoff{}))
	after := teamAgent(r, "after", handoff{})
	g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).AddNode("after", agentnode.Agent(after)).
		AddEdge("team", "after").Build(ctx, graph.Config{ID: "g", System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, "g/team/b/"+interrupt.ToolCallID("t1", "which"), in.ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "ok")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, r.prompts("a"), 1, "the swarm resumed, it did not restart")
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:after"))
	n := res.Node("team")
	require.NotNil(t, n)
	require.NotNil(t, n.Multi)
	assert.Equal(t, "b done: answer ok", n.Multi.Node("b").Text())
}

// SPEC M11, M10: a graph holding a swarm, interrupted inside the swarm and
// rebuilt on a fresh runtime from its session, resumes exactly the agent
// that raised the interrupt; the swarm then follows that agent's handoff,
// and neither level restarts.
func TestSwarmAsGraphNode_ResumesAfterRebuildFromSession(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	top := func() *graph.Builder {
		team := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "check"})).
			AddAgent(askingAgent(r, "b", handoff{to: "c", message: "finish"})).AddAgent(teamAgent(r, "c", handoff{}))
		return graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).AddNode("after", agentnode.Agent(teamAgent(r, "after", handoff{}))).
			AddEdge("team", "after")
	}
	open := func() *graph.Graph {
		g, err := top().Build(ctx, graph.Config{ID: "g", Session: manager(t, st, "nest"), System: actorstest.System(t)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close(ctx) })
		return g
	}
	g1 := open()
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	assert.Equal(t, "g/team/b/"+interrupt.ToolCallID("t1", "which"), id)
	require.NoError(t, g1.Close(ctx))

	g2 := open()
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "ok")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, r.prompts("a"), 1)
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))
	assert.Equal(t, 1, r.count("model:after"))
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], "Handoff message from b: finish")
}
