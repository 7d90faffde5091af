package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// taskLog is a graph of one function node that records the task of every
// run and reports it on started; hold, if not nil, blocks each run until
// it is closed.
func taskLog(hold chan struct{}) (*recorder, chan string, *graph.Builder) {
	r := newRecorder()
	started := make(chan string, 16)
	fn := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		task := in.Prompt()[0].Text()
		r.prompt("n", task)
		started <- task
		if hold != nil {
			<-hold
		}
		return nil, nil
	})
	return r, started, graph.NewBuilder().AddNode("n", fn)
}

// SPEC R5: an Invoke whose context has ended already returns its error
// and runs nothing; the next invocation shows what ran before it.
func TestGraph_InvokeWhoseContextEndedRunsNothing(t *testing.T) {
	r, _, b := taskLog(nil)
	g := build(t, b, graph.Config{})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Invoke(ended, agent.Text("gave-up"))
	require.ErrorIs(t, err, context.Canceled)
	for _, err := range g.Stream(ended, agent.Text("gave-up too")) {
		require.ErrorIs(t, err, context.Canceled)
	}
	_, err = g.Invoke(context.Background(), agent.Text("probe"))
	require.NoError(t, err)
	assert.Equal(t, []string{"probe"}, r.prompts("n"))
}

// SPEC R5: an invocation waiting behind another whose caller gives up is
// dropped: it does not run later with nobody waiting for it.
func TestGraph_QueuedInvokeWhoseCallerGaveUpIsDropped(t *testing.T) {
	release := make(chan struct{})
	r, started, b := taskLog(release)
	g := build(t, b, graph.Config{})
	bg := context.Background()
	first := make(chan error, 1)
	go func() { _, err := g.Invoke(bg, agent.Text("first")); first <- err }()
	require.Equal(t, "first", <-started)

	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithCancel(bg)
		second := make(chan error, 1)
		go func() {
			if stream {
				for _, err := range g.Stream(ctx, agent.Text("second")) {
					if err != nil {
						second <- err
						return
					}
				}
				second <- nil
				return
			}
			_, err := g.Invoke(ctx, agent.Text("second"))
			second <- err
		}()
		cancel()
		require.ErrorIs(t, <-second, context.Canceled, "the second caller gave up")
	}
	close(release)
	require.NoError(t, <-first)
	_, err := g.Invoke(bg, agent.Text("probe"))
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "probe"}, r.prompts("n"))
}

// SPEC R5: a Cancel whose context has ended already returns its error and
// cancels nothing.
func TestGraph_CancelWhoseContextEndedCancelsNothing(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	fn := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		close(started)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return []model.ContentBlock{model.Text("done")}, nil
		}
	})
	g := build(t, graph.NewBuilder().AddNode("n", fn), graph.Config{})
	bg := context.Background()
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(bg, agent.Text("go"))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	ended, cancel := context.WithCancel(bg)
	cancel()
	_, err := g.Cancel(ended)
	require.ErrorIs(t, err, context.Canceled)
	_, err = g.Status(ended)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	assert.Equal(t, multiagent.StatusCompleted, (<-done).Status, "not cancelled")
}

// SPEC R6: a panic in an edge condition (the caller's code, run by the
// graph's actor) fails the invocation with an error that carries the
// panic value; the graph's actor and its run survive: the run is FAILED
// with node a's result kept, and the graph answers the next call. Before,
// the actor was stopped, the caller was told the graph had been closed,
// and the next call found a fresh, empty run.
func TestGraph_PanicInAnEdgeConditionFailsTheInvocationAndKeepsTheRun(t *testing.T) {
	r := newRecorder()
	boom := func(*graph.State) bool { panic("boom in condition") }
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b", boom)
	g := build(t, b, graph.Config{})
	ctx := context.Background()
	_, err := g.Invoke(ctx, agent.Text("go"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom in condition")
	assert.NotErrorIs(t, err, actors.ErrOrchestratorClosed)
	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, st.Status)
	assert.Contains(t, st.Message, "boom in condition")
	require.NotNil(t, st.Node("a"))
	assert.Equal(t, multiagent.StatusCompleted, st.Node("a").Status)
	assert.Nil(t, st.Node("b"), "b never ran")

	res, err := g.Invoke(ctx, agent.Text("again"))
	require.Error(t, err, "the condition panics again")
	assert.Nil(t, res)
}
