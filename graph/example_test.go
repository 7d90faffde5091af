package graph_test

import (
	"context"
	"fmt"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// The README's graph: inspector → cleanup, whose BeforeNodeCallEvent hook
// asks before cleanup runs (SPEC M3); the resume routes the answer to the
// gate, and the run completes (SPEC M5).
func Example() {
	ctx := context.Background()
	approveCleanup := func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "cleanup" {
			return nil
		}
		answer, err := ev.Interrupt("myapp-approval", "clean up the resources?")
		if err != nil {
			return err // the graph stops INTERRUPTED
		}
		if s, _ := answer.String(); s != "y" {
			ev.CancelNode("User denied permission to clean up")
		}
		return nil
	}
	answer := func(ins []interrupt.Interrupt) []interrupt.Response {
		var answers []interrupt.Response
		for _, in := range ins {
			fmt.Printf("%s asks: %s\n", in.Name, in.Reason)
			answers = append(answers, interrupt.Respond(in.ID, "y"))
		}
		return answers
	}
	sess, err := persistence.NewSessionManager(memory.New(), "example")
	if err != nil {
		fmt.Println(err)
		return
	}

	g, err := graph.NewBuilder().
		AddNode("inspector", agentnode.Agent(agent.Config{Model: model.Scripted(model.TextTurn("3 old resources."))})).
		AddNode("cleanup", agentnode.Agent(agent.Config{Model: model.Scripted(model.TextTurn("Cleaned up 3 resources."))})).
		AddEdge("inspector", "cleanup").
		Build(ctx, graph.Config{Hooks: []hook.Provider{hook.Func(approveCleanup)}, Session: sess})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close(ctx)

	res, err := g.Invoke(ctx, agent.Text("Inspect and clean up my resources"))
	for err == nil && res.Status == multiagent.StatusInterrupted {
		res, err = g.Invoke(ctx, agent.Resume(answer(res.Interrupts)...))
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.ExecutionOrder)
	fmt.Println(res.Node("cleanup").Text())
	// Output:
	// myapp-approval asks: "clean up the resources?"
	// COMPLETED [inspector cleanup]
	// Cleaned up 3 resources.
}
