package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC S6, M5, M10: the braid.recovery interrupt of a node's at-most-once
// tool, cut off and carried on, is answered through the graph in a fresh
// runtime (a new process): the answer is routed to the node's agent, which
// runs the tool again only on "rerun"; any other answer (JSON null here)
// gives the model an error result saying the run was cut off by a crash.
func TestGraph_S6_ARecoveryQuestionIsAnsweredThroughTheGraphInAFreshRuntime(t *testing.T) {
	for name, tc := range map[string]struct {
		answer any
		runs   int32
		text   string
	}{
		"rerun": {agent.RecoveryRerun, 2, "saw: fetched"},
		"null":  {nil, 1, "cut off by a crash"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := memory.New()
			var runs atomic.Int32
			started := make(chan struct{}, 1)
			b := func() *graph.Builder {
				return graph.NewBuilder().AddNode("n", cutOffAgent(&runs, started, nil, tool.AtMostOnce()))
			}
			g2 := closedMidTool(t, st, b, started)
			res, err := g2.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			in := res.Interrupts[0]
			require.Equal(t, agent.RecoveryInterrupt, in.Name)
			require.NoError(t, g2.Close(ctx))

			g3 := build(t, b(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
			res, err = g3.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, tc.answer)))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, tc.runs, runs.Load())
			assert.Contains(t, res.Node("n").Text(), tc.text)
		})
	}
}
