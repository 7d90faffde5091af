package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/multiagent"
)

// withoutTimes is r with its measured durations zeroed, at every depth.
func withoutTimes(r *multiagent.Result) *multiagent.Result {
	r.Duration = 0
	for _, n := range r.Results {
		n.Duration = 0
		if n.Agent != nil {
			n.Agent.Metrics.Duration = 0
		}
		if n.Multi != nil {
			withoutTimes(n.Multi)
		}
	}
	return r
}

// SPEC M12, M7: the result a Stream ends with is the result Invoke returns
// for the same run, down to its nodes' agent results (an agent node's
// result is the one its agent returned: no interrupts is no list).
func TestGraphStream_EndsWithTheResultInvokeReturns(t *testing.T) {
	ctx := context.Background()
	open := func() *graph.Graph {
		r := newRecorder()
		inner := graph.NewBuilder().AddNode("x", toolAgent(r, "x", "tx", ""))
		b := graph.NewBuilder().AddNode("a", toolAgent(r, "a", "ta", "")).AddNode("n", inner.AsNode(graph.Config{})).AddEdge("a", "n")
		return build(t, b, graph.Config{ID: "g"})
	}
	want, err := open().Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	var got *multiagent.Result
	for ev, err := range open().Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		if e, ok := ev.(*multiagent.ResultEvent); ok {
			got = e.Result
		}
	}
	require.NotNil(t, got)
	assert.Equal(t, withoutTimes(want), withoutTimes(got))
	require.NotNil(t, want.Node("a").Agent)
	assert.Nil(t, want.Node("a").Agent.Interrupts, "a completed agent lists no interrupts, as its own result does")
}
