package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M4: from a node's first interrupt on, the graph schedules nothing
// new. info → {day, time}, time → after: day's agent interrupts while
// time still runs; time is let finish only once the graph has taken day's
// interrupt (its NodeStopEvent), and completes, but its successor after
// is held: the run returns INTERRUPTED without it. The resume runs it.
func TestGraph_NothingNewStartsAfterANodeInterrupts(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	release := make(chan struct{})
	timeNode := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.add("time")
		return []model.ContentBlock{model.Text("noon")}, nil
	})
	b := graph.NewBuilder().AddNode("info", textAgent(r, "info")).AddNode("day", toolAgent(r, "day", "lookup", "which day")).
		AddNode("time", timeNode).AddNode("after", textAgent(r, "after")).
		AddEdge("info", "day").AddEdge("info", "time").AddEdge("time", "after")
	g := build(t, b, graph.Config{})

	var res *multiagent.Result
	var started []string
	for ev, err := range g.Stream(ctx, agent.Text("plan")) {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *multiagent.NodeStartEvent:
			started = append(started, ev.Node)
		case *multiagent.NodeStopEvent:
			if ev.Node == graph.DefaultID+"/day" { // events name node paths
				require.Equal(t, multiagent.StatusInterrupted, ev.Result.Status)
				close(release) // the graph has the interrupt: now time may end
			}
		case *multiagent.ResultEvent:
			res = ev.Result
		}
	}
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status)
	assert.Equal(t, multiagent.StatusCompleted, res.Node("time").Status, "a running node runs to its end")
	assert.Nil(t, res.Node("after"), "after was ready, but held")
	assert.NotContains(t, started, graph.DefaultID+"/after")
	assert.Contains(t, started, graph.DefaultID+"/time")
	assert.Equal(t, 0, r.count("model:after"))
	require.Len(t, res.Interrupts, 1)

	res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "monday")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:after"))
	assert.Equal(t, 1, r.count("time"), "time did not run again")
	assert.Equal(t, "day done: answer monday", res.Node("day").Text())
}
