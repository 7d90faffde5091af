// Command swarmapproval is the seed's Swarm example: a swarm of one agent,
// cleanup, whose BeforeNodeCallEvent hook asks for approval before the
// agent runs. Answering "y" runs it, and its tool deletes the resources
// older than five days; any other answer cancels the node, which ends
// CANCELLED without running, and nothing is deleted. The resources are
// those of the graphapproval example's fake account.
//
//	go run ./examples/swarmapproval            # asks at the terminal
//	go run ./examples/swarmapproval -answer y  # or BRAID_ANSWER=y
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/graphapproval/cleanupgraph"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// task is the prompt the seed invokes the swarm with.
const task = "Clean up my resources"

func main() {
	os.Exit(seed.Exit(os.Stderr, "swarmapproval", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("swarmapproval", flag.ContinueOnError)
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
	acct := newCloud(cleanupgraph.NewCloud().Resources())
	s, err := build(ctx, acct, *modelSpec, sys)
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))

	// The seed's loop: while the swarm is interrupted, answer its
	// interrupts by id.
	ask := seed.NewAsker(*answer, stdin, stdout)
	result, err := s.Invoke(ctx, agent.Text(task))
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
		result, err = s.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "status: %s\n", result.Status)
	switch n := result.Node(cleanupgraph.Cleanup); {
	case n == nil:
		fmt.Fprintf(stdout, "  %s did not run\n", cleanupgraph.Cleanup)
	case n.Status == multiagent.StatusCompleted:
		fmt.Fprintf(stdout, "  %s %s: %s\n", cleanupgraph.Cleanup, n.Status, n.Text())
	default:
		fmt.Fprintf(stdout, "  %s %s: %s\n", cleanupgraph.Cleanup, n.Status, n.Message)
	}
	if n := result.Node(cleanupgraph.Cleanup); n != nil && n.Agent != nil {
		msg, err := json.Marshal(n.Agent.Message)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "MESSAGE: %s\n", msg)
	}
	fmt.Fprintf(stdout, "deleted: %v\n", acct.Deleted())
	return nil
}

// approvalHook is the seed's ApprovalHook: before the cleanup node runs it
// raises appName+"-approval" with the resources the cleanup would delete,
// and cancels the node unless the answer is "y".
func approvalHook(appName string, acct *cloud) hook.Provider {
	return hook.Func(func(_ context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != cleanupgraph.Cleanup {
			return nil
		}
		approval, err := ev.Interrupt(appName+"-approval", cleanupgraph.Reason{Resources: acct.Old()})
		if err != nil {
			return err // the swarm stops INTERRUPTED; cleanup has not run
		}
		if s, _ := approval.String(); strings.ToLower(s) != "y" {
			ev.CancelNode(cleanupgraph.DenyMessage)
		}
		return nil
	})
}

type namesInput struct {
	Names []string `json:"names" jsonschema:"the names of the resources to delete"`
}

// build builds the one-agent swarm over acct, its entry point cleanup,
// with the approval hook; Close it when done. The agent plays the offline
// script unless modelSpec names a real provider.
func build(ctx context.Context, acct *cloud, modelSpec string, sys *actors.System) (*swarm.Swarm, error) {
	list := tool.New("list_resources", "List the resources of the account with their age in days",
		func(ctx context.Context, tc *tool.Context, _ struct{}) (map[string]any, error) {
			return map[string]any{"resources": acct.Resources()}, nil
		})
	deleteResources := tool.New("delete_resources", "Delete the named resources",
		func(ctx context.Context, tc *tool.Context, in namesInput) (map[string]any, error) {
			done, err := acct.delete(in.Names)
			if err != nil {
				return nil, err
			}
			return map[string]any{"deleted": done}, nil
		}, tool.AtMostOnce()) // deleting twice is not harmless
	old := acct.Old()
	script := seed.Model([]model.ToolCall{model.Call("delete-1", "delete_resources", namesInput{Names: old})},
		func(rs []model.ToolResult) string {
			if rs[0].Status == model.ToolError {
				return "I could not clean up: " + rs[0].Text()
			}
			return fmt.Sprintf("Cleaned up %d resources older than %d days: %s.", len(old), cleanupgraph.MaxAgeDays, strings.Join(old, ", "))
		})
	m, err := provider.New(ctx, modelSpec, script)
	if err != nil {
		return nil, err
	}
	return swarm.NewBuilder().
		AddAgent(agent.Config{
			ID:           cleanupgraph.Cleanup,
			Model:        m,
			SystemPrompt: fmt.Sprintf("You clean up resources older than %d days.", cleanupgraph.MaxAgeDays),
			Tools:        []tool.Tool{list, deleteResources},
		}).
		SetEntryPoint(cleanupgraph.Cleanup).
		Build(ctx, swarm.Config{Hooks: []hook.Provider{approvalHook(cleanupgraph.AppName, acct)}, System: sys})
}

// cloud is the fake account the cleanup agent's tools act on, holding the
// resources of cleanupgraph's account (whose deletion is its own). It is
// safe for concurrent use.
type cloud struct {
	mu        sync.Mutex
	resources []cleanupgraph.Resource
	deleted   []string
}

func newCloud(resources []cleanupgraph.Resource) *cloud {
	return &cloud{resources: slices.Clone(resources)}
}

// Resources returns the resources that are left.
func (c *cloud) Resources() []cleanupgraph.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.resources)
}

// Old returns the names of the resources older than MaxAgeDays.
func (c *cloud) Old() []string {
	var old []string
	for _, r := range c.Resources() {
		if r.AgeDays > cleanupgraph.MaxAgeDays {
			old = append(old, r.Name)
		}
	}
	return old
}

// Deleted returns the names of the resources deleted so far, in order.
func (c *cloud) Deleted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deleted)
}

// delete deletes the named resources in order, stopping at the first
// name the account lacks; it returns the names it deleted.
func (c *cloud) delete(names []string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done []string
	for _, n := range names {
		i := slices.IndexFunc(c.resources, func(r cleanupgraph.Resource) bool { return r.Name == n })
		if i < 0 {
			return done, fmt.Errorf("no resource %q", n)
		}
		c.resources = slices.Delete(c.resources, i, i+1)
		c.deleted = append(c.deleted, n)
		done = append(done, n)
	}
	return done, nil
}
