package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// reentry is what a node or hook got when it called back into a graph
// that runs it.
type reentry struct {
	invoke, stream, status error
	statusOf               multiagent.Status
}

// callBack calls g from inside one of its runs: Invoke and Stream, which
// would wait for the run that waits for them, and Status, which is
// answered at once. The deadline only bounds a failure of the test: the
// calls must return before it.
func callBack(ctx context.Context, g *graph.Graph) reentry {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var r reentry
	_, r.invoke = g.Invoke(ctx, agent.Text("again"))
	for _, err := range g.Stream(ctx, agent.Text("again")) {
		if err != nil {
			r.stream = err
		}
	}
	st, err := g.Status(ctx)
	r.status = err
	if err == nil {
		r.statusOf = st.Status
	}
	return r
}

func checkReentry(t *testing.T, r reentry) {
	t.Helper()
	assert.ErrorIs(t, r.invoke, actors.ErrReentrant)
	assert.ErrorIs(t, r.stream, actors.ErrReentrant)
	assert.NoError(t, r.status)
	assert.Equal(t, multiagent.StatusExecuting, r.statusOf)
}

// SPEC R7: a node that invokes its own graph while the graph runs it gets
// ErrReentrant at once (the run would wait for the node, and the node for
// the run), and Status, a read, is answered; the run goes on.
func TestGraph_ANodeThatInvokesItsOwnGraphGetsErrReentrant(t *testing.T) {
	var g *graph.Graph
	var got reentry
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		got = callBack(ctx, g)
		return []model.ContentBlock{model.Text("done")}, nil
	})
	g = build(t, graph.NewBuilder().AddNode("a", node), graph.Config{})
	res, err := g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	checkReentry(t, got)
}

// SPEC R7: the same from a BeforeNodeCall hook of the graph.
func TestGraph_AHookThatInvokesItsOwnGraphGetsErrReentrant(t *testing.T) {
	var g *graph.Graph
	var got reentry
	h := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		got = callBack(ctx, g)
		return nil
	})
	r := newRecorder()
	g = build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{Hooks: []hook.Provider{h}})
	res, err := g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	checkReentry(t, got)
}

// SPEC R7, M11: the same from a node of a graph nested in the graph, at
// the second level: the call goes up through the nested graph's run.
func TestGraph_ANestedNodeThatInvokesTheOuterGraphGetsErrReentrant(t *testing.T) {
	var g *graph.Graph
	var got reentry
	deep := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		got = callBack(ctx, g)
		return []model.ContentBlock{model.Text("done")}, nil
	})
	inner := graph.NewBuilder().AddNode("deep", deep)
	g = build(t, graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{})), graph.Config{})
	res, err := g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	checkReentry(t, got)
}
