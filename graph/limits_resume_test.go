package graph_test

import (
	"context"
	"sync"
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
)

// SPEC M8, M5, M7: MaxNodeExecutions stops new node runs; a node run that
// stopped for an interrupt (its agent's, or its gate's) and is resumed is
// not a new one (an interrupted and resumed run is one execution). x and
// p start together under a limit of two executions, which they reach; x
// stops for an answer, then p completes. Answered, x finishes, as it
// would have had it not stopped (before, the resume took the answer and
// then ended the run FAILED, "Max node executions reached", without
// running x).
func TestGraph_AResumedNodeRunFinishesPastMaxNodeExecutions_M8(t *testing.T) {
	for _, by := range []string{"agent", "gate"} {
		t.Run(by, func(t *testing.T) {
			ctx := context.Background()
			r := newRecorder()
			asked := make(chan struct{})
			p := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
				<-asked
				return []model.ContentBlock{model.Text("p out")}, nil
			})
			x := askingAgent(r, "x", map[int]bool{1: true}, asked, nil)
			var hooks []hook.Provider
			if by == "gate" {
				x = textAgent(r, "x")
				var once sync.Once
				hooks = append(hooks, hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
					if ev.NodeID != "x" {
						return nil
					}
					_, err := ev.Interrupt("x-ask", nil)
					if err != nil {
						once.Do(func() { close(asked) })
					}
					return err
				}))
			}
			b := graph.NewBuilder().AddNode("x", x).AddNode("p", p)
			g := build(t, b, graph.Config{MaxNodeExecutions: 2, Hooks: hooks})
			res, err := g.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Equal(t, []string{"p"}, res.ExecutionOrder)

			res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(interruptNamed(t, res, "x-ask").ID, "xx")))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
			assert.Empty(t, res.Message)
			assert.Equal(t, []string{"p", "x"}, res.ExecutionOrder)
			assert.Equal(t, multiagent.StatusCompleted, res.Node("x").Status)
		})
	}
}
