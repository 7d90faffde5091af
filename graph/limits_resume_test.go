package graph_test

import (
	"context"
	"sync"
	"testing"
	"time"

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

// SPEC M8, M7: ExecutionTimeout counts the time the run executes, not the
// time it waits for answers, and stops new node runs only: a node run
// that stopped for an interrupt started within the budget and finishes
// when answered, as it would have had it not stopped, even if a node
// that ran beside it took the run past the budget meanwhile. A node that
// would start after that does not, and the run ends FAILED naming the
// limit.
func TestGraph_AResumedNodeRunFinishesPastExecutionTimeout_M8(t *testing.T) {
	ctx := context.Background()
	// The budget is also the time the first invocation's own work gets
	// (the first subtest requires it to end within the budget): it is
	// wide so that a busy machine never reaches it there.
	const budget = time.Second
	t.Run("the answer comes after the budget", func(t *testing.T) {
		r := newRecorder()
		x := askingAgent(r, "x", map[int]bool{1: true}, nil, nil)
		g := build(t, graph.NewBuilder().AddNode("x", x).AddNode("y", textAgent(r, "y")).AddEdge("x", "y"),
			graph.Config{ExecutionTimeout: budget})
		res, err := g.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status)
		require.Less(t, res.Duration, budget, "the first invocation is quick")

		<-time.After(budget + budget/2) // a human takes a while: not the run's time

		res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(interruptNamed(t, res, "x-ask").ID, "xx")))
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
		assert.Equal(t, []string{"x", "y"}, res.ExecutionOrder)
	})
	t.Run("a node beside it ran past the budget", func(t *testing.T) {
		r := newRecorder()
		asked := make(chan struct{})
		p := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			<-asked
			<-time.After(budget + budget/2) // what is measured is time
			return []model.ContentBlock{model.Text("p out")}, nil
		})
		x := askingAgent(r, "x", map[int]bool{1: true}, asked, nil)
		b := graph.NewBuilder().AddNode("x", x).AddNode("p", p).AddNode("y", textAgent(r, "y")).AddEdge("x", "y")
		g := build(t, b, graph.Config{ExecutionTimeout: budget})
		res, err := g.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status)
		require.Greater(t, res.Duration, budget)

		res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(interruptNamed(t, res, "x-ask").ID, "xx")))
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusCompleted, res.Node("x").Status, "the answered run finishes")
		require.NotNil(t, res.Node("x").Agent)
		assert.Equal(t, "x answered xx", res.Node("x").Agent.String())
		assert.Equal(t, multiagent.StatusFailed, res.Status)
		assert.Equal(t, "Execution timed out: 1s", res.Message)
		assert.Nil(t, res.Node("y"), "a new node run does not start past the budget")
		assert.Equal(t, 0, r.count("model:y"))
	})
}
