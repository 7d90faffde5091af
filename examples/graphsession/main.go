// Command graphsession is a graph whose node agent interrupts from inside
// a tool, saved in the embedded SQLite store, and resumed by another
// process. The graph is inspector → cleanup; cleanup's agent calls two
// tools at once: snapshot_resources, which completes, and
// delete_resources, which asks for approval (tc.Interrupt) before it
// deletes anything.
//
// Step 1 runs the graph until the interrupt, which is saved with the run,
// and exits. Step 2, a new process, builds the same graph on the same
// session, resumes it with the answer, and completes: the inspector node
// and snapshot_resources, which finished in step 1, are not run again;
// delete_resources runs (again from its start) and gets the answer. Every
// tool writes the work it did to DIR/work.log, with its process id, so
// the log shows which process did what.
//
//	go run ./examples/graphsession -dir /tmp/gs                     # step 1: stops at the approval
//	go run ./examples/graphsession -dir /tmp/gs -resume -answer y   # step 2: another process answers
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "graphsession", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

const (
	// sessionID and graphID name the run in the store: step 2 must use
	// the same ones to find it.
	sessionID = "graphsession"
	graphID   = "cleanup_graph"
	// approvalName is the tool's interrupt.
	approvalName = "myapp-approval"
	// logName is the work log, in the store's folder.
	logName = "work.log"
)

// old are the resources the script cleans up.
var old = []string{"bucket-logs-2026-10", "vm-build-17", "disk-snapshot-4"}

type namesInput struct {
	Names []string `json:"names" jsonschema:"the names of the resources"`
}

// builder returns the graph; step 1 and step 2 build it the same way.
func builder(ctx context.Context, modelSpec string, work seed.WorkLog) (*graph.Builder, error) {
	inspect := tool.New("inspect_resources", "List the resources older than 5 days",
		func(ctx context.Context, tc *tool.Context, _ struct{}) (map[string]any, error) {
			if err := work.Write("inspect_resources: found %v", old); err != nil {
				return nil, err
			}
			return map[string]any{"old": old}, nil
		})
	snapshot := tool.New("snapshot_resources", "Take a backup snapshot of the named resources",
		func(ctx context.Context, tc *tool.Context, in namesInput) (string, error) {
			if err := work.Write("snapshot_resources: saved %v", in.Names); err != nil {
				return "", err
			}
			return "snapshot saved", nil
		})
	// The tool asks first and acts after: on resume it runs again from the
	// start, and its Interrupt call returns the answer.
	deleteResources := tool.New("delete_resources", "Delete the named resources",
		func(ctx context.Context, tc *tool.Context, in namesInput) (bool, error) {
			approval, err := tc.Interrupt(approvalName, in)
			if err != nil {
				return false, err
			}
			if s, _ := approval.String(); strings.ToLower(s) != "y" {
				return false, work.Write("delete_resources: denied, kept %v", in.Names)
			}
			return true, work.Write("delete_resources: deleted %v", in.Names)
		}, tool.AtMostOnce())

	inspector, err := provider.New(ctx, modelSpec, model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn(fmt.Sprintf("Older than 5 days: %s.", strings.Join(old, ", "))), nil
		}
		return model.ToolTurn(model.Call("inspect-1", "inspect_resources", struct{}{})), nil
	}))
	if err != nil {
		return nil, err
	}
	cleaner, err := provider.New(ctx, modelSpec, model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		for _, r := range last.ToolResults() {
			if r.ToolUseID == "delete-1" {
				if r.Text() == "true" {
					return model.TextTurn("Snapshot taken, then deleted " + strings.Join(old, ", ") + "."), nil
				}
				return model.TextTurn("Snapshot taken; nothing deleted: " + r.Text() + "."), nil
			}
		}
		return model.ToolTurn(
			model.Call("snapshot-1", "snapshot_resources", namesInput{Names: old}),
			model.Call("delete-1", "delete_resources", namesInput{Names: old}),
		), nil
	}))
	if err != nil {
		return nil, err
	}
	return graph.NewBuilder().
		AddNode("inspector", agentnode.Agent(agent.Config{Model: inspector, SystemPrompt: "You inspect resources.", Tools: []tool.Tool{inspect}})).
		AddNode("cleanup", agentnode.Agent(agent.Config{Model: cleaner, SystemPrompt: "You snapshot, then clean up resources older than 5 days.",
			Tools: []tool.Tool{snapshot, deleteResources}})).
		AddEdge("inspector", "cleanup"), nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	steps, err := seed.ParseTwoSteps("graphsession", args, stdout)
	if err != nil {
		return err
	}

	// The store is opened once per process; the session manager opens
	// nothing.
	store, err := steps.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := persistence.NewSessionManager(store, sessionID)
	if err != nil {
		return err
	}
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	work := seed.WorkLog{Path: filepath.Join(steps.Dir, logName)}
	b, err := builder(ctx, steps.Model, work)
	if err != nil {
		return err
	}
	// Building restores the run saved in the session, if any.
	g, err := b.Build(ctx, graph.Config{ID: graphID, Session: sess, System: sys})
	if err != nil {
		return err
	}
	defer g.Close(context.WithoutCancel(ctx))
	saved, err := g.Status(ctx)
	if err != nil {
		return err
	}

	if !steps.Resume {
		if saved.Interrupted() {
			return fmt.Errorf("%s: %w", steps.Dir, seed.ErrWaiting)
		}
		const task = "Inspect my resources, snapshot the old ones and delete them"
		fmt.Fprintf(stdout, "step 1 (pid %d): invoke: %s\n", os.Getpid(), task)
		res, err := g.Invoke(ctx, agent.Text(task))
		if err != nil {
			return err
		}
		report(stdout, res)
		if !res.Interrupted() {
			return nil
		}
		fmt.Fprintf(stdout, "The run is saved in %s and this process ends. Answer from another one:\n  go run ./examples/graphsession -dir %s -resume -answer y\n",
			filepath.Join(steps.Dir, sqlite.FileName), steps.Dir)
		return nil
	}

	if !saved.Interrupted() {
		return fmt.Errorf("%s: %w", steps.Dir, seed.ErrNothingToResume)
	}
	fmt.Fprintf(stdout, "step 2 (pid %d): the run saved in %s waits for %d answer(s)\n", os.Getpid(), filepath.Join(steps.Dir, sqlite.FileName), len(saved.Interrupts))
	ask := seed.NewAsker(steps.Answer, stdin, stdout)
	res := saved
	for res.Interrupted() {
		var responses []interrupt.Response
		for _, in := range res.Interrupts {
			var reason namesInput
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "interrupt %s from %s\n", in.Name, in.Source)
			responses = append(responses, interrupt.Respond(in.ID, ask.Ask(fmt.Sprintf("Do you want to delete %v (y/N): ", reason.Names))))
		}
		if res, err = g.Invoke(ctx, agent.Resume(responses...)); err != nil {
			return err
		}
	}
	report(stdout, res)
	log, err := os.ReadFile(work.Path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "work done, by both processes (%s):\n%s", work.Path, log)
	return nil
}

// report prints the run's status, each node's, and its interrupts.
func report(w io.Writer, r *multiagent.Result) {
	fmt.Fprintf(w, "status: %s\n", r.Status)
	for _, id := range []string{"inspector", "cleanup"} {
		n := r.Node(id)
		switch {
		case n == nil:
			fmt.Fprintf(w, "  %-9s not run\n", id)
		case n.Status == multiagent.StatusCompleted:
			fmt.Fprintf(w, "  %-9s %s: %s\n", id, n.Status, n.Text())
		case n.Status == multiagent.StatusInterrupted:
			fmt.Fprintf(w, "  %-9s %s: its agent waits for %d answer(s)\n", id, n.Status, len(n.Interrupts))
		default:
			fmt.Fprintf(w, "  %-9s %s: %s\n", id, n.Status, n.Message)
		}
	}
	for _, in := range r.Interrupts {
		fmt.Fprintf(w, "  waits for %s from %s (id %s)\n", in.Name, in.Source, in.ID)
	}
}
