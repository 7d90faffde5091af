package graph_test

// SPEC M8 fan-in: a node with several incoming edges runs once, after
// every predecessor that will run has finished; an edge whose condition
// is false or whose source failed or was cancelled does not block it.
// The order of the nodes' ends is forced with handshakes: a held node
// ends only once the test, reading the run's stream, has seen another
// node's end (the orchestrator has then scheduled after it).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
)

// hold makes a node end only when it is released; a release that comes
// first (or twice) is kept.
type hold struct {
	once sync.Once
	c    chan struct{}
}

func newHold() *hold { return &hold{c: make(chan struct{})} }

func (h *hold) release() { h.once.Do(func() { close(h.c) }) }

// heldFn is a node that records its prompt, waits for h (nil: no wait)
// and then answers "<id> out", or fails with err.
func heldFn(r *recorder, id string, h *hold, err error) actors.Node {
	return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:" + id)
		if p := in.Prompt(); len(p) > 0 {
			r.prompt(id, p[len(p)-1].Text())
		}
		if h != nil {
			select {
			case <-h.c:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err != nil {
			return nil, err
		}
		return []model.ContentBlock{model.Text(id + " out")}, nil
	})
}

// streamRun streams a run of g and calls onStop with the id of every node
// whose end it reads (the orchestrator has scheduled after that end); it
// returns the result and the nodes in the order they ended.
func streamRun(t *testing.T, g *graph.Graph, in agent.Input, onStop func(node string)) (*multiagent.Result, []string) {
	t.Helper()
	var stops []string
	for ev, err := range g.Stream(context.Background(), in) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStopEvent:
			node := e.Node[strings.LastIndex(e.Node, "/")+1:]
			stops = append(stops, node)
			if onStop != nil {
				onStop(node)
			}
		case *multiagent.ResultEvent:
			return e.Result, stops
		}
	}
	t.Fatal("the stream ended without a result")
	return nil, nil
}

// SPEC M8: join waits on mid, whose only source p2 ends after p1. When p2
// fails, or its edge to mid is not taken, mid will never run: join is
// released then and runs once, on p1's output alone.
func TestGraph_JoinRunsOnceWhenAPredecessorCanNoLongerRun(t *testing.T) {
	never := func(*graph.State) bool { return false }
	for _, tc := range []struct {
		name string
		err  error
		cond []graph.Condition
	}{
		{"its source failed", errors.New("boom"), nil},
		{"its edge is not taken", nil, []graph.Condition{never}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			p2 := newHold()
			b := graph.NewBuilder().AddNode("start", heldFn(r, "start", nil, nil)).
				AddNode("p1", heldFn(r, "p1", nil, nil)).AddNode("p2", heldFn(r, "p2", p2, tc.err)).
				AddNode("mid", heldFn(r, "mid", nil, nil)).AddNode("join", heldFn(r, "join", nil, nil)).
				AddEdge("start", "p1").AddEdge("start", "p2").AddEdge("p2", "mid", tc.cond...).
				AddEdge("p1", "join").AddEdge("mid", "join")
			res, stops := streamRun(t, build(t, b, graph.Config{ID: "g"}), agent.Text("go"), func(node string) {
				if node == "p1" {
					p2.release() // join waits on mid now
				}
			})
			assert.Equal(t, []string{"start", "p1", "p2", "join"}, stops)
			assert.Equal(t, 1, r.count("fn:join"))
			assert.Zero(t, r.count("fn:mid"))
			require.NotNil(t, res.Node("join"), "join ran")
			assert.Equal(t, multiagent.StatusCompleted, res.Node("join").Status)
			require.Len(t, r.prompts("join"), 1)
			assert.Contains(t, r.prompts("join")[0], "From p1:")
			assert.NotContains(t, r.prompts("join")[0], "From mid:")
		})
	}
}

// SPEC M8: a → b, a → c, b → c. a's end makes b ready, so b is a
// predecessor of c that will run: c waits for it and runs once, on both
// outputs, whatever order the edges were added in.
func TestGraph_JoinWaitsForAPredecessorMadeReadyInTheSameStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges [][2]string
	}{
		{"sibling edge first", [][2]string{{"a", "b"}, {"a", "c"}, {"b", "c"}}},
		{"join edge first", [][2]string{{"a", "c"}, {"a", "b"}, {"b", "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			b := graph.NewBuilder().AddNode("a", heldFn(r, "a", nil, nil)).AddNode("b", heldFn(r, "b", nil, nil)).
				AddNode("c", heldFn(r, "c", nil, nil))
			for _, e := range tc.edges {
				b.AddEdge(e[0], e[1])
			}
			res, err := build(t, b, graph.Config{}).Invoke(context.Background(), agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, []string{"a", "b", "c"}, res.ExecutionOrder)
			assert.Equal(t, 1, r.count("fn:c"))
			require.Len(t, r.prompts("c"), 1)
			assert.Contains(t, r.prompts("c")[0], "From a:")
			assert.Contains(t, r.prompts("c")[0], "From b:")
		})
	}
}

// SPEC M8: whether a join waits is decided from the saved run. p2 is
// gated, so join waits on mid; the run is interrupted, and resumed by a
// fresh graph on a fresh actor system (as a new process would), or by the
// same graph, whose policy keeps the join held back. Let run,
// p2 and mid run and join runs once after mid; cancelled, p2 ends and
// join, which is not p2's target, is released and runs once on p1's
// output alone.
func TestGraph_JoinHeldBackAcrossAnInterruptRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		answer string
		inputs []string // what join's prompt holds
		not    []string
	}{
		{"y", []string{"From p1:", "From mid:"}, nil},
		{"n", []string{"From p1:"}, []string{"From mid:"}},
	} {
		for _, restore := range []bool{true, false} {
			name := tc.answer + "/resumed in the same graph"
			if restore {
				name = tc.answer + "/restored in a new graph"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				st := memory.New()
				r := newRecorder()
				b := graph.NewBuilder().AddNode("start", heldFn(r, "start", nil, nil)).
					AddNode("p1", heldFn(r, "p1", nil, nil)).AddNode("p2", heldFn(r, "p2", nil, nil)).
					AddNode("mid", heldFn(r, "mid", nil, nil)).AddNode("join", heldFn(r, "join", nil, nil)).
					AddEdge("start", "p1").AddEdge("start", "p2").AddEdge("p2", "mid").
					AddEdge("p1", "join").AddEdge("mid", "join")
				cfg := func() graph.Config {
					return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "p2")}}
				}
				g1 := build(t, b, cfg())
				res, err := g1.Invoke(ctx, agent.Text("go"))
				require.NoError(t, err)
				require.Equal(t, multiagent.StatusInterrupted, res.Status)
				require.Equal(t, multiagent.StatusCompleted, res.Node("p1").Status)
				require.Len(t, res.Interrupts, 1)
				require.Zero(t, r.count("fn:join"))
				g2 := g1 // the join stays held back in the live policy
				if restore {
					require.NoError(t, g1.Close(ctx))
					g2 = build(t, b, cfg())
				}
				res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, tc.answer)))
				require.NoError(t, err)
				assert.Equal(t, 1, r.count("fn:join"))
				require.NotNil(t, res.Node("join"), "join ran")
				assert.Equal(t, multiagent.StatusCompleted, res.Node("join").Status)
				assert.Equal(t, 1, res.Node("join").ExecutionCount)
				assert.Equal(t, 1, r.count("fn:p1"), "p1 had completed")
				require.Len(t, r.prompts("join"), 1)
				for _, s := range tc.inputs {
					assert.Contains(t, r.prompts("join")[0], s)
				}
				for _, s := range tc.not {
					assert.NotContains(t, r.prompts("join")[0], s)
				}
			})
		}
	}
}

// SPEC M8: a second fresh run of the same graph schedules its fan-in like
// the first: what the first run's nodes did is not taken for this run's.
func TestGraph_SecondFreshRunSchedulesFanInLikeTheFirst(t *testing.T) {
	r := newRecorder()
	holds := []*hold{newHold(), newHold()} // p2's, per run
	b := graph.NewBuilder().AddNode("start", heldFn(r, "start", nil, nil)).
		AddNode("p1", heldFn(r, "p1", nil, nil)).
		AddNode("p2", agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			r.add("fn:p2")
			select {
			case <-holds[r.count("fn:p2")-1].c:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return []model.ContentBlock{model.Text("p2 out")}, nil
		})).
		AddNode("mid", heldFn(r, "mid", nil, nil)).AddNode("join", heldFn(r, "join", nil, nil)).
		AddEdge("start", "p1").AddEdge("start", "p2").AddEdge("p2", "mid").
		AddEdge("p1", "join").AddEdge("mid", "join")
	g := build(t, b, graph.Config{ID: "g"})
	for run := 1; run <= 2; run++ {
		res, stops := streamRun(t, g, agent.Text("go"), func(node string) {
			if node == "p1" {
				holds[run-1].release() // join waits on mid now
			}
		})
		assert.Equal(t, []string{"start", "p1", "p2", "mid", "join"}, stops, "run %d", run)
		assert.Equal(t, []string{"start", "p1", "p2", "mid", "join"}, res.ExecutionOrder, "run %d", run)
		assert.Equal(t, run, r.count("fn:join"), "run %d: join runs once per run", run)
		require.Len(t, r.prompts("join"), run)
		assert.Contains(t, r.prompts("join")[run-1], "From mid:", "run %d", run)
	}
}

// SPEC M8: ResetOnRevisit resets a node that runs again within a run; a
// node's first visit in a fresh run is no revisit, and its agent carries
// its conversation on from the run before.
func TestGraph_ResetOnRevisitLeavesTheFirstVisitOfAFreshRunAlone(t *testing.T) {
	var mu sync.Mutex
	var seen []int // history length at each model call of "b"
	node := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, len(req.Messages))
		return model.TextTurn("b done"), nil
	})})
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", node).AddEdge("a", "b").ResetOnRevisit(true)
	g := build(t, b, graph.Config{})
	for range 2 {
		res, err := g.Invoke(context.Background(), agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, 3}, seen, "the second run's b carries on its conversation")
}

// SPEC M8, cycles: plan → write ⇄ review, plan → review, plan → publish,
// review → publish when approved. The back edge review → write does not
// hold write back (nor would anything ever run); review waits for write
// although plan's end made it ready too; publish waits while the loop
// can still run review, and runs once, on the approved review.
func TestGraph_FanInInALoopWaitsAlongTheLoopNotOnItsBackEdge(t *testing.T) {
	r := newRecorder()
	review := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:review")
		if p := in.Prompt(); len(p) > 0 {
			r.prompt("review", p[len(p)-1].Text())
		}
		if r.count("fn:review") == 1 {
			return []model.ContentBlock{model.Text("rejected")}, nil
		}
		return []model.ContentBlock{model.Text("approved")}, nil
	})
	verdict := func(want string) graph.Condition {
		return func(s *graph.State) bool { return s.Text("review") == want }
	}
	b := graph.NewBuilder().AddNode("plan", heldFn(r, "plan", nil, nil)).AddNode("write", heldFn(r, "write", nil, nil)).
		AddNode("review", review).AddNode("publish", heldFn(r, "publish", nil, nil)).
		AddEdge("plan", "write").AddEdge("write", "review").AddEdge("review", "write", verdict("rejected")).
		AddEdge("plan", "review").AddEdge("plan", "publish").AddEdge("review", "publish", verdict("approved"))
	res, err := build(t, b, graph.Config{MaxNodeExecutions: 10}).Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"plan", "write", "review", "write", "review", "publish"}, res.ExecutionOrder)
	require.Len(t, r.prompts("review"), 2)
	assert.Contains(t, r.prompts("review")[0], "From write:", "review waited for write")
	require.Len(t, r.prompts("publish"), 1)
	assert.Contains(t, r.prompts("publish")[0], "From review:\n  - review: approved")
}
