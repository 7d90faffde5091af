package graph_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

type traceKey struct{}

// The values of the context a caller invokes a graph with reach its
// nodes, at any depth, for Invoke and Stream; a later call without them
// does not see them.
func TestGraph_NodesSeeTheCallersContextValues(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]any{}
	probe := func(id string) actors.Node {
		return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			mu.Lock()
			seen[id] = append(seen[id], ctx.Value(traceKey{}))
			mu.Unlock()
			return []model.ContentBlock{model.Text(id + " out")}, nil
		})
	}
	inner := graph.NewBuilder().AddNode("deep", probe("deep"))
	b := graph.NewBuilder().AddNode("top", probe("top")).AddNode("mid", inner.AsNode(graph.Config{})).AddEdge("top", "mid")
	g := build(t, b, graph.Config{ID: "g"})
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), traceKey{}, "trace-1"), 10*time.Second)
	defer cancel()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	for _, err := range g.Stream(ctx, agent.Text("again")) {
		require.NoError(t, err)
	}
	res, err = g.Invoke(context.Background(), agent.Text("plain"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	want := []any{"trace-1", "trace-1", nil}
	assert.Equal(t, want, seen["top"])
	assert.Equal(t, want, seen["deep"], "a nested graph's node")
}
