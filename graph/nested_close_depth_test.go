package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC S6, M11: a graph closed while an at-most-once tool of a graph
// nested two levels down runs is cut off at every level, invoked or
// streamed: carried on later, no level is cancelled or restarted, the
// tool is not run again unasked, and its braid.recovery interrupt
// surfaces at the top.
func TestGraph_S6_ACloseCutsOffAGraphNestedTwoLevelsDownAndItsAtMostOnceToolAsks(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "invoke"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := memory.New()
			st := manager
			var runs atomic.Int32
			started := make(chan struct{}, 1)
			b := func() *graph.Builder {
				deep := graph.NewBuilder().AddNode("n", cutOffAgent(&runs, started, nil, tool.AtMostOnce()))
				mid := graph.NewBuilder().AddNode("deep", deep.AsNode(graph.Config{}))
				return graph.NewBuilder().AddNode("mid", mid.AsNode(graph.Config{}))
			}
			g := build(t, b(), graph.Config{ID: "g", Session: st(t, store, "s"), System: actorstest.System(t)})
			errc := make(chan error, 1)
			go func() {
				if !stream {
					_, err := g.Invoke(ctx, agent.Text("go"))
					errc <- err
					return
				}
				for _, err := range g.Stream(ctx, agent.Text("go")) {
					if err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			<-started
			require.NoError(t, g.Close(ctx))
			require.ErrorIs(t, <-errc, actors.ErrOrchestratorClosed)

			g2 := build(t, b(), graph.Config{ID: "g", Session: st(t, store, "s"), System: actorstest.System(t)})
			res, err := g2.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status, "%+v", res.Results)
			require.Len(t, res.Interrupts, 1)
			assert.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
			assert.Equal(t, int32(1), runs.Load(), "not run again unasked")
		})
	}
}
