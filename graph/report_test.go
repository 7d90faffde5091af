package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// heldAgent is a node whose tool signals started and then waits until
// release is closed (it returns "released") or its context ends.
func heldAgent(started chan<- struct{}, release <-chan struct{}) actors.Node {
	tl := tool.New("wait", "waits", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		return model.ToolTurn(model.Call("t1", "wait", map[string]any{})), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})
}

// SPEC R2, R6: a node report that comes from another actor when no
// invocation waits for it (here: for the node of a run a Close cut off,
// restored by a new graph that has not carried it on yet) is dropped:
// the orchestrator's actor does not fault on it, and the run is carried
// on as before.
func TestGraphActor_AReportNoInvocationWaitsForIsDropped(t *testing.T) {
	ctx := context.Background()
	var graphStops atomic.Int32
	cfg := actors.DefaultConfig()
	cfg.Observer = func(id actors.Identity, l actors.Lifecycle) {
		if id.Kind == "graph" && l == actors.Stopped {
			graphStops.Add(1)
		}
	}
	sys, err := actors.NewSystem(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	st := memory.New()
	started, release := make(chan struct{}, 2), make(chan struct{})
	b := func() *graph.Builder { return graph.NewBuilder().AddNode("slow", heldAgent(started, release)) }

	g := build(t, b(), graph.Config{System: sys, Session: manager(t, st, "s")})
	cut := make(chan error, 1)
	go func() {
		_, err := g.Invoke(ctx, agent.Text("go"))
		cut <- err
	}()
	<-started
	require.NoError(t, g.Close(ctx))
	require.ErrorIs(t, <-cut, actors.ErrOrchestratorClosed)

	g2 := build(t, b(), graph.Config{System: sys, Session: manager(t, st, "s")})
	before, err := g2.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusExecuting, before.Status, "the run was cut off")
	stops := graphStops.Load()
	for _, s := range []braidv1.NodeStatus{braidv1.NodeStatus_NODE_STATUS_COMPLETED, braidv1.NodeStatus_NODE_STATUS_EXECUTING} {
		g2.Binding().Send(&braidv1.NodeReport{NodeId: "slow", Run: 1, Result: &braidv1.NodeResult{NodeId: "slow", Status: s}})
	}
	after, err := g2.Status(ctx) // queued behind the reports
	require.NoError(t, err)
	assert.Equal(t, stops, graphStops.Load(), "the orchestrator's actor did not stop on the reports")
	assert.Equal(t, multiagent.StatusExecuting, after.Status)
	assert.Equal(t, before.Results, after.Results, "the reports changed nothing")
	require.Len(t, after.Results, 1)
	assert.Equal(t, multiagent.StatusExecuting, after.Results[0].Status, "the node the cut left running")

	close(release)
	res, err := g2.Invoke(ctx, agent.Input{}) // carry the cut-off run on
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	require.NotNil(t, res.Node("slow"))
	assert.Equal(t, multiagent.StatusCompleted, res.Node("slow").Status)
}

// SPEC R2, R6, M2: a node report from another actor whose result has a
// status no run ends with (none, PENDING, EXECUTING, a value the protocol
// does not have) fails the node, as a report without a result does: the
// run does not end COMPLETED with its node still EXECUTING, and a report
// of that run that comes later (the node's own, when it ends) is dropped
// instead of faulting the orchestrator's actor.
func TestGraphActor_AReportWithAStatusNoRunEndsWithFailsTheNode(t *testing.T) {
	ctx := context.Background()
	for _, s := range []braidv1.NodeStatus{braidv1.NodeStatus_NODE_STATUS_UNSPECIFIED, braidv1.NodeStatus_NODE_STATUS_PENDING,
		braidv1.NodeStatus_NODE_STATUS_EXECUTING, braidv1.NodeStatus(99)} {
		started, release := make(chan struct{}, 1), make(chan struct{})
		g := build(t, graph.NewBuilder().AddNode("slow", heldAgent(started, release)), graph.Config{})
		done := invokeAsync(ctx, g, agent.Text("go"))
		<-started
		g.Binding().Send(&braidv1.NodeReport{NodeId: "slow", Run: 1, Result: &braidv1.NodeResult{NodeId: "slow", Status: s}})
		o := <-done
		require.NoError(t, o.err, "%s", s)
		assert.Equal(t, multiagent.StatusFailed, o.res.Status, "%s", s)
		require.NotNil(t, o.res.Node("slow"), "%s", s)
		assert.Equal(t, multiagent.StatusFailed, o.res.Node("slow").Status, "%s", s)
		require.Error(t, o.res.Node("slow").Err, "%s", s)
		assert.Contains(t, o.res.Node("slow").Err.Error(), "no run ends with", "%s", s)

		// The run's own report, late: dropped.
		g.Binding().Send(&braidv1.NodeReport{NodeId: "slow", Run: 1, Result: &braidv1.NodeResult{NodeId: "slow",
			Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED}})
		st, err := g.Status(ctx)
		require.NoError(t, err, "%s: the orchestrator's actor lives on", s)
		assert.Equal(t, multiagent.StatusFailed, st.Status, "%s", s)
		assert.Equal(t, multiagent.StatusFailed, st.Node("slow").Status, "%s", s)
		close(release)
		require.NoError(t, g.Close(ctx))
	}
}

// SPEC R2, I8, M4: a node report from another actor that says its node
// is INTERRUPTED without an unanswered interrupt, or that carries an
// interrupt that is not one (no id, an unknown source; in its result or
// its gate), fails the node: the run does not stop INTERRUPTED waiting for
// answers no one can give (it refused every prompt and every resume), and
// its record never holds an interrupt it cannot save.
func TestGraphActor_AReportWithoutInterruptsToAnswerFailsTheNode(t *testing.T) {
	ctx := context.Background()
	interrupted := func(ins ...*braidv1.Interrupt) *braidv1.NodeResult {
		return &braidv1.NodeResult{NodeId: "slow", Status: braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, Interrupts: ins}
	}
	completed := &braidv1.NodeResult{NodeId: "slow", Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED}
	for name, rep := range map[string]*braidv1.NodeReport{
		"no interrupt":    {Result: interrupted()},
		"no id":           {Result: interrupted(&braidv1.Interrupt{Name: "x", Source: "tool"})},
		"unknown source":  {Result: interrupted(&braidv1.Interrupt{Id: "x", Name: "x", Source: "elsewhere"})},
		"answered":        {Result: interrupted(&braidv1.Interrupt{Id: "x", Name: "x", Source: "tool", Response: []byte(`"y"`)})},
		"gate without id": {Result: completed, Gate: []*braidv1.Interrupt{{Name: "x", Source: "multiagent-hook"}}},
	} {
		t.Run(name, func(t *testing.T) {
			started, release := make(chan struct{}, 1), make(chan struct{})
			g := build(t, graph.NewBuilder().AddNode("slow", heldAgent(started, release)),
				graph.Config{Session: manager(t, memory.New(), "s")})
			done := invokeAsync(ctx, g, agent.Text("go"))
			<-started
			rep.NodeId, rep.Run = "slow", 1
			g.Binding().Send(rep)
			o := <-done
			require.NoError(t, o.err, name)
			assert.Equal(t, multiagent.StatusFailed, o.res.Status, name)
			assert.Empty(t, o.res.Interrupts, name)
			require.NotNil(t, o.res.Node("slow"), name)
			assert.Equal(t, multiagent.StatusFailed, o.res.Node("slow").Status, name)
			require.Error(t, o.res.Node("slow").Err, name)

			_, err := g.Invoke(ctx, agent.Text("again"))
			assert.NoError(t, err, "%s: a new task is taken", name)
			close(release)
			require.NoError(t, g.Close(ctx))
		})
	}
}
