package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M8: a chain runs in order; a node with dependencies gets the task
// and its dependencies' outputs.
func TestGraph_ChainRunsInOrderAndPassesOutputs(t *testing.T) {
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddNode("c", textAgent(r, "c")).
		AddEdge("a", "b").AddEdge("b", "c")
	g := build(t, b, graph.Config{})
	res, err := g.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a", "b", "c"}, res.ExecutionOrder)
	assert.Equal(t, 3, res.ExecutionCount)
	assert.Equal(t, "c done", res.Text())
	assert.Equal(t, []string{"go"}, r.prompts("a"))
	require.Len(t, r.prompts("b"), 1)
	assert.Contains(t, r.prompts("b")[0], "Original Task: go")
	assert.Contains(t, r.prompts("b")[0], "From a:\n  - a: a done")
}

// SPEC M4, M5, I8: two concurrent nodes are gated while a third
// completes; the run returns both interrupts after the third finished.
// Answering one runs only that node; answering the other completes.
func TestGraph_ConcurrentGatesCollectThenOnlyAnsweredNodeRuns(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("info", textAgent(r, "info")).AddNode("day", textAgent(r, "day")).
		AddNode("time", textAgent(r, "time")).AddNode("weather", textAgent(r, "weather")).
		AddEdge("info", "day").AddEdge("info", "time").AddEdge("info", "weather")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "day", "weather")}})

	res, err := g.Invoke(ctx, agent.Text("what is up"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	st := statuses(res)
	assert.Equal(t, multiagent.StatusCompleted, st["time"], "the concurrent node runs to completion")
	assert.Equal(t, multiagent.StatusInterrupted, st["day"])
	assert.Equal(t, multiagent.StatusInterrupted, st["weather"])
	assert.Equal(t, 0, r.count("model:day"))
	ids := map[string]string{}
	for _, in := range res.Interrupts {
		assert.Equal(t, interrupt.SourceMultiAgentHook, in.Source)
		var reason map[string]string
		require.NoError(t, in.DecodeReason(&reason))
		ids[reason["node"]] = in.ID
	}
	assert.Equal(t, interrupt.BeforeNodeCallID("day", "approval"), ids["day"], "a top-level graph's gate ids are Strands' v1 form")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(ids["day"], "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "weather still waits")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, ids["weather"], res.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("model:day"))
	assert.Equal(t, 0, r.count("model:weather"))
	assert.Equal(t, 1, r.count("model:time"), "time is not run again")
	assert.Equal(t, 1, r.count("model:info"))

	first := res
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(ids["weather"], "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, res.Results, 4)
	assert.Equal(t, 4, res.CompletedNodes)
	assert.Equal(t, 1, first.InterruptedNodes)
	assert.GreaterOrEqual(t, res.Duration, first.Duration, "execution time sums across resumes (SPEC M7)")
	assert.Equal(t, 4, res.ExecutionCount)
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, 1, r.count("model:weather"))
	assert.Equal(t, 1, r.count("gate:day"))
	assert.Equal(t, 1, r.count("gate:weather"))
}

// SPEC M3: a denied gate cancels the node: CANCELLED with the hook's
// message, AfterNodeCall fires, nothing downstream runs.
func TestGraph_DeniedGateCancelsNodeAndItsDownstream(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var after []string
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("cleanup", textAgent(r, "cleanup")).
		AddNode("report", textAgent(r, "report")).AddEdge("a", "cleanup").AddEdge("cleanup", "report")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "cleanup"), hook.Func(func(ctx context.Context, ev *multiagent.AfterNodeCallEvent) error {
		after = append(after, ev.NodeID+":"+string(ev.Result.Status))
		return nil
	})}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, []string{"a:COMPLETED"}, after, "AfterNodeCall does not fire for a gated node")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "n")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	n := res.Node("cleanup")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusCancelled, n.Status)
	assert.Equal(t, "cleanup denied", n.Message)
	assert.Nil(t, res.Node("report"))
	assert.Equal(t, 0, r.count("model:report"))
	assert.Equal(t, 0, r.count("model:cleanup"))
	assert.Equal(t, []string{"a:COMPLETED", "cleanup:CANCELLED"}, after)
}

// SPEC I7, M5: a prompt while interrupted, an unknown id and a mixed input
// are rejected with nothing changed; the correct resume afterwards
// completes.
func TestGraph_BadResumesAreRejectedWithNothingChanged(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "b")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID

	_, err = g.Invoke(ctx, agent.Text("again"))
	assert.ErrorIs(t, err, interrupt.ErrResumeRequired)
	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond("nope", "y")))
	assert.ErrorIs(t, err, interrupt.ErrUnknownID)
	assert.Contains(t, err.Error(), "nope")
	mixed, err := agent.ParseInput([]byte(`[{"text":"hi"},{"interruptResponse":{"interruptId":"` + id + `","response":"y"}}]`))
	if err == nil {
		_, err = g.Invoke(ctx, mixed)
	}
	assert.ErrorIs(t, err, interrupt.ErrMixedInput)

	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, st.Status)
	require.Len(t, st.Interrupts, 1)
	assert.Equal(t, id, st.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("model:a"))

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:b"))
	assert.Equal(t, 1, r.count("model:a"))

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "a resume of a finished run")
}

// SPEC M4, M5: a node's agent interrupts from a tool inside the graph; the
// answer reaches that agent, which resumes (its model is not asked to
// start over) and the rest of the graph carries on.
func TestGraph_NodeAgentToolInterruptResumesThatAgent(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which")).AddNode("next", textAgent(r, "next")).
		AddEdge("ask", "next")
	g := build(t, b, graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, interrupt.SourceTool, in.Source)
	assert.Equal(t, interrupt.OwnedID("g/ask", interrupt.ToolCallID("t1", "which")), in.ID, "the id carries the node path")
	assert.Equal(t, 0, r.count("model:next"))

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "blue")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "ask done: answer blue", res.Node("ask").Text())
	assert.Equal(t, 1, r.count("tool:ask"))
	assert.Equal(t, 1, r.count("model:next"))
}

// SPEC I2: two nodes whose agents raise the same inner id do not collide;
// each answer reaches its own node.
func TestGraph_EqualInnerIDsInTwoNodesDoNotCollide(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("x", toolAgent(r, "x", "lookup", "which")).AddNode("y", toolAgent(r, "y", "lookup", "which"))
	g := build(t, b, graph.Config{ID: "g"})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	assert.NotEqual(t, res.Interrupts[0].ID, res.Interrupts[1].ID)
	answers := map[string]string{}
	var rs []interrupt.Response
	for _, in := range res.Interrupts {
		path, _ := interrupt.SplitOwner(in.ID)
		answers[path] = path + "-answer"
		rs = append(rs, interrupt.Respond(in.ID, path+"-answer"))
	}
	assert.Contains(t, answers, "g/x")
	assert.Contains(t, answers, "g/y")
	res, err = g.Invoke(ctx, agent.Resume(rs...))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "x done: answer g/x-answer", res.Node("x").Text())
	assert.Equal(t, "y done: answer g/y-answer", res.Node("y").Text())
}

// SPEC M6: a gate answered, then the node's own tool interrupt, then its
// answer: the gate is not raised a second time.
func TestGraph_AnsweredGateIsNotRaisedAgainAfterNodeInterrupt(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("cleanup", toolAgent(r, "cleanup", "delete_files", "confirm"))
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "cleanup")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.SourceMultiAgentHook, res.Interrupts[0].Source)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.SourceTool, res.Interrupts[0].Source, "the node's own interrupt")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "sure")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("gate:cleanup"), "no second gate")
	assert.Equal(t, 1, r.count("tool:cleanup"))
}

// SPEC M7: a result is a value: resuming the run does not change a result
// returned before (the TS SDK's results alias its live state).
func TestGraph_ResultsDoNotAliasTheRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "b")}})
	first, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(first.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, first.Status)
	assert.Equal(t, multiagent.StatusInterrupted, first.Node("b").Status)
	assert.Len(t, first.Interrupts, 1)
	assert.Equal(t, []string{"a"}, first.ExecutionOrder)
}

// SPEC I7: Resume() with no responses on a graph that waits for answers
// is refused, changing nothing, with an error that matches
// ErrEmptyResume and ErrResumeRequired, as an agent's does.
func TestGraph_EmptyResumeWhileInterruptedIsRefusedAsAnAgentRefusesIt(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{Hooks: []hook.Provider{gate(r, "a")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())
	_, err = g.Invoke(ctx, agent.Resume())
	require.ErrorIs(t, err, interrupt.ErrEmptyResume)
	require.ErrorIs(t, err, interrupt.ErrResumeRequired)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err, "the refusal changed nothing")
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC I7: Resume() with no responses on a graph that waits for nothing
// (a fresh one, or one whose run finished) is rejected like any other
// resume while not interrupted, with ErrNotInterrupted, as an agent
// rejects it.
func TestGraph_EmptyResumeWhileNotInterruptedIsNotInterrupted(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{})
	_, err := g.Invoke(ctx, agent.Resume())
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted, "a graph that never ran")
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	_, err = g.Invoke(ctx, agent.Resume())
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted, "a finished run")
	assert.Equal(t, 1, r.count("model:a"))
}
