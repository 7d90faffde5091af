package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
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
