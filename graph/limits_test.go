package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// A negative limit is refused at Build with the name of the Config field
// that holds it.
func TestNegativeLimitErrorNamesTheConfigField(t *testing.T) {
	node := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) { return nil, nil })
	cases := map[string]graph.Config{
		"MaxNodeExecutions": {MaxNodeExecutions: -1},
		"ExecutionTimeout":  {ExecutionTimeout: -time.Second},
		"NodeTimeout":       {NodeTimeout: -time.Second},
	}
	for field, cfg := range cases {
		t.Run(field, func(t *testing.T) {
			_, err := graph.NewBuilder().AddNode("a", node).Build(context.Background(), cfg)
			require.ErrorIs(t, err, graph.ErrBuild)
			assert.Contains(t, err.Error(), field)
		})
	}
}

// SPEC M8: MaxNodeExecutions bounds the node runs a graph starts, not only
// those that have ended: nodes that become ready together (entry points,
// or the targets of one node's edges) start only as far as the limit
// allows, and the run then ends FAILED with a message naming the limit.
func TestGraph_MaxNodeExecutionsBoundsNodesStartedTogether(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		limit int
		build func(b *graph.Builder) *graph.Builder
		ran   int
	}{
		// a, b and c are entry points: they start together.
		"entry points": {2, func(b *graph.Builder) *graph.Builder { return b }, 2},
		// root's edges make a, b and c ready together once it completes.
		"fan-out": {3, func(b *graph.Builder) *graph.Builder {
			return b.AddNode("root", textAgent(newRecorder(), "root")).AddEdge("root", "a").AddEdge("root", "b").AddEdge("root", "c")
		}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			ran := 0
			leaf := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
				mu.Lock()
				defer mu.Unlock()
				ran++
				return []model.ContentBlock{model.Text("done")}, nil
			})
			b := tc.build(graph.NewBuilder().AddNode("a", leaf).AddNode("b", leaf).AddNode("c", leaf))
			res, err := build(t, b, graph.Config{MaxNodeExecutions: tc.limit}).Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusFailed, res.Status)
			assert.Equal(t, fmt.Sprintf("Max node executions reached: %d", tc.limit), res.Message)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.ran, ran, "leaf runs started")
			assert.Len(t, res.ExecutionOrder, tc.limit)
		})
	}
}
