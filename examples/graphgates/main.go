// Command graphgates shows the seed's rules for concurrent nodes: in the
// graph info → {day, time, weather} a BeforeNodeCallEvent hook gates day
// and weather. The first invocation returns INTERRUPTED with two
// interrupts, one per gated node, while time, which runs beside them,
// COMPLETED. Answering both runs the two nodes (and only them: info and
// time are not run again), and the run completes with four node results.
// An answer other than "y" cancels that node.
//
//	go run ./examples/graphgates            # asks at the terminal
//	go run ./examples/graphgates -answer y  # or BRAID_ANSWER=y
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "graphgates", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

// nodes are the graph's nodes in the order the program prints them, and
// what each one's scripted agent answers.
var nodes = []struct{ id, prompt, answer string }{
	{"info", "You plan which facts to look up.", "I will look up the day, the time and the weather."},
	{"day", "You tell the day of the week.", "It is Tuesday."},
	{"time", "You tell the time.", "It is 14:05."},
	{"weather", "You tell the weather.", "Sunny, 21 degrees."},
}

// gated are the nodes the hook asks about.
var gated = []string{"day", "weather"}

const approvalName = "myapp-approval"

// gateReason is the reason of a gate's interrupt.
type gateReason struct {
	Node string `json:"node"`
}

// gate is the hook: before a gated node runs it asks, and cancels the node
// unless the answer is "y". The hooks of concurrent nodes run
// concurrently; this one keeps no state.
func gate(_ context.Context, ev *multiagent.BeforeNodeCallEvent) error {
	if !slices.Contains(gated, ev.NodeID) {
		return nil
	}
	approval, err := ev.Interrupt(approvalName, gateReason{Node: ev.NodeID})
	if err != nil {
		return err
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		ev.CancelNode("User denied " + ev.NodeID)
	}
	return nil
}

// calls counts each node's model calls; nodes run concurrently.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[id]++
}

func (c *calls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%s %d", n.id, c.n[n.id]))
	}
	return strings.Join(parts, ", ")
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("graphgates", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return err
	}
	defer sys.Close(context.WithoutCancel(ctx))

	modelCalls := &calls{n: map[string]int{}}
	b := graph.NewBuilder()
	for _, n := range nodes {
		m, err := provider.New(ctx, *modelSpec, model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
			modelCalls.add(n.id)
			return model.TextTurn(n.answer), nil
		}))
		if err != nil {
			return err
		}
		b.AddNode(n.id, agentnode.Agent(agent.Config{Model: m, SystemPrompt: n.prompt}))
		if n.id != "info" {
			b.AddEdge("info", n.id)
		}
	}
	g, err := b.Build(ctx, graph.Config{ID: "facts", System: sys, Hooks: []hook.Provider{hook.Func(gate)}})
	if err != nil {
		return err
	}
	defer g.Close(context.WithoutCancel(ctx))

	ask := seed.NewAsker(*answer, stdin, stdout)
	const task = "What day, time and weather is it?"
	fmt.Fprintf(stdout, "invoke: %s\n", task)
	result, err := g.Invoke(ctx, agent.Text(task))
	for err == nil && result.Status == multiagent.StatusInterrupted {
		report(stdout, result)
		var responses []interrupt.Response
		for _, in := range sortedInterrupts(result) {
			var reason gateReason
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			responses = append(responses, interrupt.Respond(in.ID, ask.Ask(fmt.Sprintf("Do you want to run %s (y/N): ", reason.Node))))
		}
		fmt.Fprintf(stdout, "resume with %d answer(s)\n", len(responses))
		result, err = g.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}
	report(stdout, result)
	fmt.Fprintf(stdout, "model calls: %s\n", modelCalls)
	return nil
}

// sortedInterrupts returns the run's interrupts by node, so that the
// questions come in the same order every time (concurrent nodes raise
// theirs in any order).
func sortedInterrupts(r *multiagent.Result) []interrupt.Interrupt {
	ins := slices.Clone(r.Interrupts)
	node := func(in interrupt.Interrupt) string {
		var reason gateReason
		_ = in.DecodeReason(&reason)
		return reason.Node
	}
	slices.SortFunc(ins, func(a, b interrupt.Interrupt) int { return strings.Compare(node(a), node(b)) })
	return ins
}

// report prints the run's status and each node's, in the graph's order.
func report(w io.Writer, r *multiagent.Result) {
	fmt.Fprintf(w, "status: %s (%d node results, %d interrupts)\n", r.Status, len(r.Results), len(r.Interrupts))
	for _, n := range nodes {
		res := r.Node(n.id)
		switch {
		case res == nil:
			fmt.Fprintf(w, "  %-8s not run\n", n.id)
		case res.Status == multiagent.StatusCompleted:
			fmt.Fprintf(w, "  %-8s %s: %s\n", n.id, res.Status, res.Text())
		case res.Status == multiagent.StatusInterrupted:
			var names []string
			for _, in := range res.Interrupts {
				names = append(names, in.Name)
			}
			fmt.Fprintf(w, "  %-8s %s: waits for %s\n", n.id, res.Status, strings.Join(names, ", "))
		default:
			fmt.Fprintf(w, "  %-8s %s: %s\n", n.id, res.Status, res.Message)
		}
	}
}
