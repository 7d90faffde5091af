package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

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
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// askProto sends msg to g's actor from inbox and returns the reply, a
// protobuf message that serializes.
func askProto(t *testing.T, g *graph.Graph, inbox *actors.Inbox, msg proto.Message) proto.Message {
	t.Helper()
	g.Binding().Request(msg, inbox)
	rep, err := inbox.Receive(context.Background())
	require.NoError(t, err)
	pm, ok := rep.(proto.Message)
	require.True(t, ok, "%T", rep)
	_, err = proto.Marshal(pm)
	require.NoError(t, err)
	return pm
}

// blockingAgent is a node whose tool signals started and then blocks until
// its context ends.
func blockingAgent(started chan<- struct{}) actors.Node {
	tl := tool.New("wait", "blocks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("never"), nil
		}
		return model.ToolTurn(model.Call("t1", "wait", map[string]any{})), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})
}

// SPEC R3, M1: while a node's tool runs, the graph's actor answers Status
// (the node EXECUTING) and Cancel at once; the cancelled node ends
// CANCELLED, nothing downstream runs, and the run is CANCELLED.
func TestGraphActor_StatusAndCancelAnsweredWhileANodeRuns(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	started := make(chan struct{}, 1)
	b := graph.NewBuilder().AddNode("slow", blockingAgent(started)).AddNode("next", textAgent(r, "next")).
		AddEdge("slow", "next")
	g := build(t, b, graph.Config{})
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(ctx, agent.Text("go"))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	st, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusExecuting, st.Status)
	ok, err := g.Cancel(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	assert.Equal(t, multiagent.StatusCancelled, res.Node("slow").Status)
	assert.Nil(t, res.Node("next"))
	assert.Equal(t, 0, r.count("model:next"))

	ok, err = g.Cancel(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing runs")
}

// SPEC R2, R3: a plain actor asks a running graph for its status and
// cancels it by protobuf messages only, each answered at once while a
// node's tool runs; the invocation it sent then ends CANCELLED.
func TestGraphActor_StatusAndCancelByProtobufMessages(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	started := make(chan struct{}, 1)
	r := newRecorder()
	b := graph.NewBuilder().AddNode("slow", blockingAgent(started)).AddNode("next", textAgent(r, "next")).AddEdge("slow", "next")
	g := build(t, b, graph.Config{System: sys})
	ask := func(msg proto.Message) proto.Message {
		t.Helper()
		inbox := actors.NewInbox(sys)
		defer inbox.Close()
		return askProto(t, g, inbox, msg)
	}
	st, ok := ask(&braidv1.MultiAgentStatusRequest{}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_PENDING, st.GetStatus(), "nothing ran yet")

	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	invoked := actors.NewInbox(sys)
	t.Cleanup(invoked.Close)
	g.Binding().Request(&braidv1.MultiAgentInvoke{Input: task}, invoked)
	<-started
	st, ok = ask(&braidv1.MultiAgentStatusRequest{}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_EXECUTING, st.GetStatus())

	c, ok := ask(&braidv1.MultiAgentCancel{}).(*braidv1.MultiAgentCancelled)
	require.True(t, ok)
	assert.True(t, c.GetWasRunning())
	rep, err := invoked.Receive(ctx)
	require.NoError(t, err)
	res, ok := rep.(*braidv1.MultiAgentResult)
	require.True(t, ok, "%T", rep)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_CANCELLED, res.GetStatus())
	assert.Equal(t, 0, r.count("model:next"))

	c, ok = ask(&braidv1.MultiAgentCancel{}).(*braidv1.MultiAgentCancelled)
	require.True(t, ok)
	assert.False(t, c.GetWasRunning(), "nothing runs")
}

// SPEC R2: a plain actor drives the graph's orchestrator by protobuf
// messages only: a task, a rejected prompt while interrupted (a typed
// error that survives the trip), and the resume; every reply is a
// protobuf message that serializes.
func TestGraphActor_DrivenByProtobufMessages(t *testing.T) {
	r := newRecorder()
	sys := actorstest.System(t)
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{System: sys, Hooks: []hook.Provider{gate(r, "b")}})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	ask := func(msg proto.Message) proto.Message {
		t.Helper()
		return askProto(t, g, inbox, msg)
	}
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	res, ok := ask(&braidv1.MultiAgentInvoke{Input: task}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus())
	require.Len(t, res.GetInterrupts(), 1)

	rej, ok := ask(&braidv1.MultiAgentInvoke{Input: task}).(*braidv1.Error)
	require.True(t, ok)
	assert.ErrorIs(t, agent.ErrorFromWire(rej), interrupt.ErrResumeRequired)

	resume := &braidv1.AgentInput{Resume: true, Responses: []*braidv1.InterruptResponse{{InterruptId: res.GetInterrupts()[0].GetId(), Response: []byte(`"y"`)}}}
	res, ok = ask(&braidv1.MultiAgentInvoke{Input: resume}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
	assert.Equal(t, []string{"a", "b"}, res.GetExecutionOrder())
}

// SPEC R2, M12: a plain actor streams a run by protobuf messages only
// (MultiAgentInvoke with stream set): it gets the run's MultiAgentEvents,
// each a protobuf message that serializes (node starts, the nodes' agent
// events, node stops, the interrupt once saved), and then the result.
func TestGraphActor_StreamedByProtobufMessages(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	sys := actorstest.System(t)
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{System: sys, Hooks: []hook.Provider{gate(r, "b")}})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	g.Binding().Request(&braidv1.MultiAgentInvoke{Input: task, Stream: true}, inbox)
	var kinds []string
	var res *braidv1.MultiAgentResult
	for res == nil {
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err)
		pm, ok := rep.(proto.Message)
		require.True(t, ok, "%T", rep)
		_, err = proto.Marshal(pm)
		require.NoError(t, err)
		switch m := pm.(type) {
		case *braidv1.MultiAgentEvent:
			switch e := m.GetEvent().(type) {
			case *braidv1.MultiAgentEvent_NodeStart:
				kinds = append(kinds, "start "+m.GetNodePath())
			case *braidv1.MultiAgentEvent_NodeStop:
				kinds = append(kinds, "stop "+m.GetNodePath()+" "+e.NodeStop.GetStatus().String())
			case *braidv1.MultiAgentEvent_NodeEvent:
				if len(kinds) == 0 || kinds[len(kinds)-1] != "events "+m.GetNodePath() {
					kinds = append(kinds, "events "+m.GetNodePath())
				}
			case *braidv1.MultiAgentEvent_Interrupt:
				kinds = append(kinds, "interrupt "+e.Interrupt.GetName())
			}
		case *braidv1.MultiAgentResult:
			res = m
		default:
			t.Fatalf("unexpected %T: %v", pm, pm)
		}
	}
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus())
	p := graph.DefaultID + "/"
	assert.Equal(t, []string{"start " + p + "a", "events " + p + "a", "stop " + p + "a NODE_STATUS_COMPLETED",
		"stop " + p + "b NODE_STATUS_INTERRUPTED", "interrupt approval"}, kinds)

	// A streamed invocation that is refused is answered with the error.
	g.Binding().Request(&braidv1.MultiAgentInvoke{Input: task, Stream: true}, inbox)
	rep, err := inbox.Receive(ctx)
	require.NoError(t, err)
	rej, ok := rep.(*braidv1.Error)
	require.True(t, ok, "%T", rep)
	assert.ErrorIs(t, agent.ErrorFromWire(rej), interrupt.ErrResumeRequired)
}

// SPEC S5, R2: an input from another process whose message is not JSON is
// refused (ErrBadTask, across the trip) before anything is stored, so the
// run's record never holds it; the graph then takes a good task.
func TestGraphActor_RefusesAnInputThatIsNotJSON(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	sys := actorstest.System(t)
	st := memory.New()
	g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{System: sys, Session: manager(t, st, "s")})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	ask := func(msg proto.Message) any {
		t.Helper()
		g.Binding().Request(msg, inbox)
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err)
		return rep
	}
	for _, in := range []*braidv1.AgentInput{
		{Messages: [][]byte{[]byte(`{"role":"user","content":[{"text":"go"}]`)}},
		{Resume: true, Responses: []*braidv1.InterruptResponse{{InterruptId: "x", Response: []byte(`{`)}}},
	} {
		rej, ok := ask(&braidv1.MultiAgentInvoke{Input: in}).(*braidv1.Error)
		require.True(t, ok)
		assert.ErrorIs(t, agent.ErrorFromWire(rej), actors.ErrBadTask)
	}
	recs, err := st.Session(ctx, "s")
	require.NoError(t, err)
	for _, rec := range recs {
		assert.NotEqual(t, persistence.KindMultiAgent, rec.Key.Kind, "nothing of the run was stored")
	}
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	res, ok := ask(&braidv1.MultiAgentInvoke{Input: task}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
}

// SPEC R6, S5: a node report that comes as a protobuf message without a
// result (from another actor: anything holding the graph's binding can
// send one) fails the node instead of the orchestrator's actor.
func TestGraphActor_AReportWithoutAResultFailsTheNode(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	g := build(t, graph.NewBuilder().AddNode("slow", blockingAgent(started)), graph.Config{})
	done := invokeAsync(ctx, g, agent.Text("go"))
	<-started
	g.Binding().Send(&braidv1.NodeReport{NodeId: "slow", Run: 1})
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, multiagent.StatusFailed, o.res.Status)
	require.Len(t, o.res.Results, 1)
	require.Error(t, o.res.Results[0].Err)
	assert.Contains(t, o.res.Results[0].Err.Error(), "no result")
}

// SPEC M8: a node that runs longer than NodeTimeout fails with a message
// naming it and the timeout; the rest of the graph is not held up by it.
func TestGraph_NodeTimeoutFailsTheNode(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	started := make(chan struct{}, 1)
	b := graph.NewBuilder().AddNode("slow", blockingAgent(started)).AddNode("quick", textAgent(r, "quick"))
	// quick must end well within the timeout, on a busy machine too: only
	// slow is meant to reach it.
	res, err := build(t, b, graph.Config{NodeTimeout: time.Second}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	slow := res.Node("slow")
	require.NotNil(t, slow)
	require.Error(t, slow.Err)
	assert.ErrorIs(t, slow.Err, actors.ErrNodeTimeout)
	assert.Contains(t, slow.Err.Error(), "Node 'slow' execution timed out after 1s")
	assert.Equal(t, multiagent.StatusCompleted, res.Node("quick").Status)
}

// SPEC M8: the run's execution timeout ends it FAILED, with a message
// naming the limit, before the next node starts.
func TestGraph_ExecutionTimeoutStopsScheduling(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	// slow outlasts the run's budget: it completes after it.
	slow := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		<-time.After(250 * time.Millisecond)
		return []model.ContentBlock{model.Text("slow out")}, nil
	})
	b := graph.NewBuilder().AddNode("slow", slow).AddNode("next", textAgent(r, "next")).AddEdge("slow", "next")
	res, err := build(t, b, graph.Config{ExecutionTimeout: 100 * time.Millisecond}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Equal(t, "Execution timed out: 0.1s", res.Message)
	assert.Equal(t, multiagent.StatusCompleted, res.Node("slow").Status)
	assert.Equal(t, 0, r.count("model:next"))
}

// SPEC R2, R5, I7: a message the graph's orchestrator does not take
// (an agent's protobuf message, a node's run, a reply, a plain Go value)
// is answered to its sender with an Error that decodes to
// actors.ErrUnknownMessage, at once, whether the graph is idle, running or
// interrupted; without a sender it is dropped. Either way the run is as
// it was, and the invocation it came during ends as it would have.
func TestGraphActor_AnswersAMessageItDoesNotTakeWithAnError(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	r := newRecorder()
	started, release := make(chan struct{}, 1), make(chan struct{})
	b := graph.NewBuilder().AddNode("slow", heldAgent(started, release)).AddNode("b", textAgent(r, "b")).AddEdge("slow", "b")
	g := build(t, b, graph.Config{System: sys, Hooks: []hook.Provider{gate(r, "b")}})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	ask := func(msg any) proto.Message {
		t.Helper()
		g.Binding().Request(msg, inbox)
		rep, err := inbox.Receive(ctxLimit(t))
		require.NoError(t, err, "a reply to %T", msg)
		pm, ok := rep.(proto.Message)
		require.True(t, ok, "reply %T to %T", rep, msg)
		_, err = proto.Marshal(pm)
		require.NoError(t, err, "reply %T to %T", rep, msg)
		return pm
	}
	foreign := []any{&braidv1.AgentInvoke{}, &braidv1.AgentStatusRequest{}, &braidv1.AgentCancel{}, &braidv1.NodeRun{NodeId: "slow", Run: 1},
		&braidv1.MultiAgentResult{}, &braidv1.Error{}, "plain", 42, struct{}{}}
	check := func(phase string, status braidv1.NodeStatus) {
		t.Helper()
		before, ok := ask(&braidv1.MultiAgentStatusRequest{}).(*braidv1.MultiAgentResult)
		require.True(t, ok, phase)
		require.Equal(t, status, before.GetStatus(), phase)
		for _, m := range foreign {
			g.Binding().Send(m)
			rej, ok := ask(m).(*braidv1.Error)
			require.True(t, ok, "%s: %T", phase, m)
			err := agent.ErrorFromWire(rej)
			assert.ErrorIs(t, err, actors.ErrUnknownMessage, "%s: %T", phase, m)
			assert.Contains(t, err.Error(), fmt.Sprintf("%T", m), "%s: the error names the message", phase)
		}
		after, ok := ask(&braidv1.MultiAgentStatusRequest{}).(*braidv1.MultiAgentResult)
		require.True(t, ok, phase)
		assert.True(t, proto.Equal(before, after), "%s: nothing changed:\n%v\n%v", phase, before, after)
	}

	check("idle", braidv1.NodeStatus_NODE_STATUS_PENDING)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	invoked := actors.NewInbox(sys)
	t.Cleanup(invoked.Close)
	g.Binding().Request(&braidv1.MultiAgentInvoke{Input: task}, invoked)
	<-started
	check("running", braidv1.NodeStatus_NODE_STATUS_EXECUTING)
	close(release)
	rep, err := invoked.Receive(ctx)
	require.NoError(t, err)
	res, ok := rep.(*braidv1.MultiAgentResult)
	require.True(t, ok, "%T", rep)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus(), "b waits for its approval")
	check("interrupted", braidv1.NodeStatus_NODE_STATUS_INTERRUPTED)

	resume := &braidv1.AgentInput{Resume: true, Responses: []*braidv1.InterruptResponse{{InterruptId: res.GetInterrupts()[0].GetId(), Response: []byte(`"y"`)}}}
	res, ok = ask(&braidv1.MultiAgentInvoke{Input: resume}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
	assert.Equal(t, []string{"slow", "b"}, res.GetExecutionOrder())
}

// ctxLimit is a context that ends after a limit that only turns a hang
// into a failure.
func ctxLimit(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
