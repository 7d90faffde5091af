package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC M8, S4: a join waits for every predecessor that will run, also
// once the graph has gone back to the stored run after a failed save.
// {a, b, c} → j, b and c gated: b is denied (CANCELLED, so it would no
// longer block j), but the save that follows fails, and the store keeps
// b about to run. The next resume starts from the stored run and answers
// b yes this time: b runs (held until c has ended), and j waits for it,
// running once with every input, rather than at c's end on what the
// failed invocation had found about b, and again at b's.
func TestGraph_AJoinWaitsForAPredecessorTheStoredRunStillRuns(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := &failingStore{Store: memory.New()}
	release := make(chan struct{})
	slowB := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		<-release
		r.add("fn:b")
		return []model.ContentBlock{model.Text("b out")}, nil
	})
	failNextSave := hook.Func(func(_ context.Context, ev *multiagent.AfterNodeCallEvent) error {
		if ev.NodeID == "b" && ev.Result.Status == multiagent.StatusCancelled {
			st.armed.Store(true)
		}
		return nil
	})
	join := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:j")
		r.prompt("j", in.Prompt()[0].Text())
		return []model.ContentBlock{model.Text("j out")}, nil
	})
	b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", slowB).AddNode("c", fn(r, "c", nil)).AddNode("j", join).
		AddEdge("a", "j").AddEdge("b", "j").AddEdge("c", "j")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{gate(r, "b", "c"), failNextSave}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	gateB, gateC := res.Node("b").Interrupts[0].ID, res.Node("c").Interrupts[0].ID

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateB, "n")))
	require.ErrorIs(t, err, errDiskFull)
	st.armed.Store(false)

	var out *multiagent.Result
	for ev, err := range g.Stream(ctx, agent.Resume(interrupt.Respond(gateB, "y"), interrupt.Respond(gateC, "y"))) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStopEvent:
			if e.Node == "g/c" {
				close(release) // c's end is handled: b ends after it
			}
		case *multiagent.ResultEvent:
			out = e.Result
		}
	}
	require.NotNil(t, out)
	assert.Equal(t, multiagent.StatusCompleted, out.Status, "%v", statuses(out))
	assert.Equal(t, 1, r.count("fn:b"))
	assert.Equal(t, 1, r.count("fn:j"), "the join runs once")
	require.Len(t, r.prompts("j"), 1)
	assert.Contains(t, r.prompts("j")[0], "From b:", "the join ran after b")
	assert.Equal(t, []string{"a", "c", "b", "j"}, out.ExecutionOrder)
}
