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
	"github.com/braidhq/braid/multiagent"
)

// SPEC I7 (last line), M6, M5: a gated node's agent stops with x and y
// and is answered x; a resume that answers the node's gate again alone
// runs the node for the gate's answer, and the agent, which has nothing
// to take, still waits in the same interrupted state: a resume that
// answers x again, with y, replaces x's answer, as on the agent alone.
func TestGraph_ReansweringAGateKeepsTheNodeAgentsAnswersForANewAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("a", agentnode.Agent(xyAgent(r, "a"))),
		graph.Config{ID: "top", Hooks: []hook.Provider{gate(r, "a")}})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	gi := res.Interrupts[0].ID

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gi, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	xi, yi := res.Interrupts[0], res.Interrupts[1]
	require.Equal(t, "x", xi.Name)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "a")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, yi.ID, res.Interrupts[0].ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gi, "y")))
	require.NoError(t, err, "the gate is answered again")
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, yi.ID, res.Interrupts[0].ID)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(xi.ID, "b"), interrupt.Respond(yi.ID, "c")))
	require.NoError(t, err, "x is re-answered within the same interrupted state")
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("x=b"), "the x hook sees the new answer")
	assert.Equal(t, 1, r.count("tool:a"))
}
