package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
)

// SPEC M1: a function node given no function is refused when the graph is
// built (agentnode.ErrConfig, naming the node), as a node with no executor
// is, instead of failing every run of the node with a panic.
func TestBuild_RefusesAFunctionNodeWithoutAFunction(t *testing.T) {
	_, err := graph.NewBuilder().
		AddNode("a", agentnode.Func(nil)).
		Build(context.Background(), graph.Config{System: actorstest.System(t)})
	require.ErrorIs(t, err, agentnode.ErrConfig)
	assert.Contains(t, err.Error(), `node "a"`)
	assert.NotContains(t, err.Error(), "goroutine", "no stack trace")
}
