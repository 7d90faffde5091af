package graph_test

import (
	"context"
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
	"github.com/braidhq/braid/tool"
)

// The seed's rules for interrupts in a graph, on BeforeNodeCallEvent: all
// hooks configured on the interrupted event execute and may interrupt,
// and a single hook raises several interrupts one at a time.

// gateNamed is a BeforeNodeCall hook that interrupts node with name and
// counts its calls under "hook:<name>".
func gateNamed(r *recorder, node, name string) hook.Provider {
	return hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		r.add("hook:" + name)
		if ev.NodeID != node {
			return nil
		}
		_, err := ev.Interrupt(name, nil)
		return err
	})
}

// SPEC I4, I6, I8, M3: two hooks on one BeforeNodeCall both run and both
// interrupt; the run lists both, in hook order. Answering one leaves the
// node waiting for the other (it does not run); answering the other runs
// it once.
func TestGraph_AllGateHooksRunAndAPartialAnswerKeepsTheNodeWaiting(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gateNamed(r, "b", "security"), gateNamed(r, "b", "budget")}})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	assert.Equal(t, "security", res.Interrupts[0].Name)
	assert.Equal(t, "budget", res.Interrupts[1].Name)
	assert.Equal(t, 2, r.count("hook:budget"), "the second hook ran for a and for b, after the first interrupted")
	security, budget := res.Interrupts[0].ID, res.Interrupts[1].ID

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(security, "ok")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, budget, res.Interrupts[0].ID)
	assert.Equal(t, 0, r.count("model:b"))

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(budget, "ok")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:b"))
	assert.Equal(t, 1, r.count("model:a"))
}

// SPEC I5, M3: one BeforeNodeCall hook interrupts, is answered, then
// interrupts again with another name (whose reason carries the first
// answer); the node runs only after the second answer.
func TestGraph_GateHookInterruptsAgainAfterItsAnswer(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	h := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		r1, err := ev.Interrupt("first", nil)
		if err != nil {
			return err
		}
		s, _ := r1.String()
		_, err = ev.Interrupt("second", "after "+s)
		return err
	})
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{h}})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "first", res.Interrupts[0].Name)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "r1")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "second", res.Interrupts[0].Name)
	assert.Equal(t, interrupt.SourceMultiAgentHook, res.Interrupts[0].Source)
	assert.JSONEq(t, `"after r1"`, string(res.Interrupts[0].Reason))
	assert.Equal(t, 0, r.count("model:b"))
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "r2")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:b"))
}

// SPEC I4: the same name raised by two hooks of one BeforeNodeCall is an
// error: the node fails with it, before it runs.
func TestGraph_DuplicateGateNameFailsTheNodeBeforeItRuns(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a"))
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gateNamed(r, "a", "same"), gateNamed(r, "a", "same")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	n := res.Node("a")
	require.NotNil(t, n)
	require.Error(t, n.Err)
	assert.ErrorIs(t, n.Err, interrupt.ErrDuplicateName)
	assert.Empty(t, res.Interrupts)
	assert.Equal(t, 0, r.count("model:a"))
}

// SPEC I3, M3: a gate hook that ignores the error its Interrupt returned
// still stops the node: the run is INTERRUPTED with that interrupt.
func TestGraph_SwallowedGateInterruptStillStopsTheNode(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	h := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID == "b" {
			_, _ = ev.Interrupt("approval", nil)
		}
		return nil
	})
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	g := build(t, b, graph.Config{Hooks: []hook.Provider{h}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, interrupt.BeforeNodeCallID("b", "approval"), res.Interrupts[0].ID)
	assert.Equal(t, 0, r.count("model:b"))
}

// SPEC M4, M5, I6: a node's agent raises two interrupts at once (two
// concurrent tools); answered one at a time, the
// agent resumes each time (its model is not called again before the
// tools are done) and each tool runs once after its answer.
func TestGraph_NodeAgentRaisesTwoInterruptsAnsweredOneAtATime(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	ask := func(name string) tool.Tool {
		return tool.New(name, "test tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			ans, err := tc.Interrupt("q"+name, nil)
			if err != nil {
				return "", err
			}
			r.add("tool:" + name)
			s, _ := ans.String()
			return s, nil
		})
	}
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn(trs[0].Text() + trs[1].Text()), nil
		}
		r.add("model")
		return model.ToolTurn(model.Call("t1", "a", map[string]any{}), model.Call("t2", "b", map[string]any{})), nil
	})
	b := graph.NewBuilder().AddNode("n", agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{ask("a"), ask("b")}}))
	g := build(t, b, graph.Config{ID: "g"})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	ids := map[string]string{} // the tools raise concurrently: in either order
	for _, in := range res.Interrupts {
		ids[in.Name] = in.ID
	}
	require.Len(t, ids, 2)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(ids["qb"], "B")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, ids["qa"], res.Interrupts[0].ID)
	assert.Equal(t, 1, r.count("tool:b"))
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(ids["qa"], "A")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "AB", res.Text())
	assert.Equal(t, 1, r.count("model"), "the node's agent resumed, it did not start again")
	assert.Equal(t, 1, r.count("tool:a"))
	assert.Equal(t, 1, r.count("tool:b"))
}

// approvingAgent is a node whose agent calls delete_files (tool use t1)
// behind two of the seed's hooks: a BeforeToolsEvent batch approval and a
// BeforeToolCallEvent approval that cancels the tool unless the answer
// is "y". The tool's runs count under "tool:<id>", the model's first
// calls under "model:<id>".
func approvingAgent(r *recorder, id string) actors.Node {
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		r.add("tool:" + id)
		return "deleted", nil
	})
	batch := hook.Func(func(ctx context.Context, ev *agent.BeforeToolsEvent) error {
		_, err := ev.Interrupt("myapp-batch-approval", nil)
		return err
	})
	approve := hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
		ans, err := ev.Interrupt("myapp-approval", map[string]string{"node": id})
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelTool("User denied permission to delete files")
		}
		return nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn(id + " done: " + trs[0].Text()), nil
		}
		r.add("model:" + id)
		return model.ToolTurn(model.Call("t1", "delete_files", map[string]any{})), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{batch, approve}})
}

// SPEC M4, M10, I2: interrupts raised by a node's agent from its own
// hooks (the seed's single-agent patterns inside a node: BeforeToolsEvent,
// then BeforeToolCallEvent) surface with source hook and ids under the
// node's path; each is answered by a graph built anew on a fresh runtime
// from the session, and the node's tool runs once, after both answers.
func TestGraph_NodeAgentHookInterruptsResumeOnAFreshRuntime(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	open := func() *graph.Graph {
		b := graph.NewBuilder().AddNode("inspector", textAgent(r, "inspector")).
			AddNode("cleanup", approvingAgent(r, "cleanup")).AddEdge("inspector", "cleanup")
		return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t)})
	}

	g := open()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, "myapp-batch-approval", in.Name)
	assert.Equal(t, interrupt.SourceHook, in.Source)
	assert.Equal(t, interrupt.OwnedID("g/cleanup", interrupt.BeforeToolsID("myapp-batch-approval")), in.ID)
	require.NoError(t, g.Close(ctx))

	g = open()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	in = res.Interrupts[0]
	assert.Equal(t, "myapp-approval", in.Name)
	assert.Equal(t, interrupt.OwnedID("g/cleanup", interrupt.BeforeToolCallID("t1", "myapp-approval")), in.ID)
	assert.Equal(t, 0, r.count("tool:cleanup"))
	require.NoError(t, g.Close(ctx))

	g = open()
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, "cleanup done: deleted", res.Node("cleanup").Text())
	assert.Equal(t, 1, r.count("tool:cleanup"))
	assert.Equal(t, 1, r.count("model:cleanup"), "the model is not asked again on the resumes")
	assert.Equal(t, 1, r.count("model:inspector"))
}

// SPEC I7: once the run has completed, interrupt responses (given in Go
// or as Strands JSON, even with an id the run once raised) are rejected
// with ErrNotInterrupted and run nothing (Strands TS defect #4171).
func TestGraph_ResponsesAfterTheRunCompletedAreRejected(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a"))
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "a")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	in, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"` + id + `","response":"y"}}]`))
	require.NoError(t, err)
	_, err = g.Invoke(ctx, in)
	assert.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	assert.Equal(t, 1, r.count("model:a"))
}

// SPEC I7, M5 (the seed: "the response must be JSON-serializable"): a
// graph waits for a gate and for a node's own tool; a resume that answers
// the gate well and the tool with a value that cannot be encoded as JSON
// is rejected whole, with ErrAnswer naming the tool's interrupt: nothing
// runs and the gate's answer is not taken, so a resume that answers only
// the tool still leaves the gate waiting.
func TestGraph_AnAnswerThatIsNotJSONIsRejectedWhole(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	b := graph.NewBuilder().AddNode("inspector", toolAgent(r, "inspector", "inspect", "which")).
		AddNode("cleanup", textAgent(r, "cleanup"))
	g := build(t, b, graph.Config{Hooks: []hook.Provider{gate(r, "cleanup")}})

	res, err := g.Invoke(ctx, agent.Text("inspect and clean up"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	var gateID, toolID string
	for _, in := range res.Interrupts {
		if in.Source == interrupt.SourceMultiAgentHook {
			gateID = in.ID
		} else {
			toolID = in.ID
		}
	}
	require.NotEmpty(t, gateID)
	require.NotEmpty(t, toolID)

	_, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y"), interrupt.Respond(toolID, make(chan int))))
	require.ErrorIs(t, err, interrupt.ErrAnswer)
	var idErr *interrupt.IDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, toolID, idErr.ID)
	assert.Zero(t, r.count("tool:inspector"), "nothing runs")
	assert.Zero(t, r.count("model:cleanup"), "nothing runs")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(toolID, "all")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "the gate's answer was not taken")
	assert.Equal(t, []string{gateID}, []string{res.Interrupts[0].ID})
	assert.Equal(t, 1, r.count("tool:inspector"))

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:cleanup"))
}
