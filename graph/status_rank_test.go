package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC M2, M3: a run's status is the worst of its nodes' by FAILED >
// INTERRUPTED > CANCELLED > COMPLETED. info starts two nodes side by side,
// which both end (a failure or an interrupt stops nothing that runs):
// "fails" fails, "asks" is gated (an interrupt that waits), "skipped" is
// cancelled by its BeforeNodeCall hook (with the default message), "done"
// completes. Which of the two reports first is left to the scheduler.
func TestGraph_RunStatusIsTheWorstOfItsNodes(t *testing.T) {
	r := newRecorder()
	nodes := map[string]func() actors.Node{
		"fails": func() actors.Node {
			return agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
				return nil, errors.New("no luck")
			})
		},
		"asks":    func() actors.Node { return textAgent(r, "asks") },
		"skipped": func() actors.Node { return textAgent(r, "skipped") },
		"done":    func() actors.Node { return textAgent(r, "done") },
	}
	nodeHooks := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		switch ev.NodeID {
		case "asks":
			_, err := ev.Interrupt("approval", nil)
			return err
		case "skipped":
			ev.CancelNode("")
		}
		return nil
	})
	want := map[string]multiagent.Status{"fails": multiagent.StatusFailed, "asks": multiagent.StatusInterrupted,
		"skipped": multiagent.StatusCancelled, "done": multiagent.StatusCompleted}
	for _, c := range []struct {
		pair [2]string
		run  multiagent.Status
	}{
		{[2]string{"fails", "asks"}, multiagent.StatusFailed},
		{[2]string{"fails", "skipped"}, multiagent.StatusFailed},
		{[2]string{"asks", "skipped"}, multiagent.StatusInterrupted},
		{[2]string{"skipped", "done"}, multiagent.StatusCancelled},
		{[2]string{"done", "done2"}, multiagent.StatusCompleted},
	} {
		t.Run(c.pair[0]+"+"+c.pair[1], func(t *testing.T) {
			b := graph.NewBuilder().AddNode("info", textAgent(r, "info"))
			for _, id := range c.pair {
				mk := nodes[id]
				if mk == nil {
					mk = nodes["done"]
				}
				b.AddNode(id, mk()).AddEdge("info", id)
			}
			res, err := build(t, b, graph.Config{Hooks: []hook.Provider{nodeHooks}}).Invoke(context.Background(), agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, c.run, res.Status)
			for _, id := range c.pair {
				n := res.Node(id)
				require.NotNil(t, n, id)
				if w, ok := want[id]; ok {
					assert.Equal(t, w, n.Status, id)
				}
			}
			if n := res.Node("skipped"); n != nil {
				assert.Equal(t, "node cancelled by user", n.Message)
			}
		})
	}
}

// SPEC M2, I7, I8: a run that ends FAILED is over, even when one of its
// nodes was interrupted when another failed. It lists no interrupt (none
// could be answered), streams no interrupt event, and refuses a resume
// with ErrNotInterrupted; the interrupted node's own result still shows
// its interrupt. A graph built again on the session sees the same, and a
// new prompt starts a new run.
func TestGraph_FailedRunListsNoInterruptsAndRefusesResponses(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := memory.New()
	mk := func() *graph.Graph {
		b := graph.NewBuilder().AddNode("info", textAgent(r, "info")).AddNode("fails", fn(r, "fails", errors.New("boom"))).
			AddNode("asks", textAgent(r, "asks")).AddEdge("info", "fails").AddEdge("info", "asks")
		return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{gate(r, "asks")}})
	}
	g := mk()
	var res *multiagent.Result
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		_, isInterrupt := ev.(*multiagent.InterruptEvent)
		assert.False(t, isInterrupt, "no interrupt event for a run that ends FAILED")
		if e, ok := ev.(*multiagent.ResultEvent); ok {
			res = e.Result
		}
	}
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Empty(t, res.Interrupts)
	asks := res.Node("asks")
	require.NotNil(t, asks)
	assert.Equal(t, multiagent.StatusInterrupted, asks.Status)
	require.Len(t, asks.Interrupts, 1)
	id := asks.Interrupts[0].ID

	for _, g := range []*graph.Graph{g, mk()} {
		_, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		st, err := g.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, multiagent.StatusFailed, st.Status)
		assert.Empty(t, st.Interrupts)
	}
	assert.Equal(t, 0, r.count("model:asks"), "the gated node never ran")
}
