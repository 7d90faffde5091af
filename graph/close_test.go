package graph_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// Close answers an invocation that is running (its context cannot end,
// so only the close can answer it) and every later call with
// ErrOrchestratorClosed.
func TestGraph_CloseAnswersRunningAndLaterInvocations(t *testing.T) {
	ctx := context.Background()
	started, stopped := make(chan struct{}), make(chan struct{})
	slow := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	})
	g, err := graph.NewBuilder().AddNode("slow", slow).Build(ctx, graph.Config{System: actorstest.System(t)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, agent.Text("go"))
		done <- err
	}()
	<-started
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, g.Close(cctx))
	select {
	case err := <-done:
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	case <-cctx.Done():
		t.Fatal("Invoke still blocked after Close returned")
	}
	_, err = g.Invoke(cctx, agent.Text("again"))
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	for _, err := range g.Stream(cctx, agent.Text("again")) {
		require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	}
	_, err = g.Status(cctx)
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)
	select {
	case <-stopped:
	case <-cctx.Done():
		t.Fatal("Close did not stop the running node")
	}
}

// SPEC R5: a Close whose context ends still closes the graph: its
// orchestrator and its nodes' agents are stopped and their identities
// released, so the same graph on the same session can be built again in
// the same System once a later Close, which waits for the same close,
// returns. Before, such a Close left every identity bound for the life of
// the System, and a later Close did nothing.
func TestGraph_CloseWhoseContextEndedStillReleasesEveryIdentity(t *testing.T) {
	ctx := context.Background()
	sys, st, r := actorstest.System(t), memory.New(), newRecorder()
	newGraph := func() (*graph.Graph, error) {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b").
			Build(ctx, graph.Config{ID: "g", Session: manager(t, st, "s1"), System: sys})
	}
	g, err := newGraph()
	require.NoError(t, err)
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)

	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Close(ended); err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	wctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	require.NoError(t, g.Close(wctx), "a later Close waits for the same close")
	_, err = g.Invoke(wctx, agent.Text("again"))
	require.ErrorIs(t, err, actors.ErrOrchestratorClosed)

	g2, err := newGraph()
	require.NoError(t, err, "every identity was released")
	defer g2.Close(ctx)
	st2, err := g2.Status(wctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, st2.Status, "the session's run, as saved")
}

// cutOffAgent is a node whose agent calls fetch once and answers with
// what it returned; fetch's first run blocks until its context ends,
// closes cut if it is not nil, and returns the context's error; later
// runs return "fetched".
func cutOffAgent(runs *atomic.Int32, started, cut chan<- struct{}, opts ...tool.Option) actors.Node {
	return agentnode.Agent(agent.Config{Model: agenttest.FetchOnce(), Tools: []tool.Tool{agenttest.BlockingFetch(runs, started, cut, opts...)}})
}

// closedMidTool builds the graph b gives on session "s" of st, invokes
// it, closes it once started signals (a tool runs), and builds it again on
// the session in a fresh System (a new process).
func closedMidTool(t *testing.T, st persistence.Store, b func() *graph.Builder, started <-chan struct{}) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g := build(t, b(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
	errc := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, agent.Text("go"))
		errc <- err
	}()
	<-started
	require.NoError(t, g.Close(ctx))
	require.ErrorIs(t, <-errc, actors.ErrOrchestratorClosed)
	return build(t, b(), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
}

// SPEC S6, M10: a graph closed while a node's tool runs is carried on
// later as after a crash, and so is the tool: the context error the Close
// gave it is not its result, so the carried-on run runs it again, and the
// model sees what it returned then. Before, the cut was recorded as the
// tool's error result and the carried-on run answered with it.
func TestGraph_S6_AToolCutOffByCloseRunsAgainWhenTheRunIsCarriedOn(t *testing.T) {
	st := memory.New()
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	b := func() *graph.Builder { return graph.NewBuilder().AddNode("n", cutOffAgent(&runs, started, nil)) }
	g2 := closedMidTool(t, st, b, started)
	res := finish(t, g2)
	assert.Equal(t, int32(2), runs.Load(), "fetch ran again")
	assert.Equal(t, "saw: fetched", res.Node("n").Text())
}

// SPEC S6: an at-most-once tool cut off by a Close is treated as one cut
// off by a crash: the carried-on run does not run it again but stops with
// a braid.recovery interrupt for it.
func TestGraph_S6_AnAtMostOnceToolCutOffByCloseAsksBeforeRunningAgain(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	b := func() *graph.Builder {
		return graph.NewBuilder().AddNode("n", cutOffAgent(&runs, started, nil, tool.AtMostOnce()))
	}
	g2 := closedMidTool(t, st, b, started)
	res, err := g2.Invoke(ctx, agent.Input{}) // carry the cut-off run on
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
	assert.Equal(t, int32(1), runs.Load(), "not run again unasked")
}

// closeAfter is a node that completes at once and whose Close waits until
// wait is closed: listed before another node, it holds back that node's
// Close (a graph closes its nodes in order) until wait is closed.
type closeAfter struct{ wait <-chan struct{} }

func (n closeAfter) OpenNode(context.Context, actors.NodeEnv) (actors.NodeRunner, error) {
	return n, nil
}
func (n closeAfter) RunNode(_ context.Context, run *braidv1.NodeRun) *braidv1.NodeResult {
	return &braidv1.NodeResult{NodeId: run.GetNodeId(), Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED}
}
func (n closeAfter) Progress(context.Context) (int64, error) { return 0, nil }
func (n closeAfter) Close(context.Context) error {
	<-n.wait
	return nil
}

// SPEC S6, M10: a graph's Close stops its node actors before it closes
// the nodes' agents; the node actor's stop must reach a running tool as
// the Close it is, not as a caller that went away. Here the agent's own
// Close comes only after the tool saw its context end (node "first",
// closed before "n", waits for that): before, the tool was cut off with
// a plain "context canceled", which was recorded as its result (the
// model answered with it, and an at-most-once tool's start mark was
// dropped), so the run carried on later neither ran it again nor asked
// first. In a plain Close the two race, and either could win.
func TestGraph_S6_AToolCutOffByTheNodesStopIsCutOffAsByACrash(t *testing.T) {
	for _, once := range []bool{false, true} {
		name := "at least once"
		var opts []tool.Option
		if once {
			name, opts = "at most once", []tool.Option{tool.AtMostOnce()}
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := memory.New()
			var runs atomic.Int32
			started := make(chan struct{}, 1)
			cut := make(chan struct{})
			b := func(wait <-chan struct{}) *graph.Builder {
				return graph.NewBuilder().AddNode("first", closeAfter{wait: wait}).
					AddNode("n", cutOffAgent(&runs, started, cut, opts...))
			}
			g := build(t, b(cut), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
			errc := make(chan error, 1)
			go func() {
				_, err := g.Invoke(ctx, agent.Text("go"))
				errc <- err
			}()
			<-started
			require.NoError(t, g.Close(ctx))
			require.ErrorIs(t, <-errc, actors.ErrOrchestratorClosed)

			open := make(chan struct{})
			close(open)
			g2 := build(t, b(open), graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)})
			res, err := g2.Invoke(ctx, agent.Input{}) // carry the cut-off run on
			require.NoError(t, err)
			if once {
				require.Equal(t, multiagent.StatusInterrupted, res.Status, "node n: %q", res.Node("n").Text())
				require.Len(t, res.Interrupts, 1)
				assert.Equal(t, agent.RecoveryInterrupt, res.Interrupts[0].Name)
				assert.Equal(t, int32(1), runs.Load(), "not run again unasked")
				return
			}
			require.Equal(t, multiagent.StatusCompleted, res.Status)
			assert.Equal(t, "saw: fetched", res.Node("n").Text())
			assert.Equal(t, int32(2), runs.Load(), "fetch ran again")
		})
	}
}

// SPEC S6, M11: a graph closed while a nested graph's node's tool runs is
// cut off at every level, as by a crash: the nested run is not cancelled
// (its result would then be the node's, CANCELLED), so the run carried on
// later resumes the nested graph, runs the cut-off tool again, and
// completes.
func TestGraph_S6_ANestedRunCutOffByItsParentsCloseIsCarriedOnNotCancelled(t *testing.T) {
	st := memory.New()
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	b := func() *graph.Builder {
		inner := graph.NewBuilder().AddNode("n", cutOffAgent(&runs, started, nil))
		return graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{}))
	}
	g2 := closedMidTool(t, st, b, started)
	res := finish(t, g2)
	assert.Equal(t, int32(2), runs.Load(), "fetch ran again")
	inner := res.Node("inner")
	require.NotNil(t, inner)
	require.NotNil(t, inner.Multi)
	assert.Equal(t, "saw: fetched", inner.Multi.Node("n").Text())
}
