// Command graphapproval is the seed's Graph example: a graph inspector →
// cleanup whose BeforeNodeCallEvent hook asks for approval before the
// cleanup node runs. Answering "y" runs it; any other answer cancels it,
// and the node ends CANCELLED without running. The graph and the hook are
// in package cleanupgraph, which `braid demo graph` runs too.
//
//	go run ./examples/graphapproval            # asks at the terminal
//	go run ./examples/graphapproval -answer y  # or BRAID_ANSWER=y
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/graphapproval/cleanupgraph"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "graphapproval", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("graphapproval", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	// An actor system of the program's own, so that its actors stop when
	// the program is done.
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	cloud := cleanupgraph.NewCloud()
	g, err := cleanupgraph.Build(ctx, cloud, cleanupgraph.Config{Model: *modelSpec, System: sys})
	if err != nil {
		return err
	}
	defer g.Close(context.WithoutCancel(ctx))

	// The seed's loop: while the graph is interrupted, answer its
	// interrupts by id.
	ask := seed.NewAsker(*answer, stdin, stdout)
	result, err := g.Invoke(ctx, agent.Text(cleanupgraph.Task))
	for err == nil && result.Status == multiagent.StatusInterrupted {
		var responses []interrupt.Response
		for _, in := range result.Interrupts {
			if in.Name != cleanupgraph.ApprovalName {
				continue
			}
			fmt.Fprintf(stdout, "interrupt %s from %s (id %s)\n", in.Name, in.Source, in.ID)
			var reason cleanupgraph.Reason
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			userInput := ask.Ask(fmt.Sprintf("Do you want to cleanup %v (y/N): ", reason.Resources))
			responses = append(responses, interrupt.Respond(in.ID, userInput))
		}
		result, err = g.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "status: %s\n", result.Status)
	for _, id := range []string{cleanupgraph.Inspector, cleanupgraph.Cleanup} {
		n := result.Node(id)
		switch {
		case n == nil:
			fmt.Fprintf(stdout, "  %-9s did not run\n", id)
		case n.Status == multiagent.StatusCompleted:
			fmt.Fprintf(stdout, "  %-9s %s: %s\n", id, n.Status, n.Text())
		default:
			fmt.Fprintf(stdout, "  %-9s %s: %s\n", id, n.Status, n.Message)
		}
	}
	if n := result.Node(cleanupgraph.Cleanup); n != nil && n.Agent != nil {
		msg, err := json.Marshal(n.Agent.Message)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "MESSAGE: %s\n", msg)
	}
	fmt.Fprintf(stdout, "deleted: %v\n", cloud.Deleted())
	return nil
}
