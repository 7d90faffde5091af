package graph_test

// Behaviours of SPEC M4, M5, M7, M8, M10 and M12/I9 (results, times,
// fan-in, saves while nodes run, streamed interrupts).

import (
	"context"
	"errors"
	"testing"
	"time"

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
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC M8: an edge whose condition is false does not block its target's
// fan-in. start → {a, b}; a → join only if a condition that is false
// holds, b → join. Whichever of a and b ends last, join runs once, on
// b's output alone, and the run completes.
func TestGraph_FalseConditionalEdgeIntoAJoinDoesNotBlockIt(t *testing.T) {
	never := func(*graph.State) bool { return false }
	for _, tc := range []struct {
		name  string
		first string // the node that ends first
	}{
		{"false edge's source ends first", "a"},
		{"false edge's source ends last", "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			ha, hb := newHold(), newHold()
			if tc.first == "a" {
				ha.release()
			} else {
				hb.release()
			}
			b := graph.NewBuilder().AddNode("start", heldFn(r, "start", nil, nil)).
				AddNode("a", heldFn(r, "a", ha, nil)).AddNode("b", heldFn(r, "b", hb, nil)).
				AddNode("join", heldFn(r, "join", nil, nil)).
				AddEdge("start", "a").AddEdge("start", "b").
				AddEdge("a", "join", never).AddEdge("b", "join")
			res, stops := streamRun(t, build(t, b, graph.Config{ID: "g"}), agent.Text("go"), func(node string) {
				if node == tc.first {
					// the other ends only once the orchestrator has
					// scheduled after the first one's end
					ha.release()
					hb.release()
				}
			})
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			require.NotNil(t, res.Node("join"), "join ran: the false edge did not block it")
			assert.Equal(t, multiagent.StatusCompleted, res.Node("join").Status)
			assert.Equal(t, 1, r.count("fn:join"))
			assert.Equal(t, "join", stops[len(stops)-1])
			require.Len(t, r.prompts("join"), 1)
			assert.Contains(t, r.prompts("join")[0], "From b:")
			assert.NotContains(t, r.prompts("join")[0], "From a:")
		})
	}
}

// slowAsker is a node whose agent calls the tool lookup, which takes at
// least d, then interrupts; once answered, the tool takes at least d
// again and the agent answers.
func slowAsker(d time.Duration) actors.Node {
	ask := tool.New("lookup", "asks slowly", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		// The node's runs must really take time: what is measured is time.
		<-time.After(d)
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	return agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("asked"), nil
		}
		return model.ToolTurn(model.Call("t1", "lookup", map[string]any{})), nil
	})})
}

// SPEC M7: a node's execution time is summed over its runs: a run that
// interrupts and its resume each take at least d, and the node's time
// after the resume is at least the first run's plus d.
func TestGraph_NodeExecutionTimeIsSummedOverItsRuns(t *testing.T) {
	ctx := context.Background()
	const d = 60 * time.Millisecond
	g := build(t, graph.NewBuilder().AddNode("ask", slowAsker(d)), graph.Config{})
	first, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	firstRun := first.Node("ask").Duration
	require.GreaterOrEqual(t, firstRun, d)

	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	assert.GreaterOrEqual(t, final.Node("ask").Duration, firstRun+d, "the node's time is both runs'")
}

// SPEC M7: a run's execution time leaves out the wait between its
// invocations, in one graph too (not only one rebuilt from the store):
// the first invocation takes at least d, the test then waits at least d
// before resuming, and the run's time stays within the two invocations'
// wall time.
func TestGraph_RunTimeLeavesOutTheWaitInTheSameGraph(t *testing.T) {
	ctx := context.Background()
	const d = 60 * time.Millisecond
	g := build(t, graph.NewBuilder().AddNode("ask", slowAsker(d)), graph.Config{})
	start := time.Now()
	first, err := g.Invoke(ctx, agent.Text("go"))
	wall1 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	require.GreaterOrEqual(t, first.Duration, d)

	<-time.After(d) // the answer takes a while: that time is not the run's

	start = time.Now()
	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	wall2 := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	assert.GreaterOrEqual(t, final.Duration, first.Duration, "summed across invocations")
	assert.LessOrEqual(t, final.Duration, wall1+wall2, "the wait between the invocations is not counted")
}

// SPEC M7: an execution is a node run to its end: a run that interrupts
// and its resume are one execution of the node (Strands counts completed
// runs; interrupted ones are not in the execution order).
func TestGraph_InterruptedAndResumedNodeIsOneExecution(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("ask", toolAgent(r, "ask", "lookup", "which")).
		AddEdge("a", "ask")
	g := build(t, b, graph.Config{})
	first, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, first.Status)
	assert.Equal(t, []string{"a"}, first.ExecutionOrder, "an interrupted run is not an execution yet")
	assert.Equal(t, 1, first.ExecutionCount)
	assert.Equal(t, 0, first.Node("ask").ExecutionCount)

	final, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "x")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, final.Status)
	assert.Equal(t, []string{"a", "ask"}, final.ExecutionOrder)
	assert.Equal(t, 2, final.ExecutionCount)
	assert.Equal(t, 1, final.Node("ask").ExecutionCount)
}

// SPEC M12, I9: an interrupt is streamed only once the run that holds it
// is saved. When that save fails, the stream ends with the save's error
// and yields no interrupt event (nor a result) for the caller to act on.
func TestGraphStream_NoInterruptEventWhenTheRunCannotBeSaved(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := &failingStore{Store: memory.New()}
	// b's gate arms the store as it interrupts: the next save, the one
	// that holds b's interrupt, fails.
	armingGate := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		st.armed.Store(true)
		_, err := ev.Interrupt("approval", nil)
		r.add("gate:b")
		return err
	})
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{armingGate}})
	var got []string
	var streamErr error
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		if err != nil {
			streamErr = err
			break
		}
		got = append(got, describe(ev))
	}
	require.ErrorIs(t, streamErr, errDiskFull)
	assert.Equal(t, 1, r.count("gate:b"), "b was gated")
	assert.NotContains(t, got, "interrupt g/b", "an interrupt that was not saved is not streamed")
}

// SPEC M10: the run is saved after every node, not only when nodes start
// or the invocation ends: start → {x, y}; once x has ended, a save of the
// orchestrator's has x COMPLETED while y still runs.
func TestGraphSession_ANodesEndIsSavedWhileOthersRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := &signalledSaves{Store: memory.New(), saved: make(chan struct{}, 64)}
	hy := newHold()
	b := graph.NewBuilder().AddNode("start", heldFn(r, "start", nil, nil)).
		AddNode("x", heldFn(r, "x", nil, nil)).AddNode("y", heldFn(r, "y", hy, nil)).
		AddEdge("start", "x").AddEdge("start", "y")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	stored := func(node string) string {
		rec, err := st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindMultiAgent, ID: "g"})
		require.NoError(t, err)
		run, err := actors.ReadRun(rec.Data, rec.Messages)
		require.NoError(t, err)
		for _, n := range run.Nodes {
			if n.ID == node {
				return n.Status
			}
		}
		return ""
	}
	res, _ := streamRun(t, g, agent.Text("go"), func(node string) {
		if node != "x" {
			return
		}
		defer hy.release()
		// Every save of the run signals; y is held, so the run cannot
		// end: a save with x COMPLETED must come while y runs.
		for stored("x") != "COMPLETED" {
			select {
			case <-st.saved:
			case <-time.After(time.Minute):
				t.Fatal("no save has x COMPLETED")
			}
		}
		assert.Equal(t, "EXECUTING", stored("y"))
	})
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC M4, M5, M10: a node made ready while the run was stopping for an
// interrupt is held back, and the resume runs it with the answered
// nodes, whether the same graph resumes or a new one built on the stored
// run. info → {day, time}, time → after; day is gated, time ends after
// day's gate interrupt, so after is held. The resume answers the gate;
// day's tool then interrupts, but after has run in that resume.
func TestGraphSession_HeldNodeRunsOnResumeAlsoAfterARestore(t *testing.T) {
	for _, restore := range []bool{false, true} {
		name := "same graph"
		if restore {
			name = "restored in a new graph"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := newRecorder()
			st := memory.New()
			ht := newHold()
			b := graph.NewBuilder().AddNode("info", heldFn(r, "info", nil, nil)).
				AddNode("day", toolAgent(r, "day", "lookup", "which day")).AddNode("time", heldFn(r, "time", ht, nil)).
				AddNode("after", heldFn(r, "after", nil, nil)).
				AddEdge("info", "day").AddEdge("info", "time").AddEdge("time", "after")
			cfg := func() graph.Config {
				return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "day")}}
			}
			g := build(t, b, cfg())
			first, _ := streamRun(t, g, agent.Text("go"), func(node string) {
				if node == "day" {
					ht.release() // time ends once the run is stopping
				}
			})
			require.Equal(t, multiagent.StatusInterrupted, first.Status)
			require.Equal(t, multiagent.StatusCompleted, first.Node("time").Status)
			require.Nil(t, first.Node("after"), "after is held")
			require.Len(t, first.Interrupts, 1)
			if restore {
				require.NoError(t, g.Close(ctx))
				g = build(t, b, cfg())
			}
			res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "y")))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status, "day's tool interrupts")
			require.NotNil(t, res.Node("after"), "the held node ran with the resume")
			assert.Equal(t, multiagent.StatusCompleted, res.Node("after").Status)
			require.Len(t, res.Interrupts, 1)
			res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "monday")))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, 1, r.count("fn:after"))
			assert.Equal(t, 1, r.count("fn:time"))
		})
	}
}

// SPEC M7: a Graph's result counts its nodes by status: completed,
// failed and interrupted. info → {fails, asks, done}: asks is gated.
func TestGraph_ResultCountsCompletedFailedAndInterruptedNodes(t *testing.T) {
	r := newRecorder()
	b := graph.NewBuilder().AddNode("info", fn(r, "info", nil)).AddNode("fails", fn(r, "fails", errors.New("boom"))).
		AddNode("asks", fn(r, "asks", nil)).AddNode("done", fn(r, "done", nil)).
		AddEdge("info", "fails").AddEdge("info", "asks").AddEdge("info", "done")
	res, err := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "asks")}}).Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Equal(t, 2, res.CompletedNodes)
	assert.Equal(t, 1, res.FailedNodes)
	assert.Equal(t, 1, res.InterruptedNodes)
}

// SPEC M12, I9, M11: an interrupt raised in a nested graph is streamed
// by the outer graph once, after the outer graph's save, naming the
// outer node that owns it; the nested run's own interrupt event is not
// passed through.
func TestGraphStream_ANestedInterruptIsStreamedOnceAfterTheOuterSave(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	st := memory.New()
	inner := graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which"))
	g := build(t, graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{})), graph.Config{ID: "g", Session: manager(t, st, "s")})
	var events []*multiagent.InterruptEvent
	var res *multiagent.Result
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.InterruptEvent:
			events = append(events, e)
			rec, err := st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindMultiAgent, ID: "g"})
			require.NoError(t, err)
			saved := string(rec.Data)
			for _, m := range rec.Messages {
				saved += string(m)
			}
			assert.Contains(t, saved, e.Interrupt.ID, "the outer run is saved before the interrupt is streamed")
		case *multiagent.ResultEvent:
			res = e.Result
		}
	}
	require.NotNil(t, res)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.Len(t, events, 1, "one event per interrupt of the run")
	assert.Equal(t, res.Interrupts[0].ID, events[0].Interrupt.ID)
	assert.Equal(t, "g/inner", events[0].Node)
}

// signalledSaves is a memory store that signals saved after every save
// that changed an orchestrator's record.
type signalledSaves struct {
	*memory.Store
	saved chan struct{}
}

func (s *signalledSaves) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	for _, c := range changes {
		if c.Key.Kind == persistence.KindMultiAgent {
			select {
			case s.saved <- struct{}{}:
			default: // a signal is pending: the reader loads the latest
			}
			break
		}
	}
	return v, err
}
