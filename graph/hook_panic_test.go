package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
)

// SPEC R6: a panic in any of a graph's hooks fails what the hook was part
// of, saying so with the panic's value, and never the graph's actor: the
// same graph then runs a task to its end.
func TestGraph_APanickingHookFailsItsRunNotTheGraph(t *testing.T) {
	for _, phase := range []string{"before node", "after node", "before invocation", "after invocation"} {
		t.Run(phase, func(t *testing.T) {
			var armed atomic.Bool
			armed.Store(true)
			boom := func() {
				if armed.CompareAndSwap(true, false) {
					panic("boom in " + phase)
				}
			}
			var h hook.Provider
			switch phase {
			case "before node":
				h = hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error { boom(); return nil })
			case "after node":
				h = hook.Func(func(ctx context.Context, ev *multiagent.AfterNodeCallEvent) error { boom(); return nil })
			case "before invocation":
				h = hook.Func(func(ctx context.Context, ev *multiagent.BeforeMultiAgentInvocationEvent) error { boom(); return nil })
			case "after invocation":
				h = hook.Func(func(ctx context.Context, ev *multiagent.AfterMultiAgentInvocationEvent) error { boom(); return nil })
			}
			r := newRecorder()
			g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b"),
				graph.Config{Hooks: []hook.Provider{h}})
			ctx := context.Background()
			res, err := g.Invoke(ctx, agent.Text("go"))
			if strings.HasSuffix(phase, "node") {
				// A node hook's panic fails the node (its error, as a node
				// result's, is a message) and so the run.
				require.NoError(t, err)
				assert.Equal(t, multiagent.StatusFailed, res.Status)
				n := res.Node("a")
				require.NotNil(t, n)
				assert.Equal(t, multiagent.StatusFailed, n.Status)
				require.Error(t, n.Err)
				assert.Contains(t, n.Err.Error(), `hook of node "a"`)
				assert.Contains(t, n.Err.Error(), "panicked: boom in "+phase)
				assert.Nil(t, res.Node("b"), "nothing after the failed node")
			} else {
				// An invocation hook's panic fails the invocation.
				var pe *hook.PanicError
				require.True(t, errors.As(err, &pe), "%v", err)
				assert.Equal(t, "boom in "+phase, pe.Value)
			}

			res, err = g.Invoke(ctx, agent.Text("again"))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, []string{"a", "b"}, res.ExecutionOrder)
		})
	}
}
