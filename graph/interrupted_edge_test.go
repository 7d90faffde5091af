package graph_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// askingAgent is a node whose agent answers its k-th prompt with
// "<id> run k", except for the prompts listed in ask: for those it calls
// a tool that interrupts (name "<id>-ask") and then answers
// "<id> answered <answer>". The tool closes asked (if set) once it has
// raised its interrupt, and waits for wait (if set) before raising it. It
// records its prompts under id.
func askingAgent(r *recorder, id string, ask map[int]bool, asked, wait chan struct{}) actors.Node {
	var once sync.Once
	tl := tool.New(id+"_tool", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if wait != nil {
			<-wait
		}
		ans, err := tc.Interrupt(id+"-ask", nil)
		if err != nil {
			if asked != nil {
				once.Do(func() { close(asked) })
			}
			return "", err
		}
		s, _ := ans.String()
		return s, nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if res := last.ToolResults(); len(res) > 0 {
			return model.TextTurn(id + " answered " + res[0].Text()), nil
		}
		r.prompt(id, last.Text())
		k := len(r.prompts(id))
		if ask[k] {
			return model.ToolTurn(model.Call(fmt.Sprintf("t%d", k), id+"_tool", map[string]any{})), nil
		}
		return model.TextTurn(fmt.Sprintf("%s run %d", id, k)), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})
}

func interruptNamed(t *testing.T, res *multiagent.Result, name string) interrupt.Interrupt {
	t.Helper()
	for _, in := range res.Interrupts {
		if in.Name == name {
			return in
		}
	}
	require.Failf(t, "no interrupt", "%q in %+v", name, res.Interrupts)
	return interrupt.Interrupt{}
}

// SPEC M5, I8: an edge into a node whose agent waits for an answer is not
// a new run of that node. x loops back from y and from z; on its second
// run its agent interrupts, and so does z's. A resume that answers z
// alone runs z, whose edge into x is taken while x waits: x keeps waiting
// for its own answer (before, x was given z's output as a prompt, which
// dropped its agent's pending interrupt and failed the run). Once x is
// answered and its run ends, it runs again on z's output, as it would had
// it not stopped.
func TestGraph_AnEdgeIntoAWaitingNodeWaitsForItsAnswer_M5(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	xAsked := make(chan struct{})
	first := func(s *graph.State) bool { return s.Text("x") == "x run 1" }
	b := graph.NewBuilder().
		AddNode("x", askingAgent(r, "x", map[int]bool{2: true}, xAsked, nil)).
		AddNode("y", fn(r, "y", nil)).
		AddNode("z", askingAgent(r, "z", map[int]bool{1: true}, nil, xAsked)).
		AddEdge("x", "y", first).AddEdge("x", "z", first).AddEdge("y", "x").AddEdge("z", "x").SetEntryPoint("x")
	g := build(t, b, graph.Config{})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	xAsk := interruptNamed(t, res, "x-ask")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(interruptNamed(t, res, "z-ask").ID, "zz")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, "x still waits for its answer")
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, xAsk.ID, res.Interrupts[0].ID)
	assert.Equal(t, multiagent.StatusInterrupted, res.Node("x").Status)
	assert.Equal(t, multiagent.StatusCompleted, res.Node("z").Status)
	assert.Len(t, r.prompts("x"), 2, "x was given no prompt while it waited")

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(xAsk.ID, "xx")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"x", "y", "z", "x", "x"}, res.ExecutionOrder)
	prompts := r.prompts("x")
	require.Len(t, prompts, 3)
	assert.Contains(t, prompts[2], "From z:\n  - z: z answered zz", "x ran again on z's output once its own run ended")
	assert.Equal(t, "x run 3", res.Node("x").Text())
}

// SPEC M4, M5: an edge taken into a node whose agent interrupted, while
// the run stops for it, is not lost. x and p are entry points and p → x:
// x interrupts, then p completes. Answered, x finishes its run and then
// runs on p's output, as it does when it does not interrupt (before, the
// run held back for x was dropped when x resumed).
func TestGraph_AnEdgeTakenWhileANodeWaitsRunsItAfterItsResume_M4(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	xAsked := make(chan struct{})
	p := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		<-xAsked
		return []model.ContentBlock{model.Text("p out")}, nil
	})
	b := graph.NewBuilder().AddNode("x", askingAgent(r, "x", map[int]bool{1: true}, xAsked, nil)).AddNode("p", p).
		AddEdge("p", "x").SetEntryPoint("x").SetEntryPoint("p")
	g := build(t, b, graph.Config{})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Equal(t, multiagent.StatusCompleted, res.Node("p").Status)

	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(interruptNamed(t, res, "x-ask").ID, "xx")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"p", "x", "x"}, res.ExecutionOrder)
	prompts := r.prompts("x")
	require.Len(t, prompts, 2)
	assert.Contains(t, prompts[1], "From p:\n  - p: p out")
	assert.Equal(t, "x run 2", res.Node("x").Text())
}
