package graph

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/model"
)

func shapeOf(t *testing.T, b *Builder) string {
	t.Helper()
	tp, err := b.validate()
	require.NoError(t, err)
	return tp.shape()
}

// SPEC M10: the shape is the same for a graph built in another order
// unless the cycles that run close at other edges; a cycle that no entry
// point reaches (it never runs) does not change it, whichever order its
// nodes come in.
func TestShape_OrderMattersOnlyWhereItChangesTheSchedule(t *testing.T) {
	node := func() actors.Node {
		return agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) { return nil, nil })
	}
	never := func(*State) bool { return false }
	withNodes := func(ids ...string) *Builder {
		b := NewBuilder()
		for _, id := range ids {
			b.AddNode(id, node())
		}
		return b
	}
	// b ⇄ c, reached by no entry point (a is the only one).
	unreached := func(ids ...string) *Builder {
		return withNodes(ids...).SetEntryPoint("a").AddEdge("b", "c").AddEdge("c", "b", never)
	}
	assert.Equal(t, shapeOf(t, unreached("a", "b", "c")), shapeOf(t, unreached("a", "c", "b")))

	// g → {b, c}, b ⇄ c: the edge first added out of g decides where the
	// cycle closes.
	reached := func(first, second string) *Builder {
		return withNodes("a", "g", "b", "c").AddEdge("a", "g").AddEdge("g", first).AddEdge("g", second).
			AddEdge("b", "c").AddEdge("c", "b", never)
	}
	assert.NotEqual(t, shapeOf(t, reached("b", "c")), shapeOf(t, reached("c", "b")))
	assert.Equal(t, shapeOf(t, reached("b", "c")),
		shapeOf(t, withNodes("c", "b", "g", "a").AddEdge("g", "b").AddEdge("b", "c").AddEdge("a", "g").AddEdge("c", "b", never).AddEdge("g", "c")))
}
