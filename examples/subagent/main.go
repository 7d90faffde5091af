// Command subagent is an agent used as a tool by another (agent.AsTool),
// saved in the embedded SQLite store and answered by another process.
// The assistant agent has one tool, cleanup: the cleaner agent. The
// cleaner inspects the files, then deletes the old ones with
// delete_files, which an approval hook gates (the seed's
// BeforeToolCallEvent approval). The cleaner's question surfaces at the
// assistant's caller, named by the cleaner's interrupt id; the answer goes
// back down to the cleaner, which resumes where it stopped, and the
// assistant answers with the cleaner's report.
//
// Step 1 runs the assistant until the question, which both agents' records
// hold in the store, and exits. Step 2, a new process, builds both agents
// on the same session and resumes the assistant with the answer: the
// cleaner's inspection, done in step 1, does not run again, and
// delete_files runs once, in step 2. Every tool writes the work it did to
// DIR/work.log, with its process id.
//
//	go run ./examples/subagent -dir /tmp/sa                     # step 1: stops at the approval
//	go run ./examples/subagent -dir /tmp/sa -resume -answer y   # step 2: another process answers
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
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "subagent", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

const (
	// sessionID names the session of both agents in the store: step 2
	// must use the same one to find them.
	sessionID = "subagent"
	// approvalName is the cleaner's approval interrupt.
	approvalName = "myapp-approval"
	// logName is the work log, in the store's folder.
	logName = "work.log"
)

// files are the workspace the cleaner looks at, and old the ones it
// deletes.
var (
	files = []string{"logs/app-2026-11-02.log", "logs/app-today.log", "tmp/cache.bin"}
	old   = []string{"logs/app-2026-11-02.log", "tmp/cache.bin"}
)

// approve is the cleaner's hook: it asks before delete_files runs, and
// cancels the call unless the answer is "y".
func approve(_ context.Context, ev *agent.BeforeToolCallEvent) error {
	if ev.ToolUse.Name != "delete_files" {
		return nil
	}
	var in seed.Paths
	if err := ev.ToolUse.DecodeInput(&in); err != nil {
		return err
	}
	approval, err := ev.Interrupt(approvalName, in)
	if err != nil {
		return err
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		ev.CancelTool("User denied permission to delete files")
	}
	return nil
}

// agents builds the cleaner and the assistant that has it as its tool
// cleanup; step 1 and step 2 build them the same way. The cleaner has an
// owner path under the assistant, so that its record and its interrupt
// ids are its own.
func agents(ctx context.Context, sys *actors.System, sess *persistence.SessionManager, modelSpec string, work seed.WorkLog) (cleaner, assistant *agent.Agent, err error) {
	inspect := tool.New("inspect_files", "List the files and their age",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (map[string]any, error) {
			if err := work.Write("inspect_files: %v, old: %v", in.Paths, old); err != nil {
				return nil, err
			}
			return map[string]any{"olderThan5Days": old}, nil
		})
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
			return true, work.Write("delete_files: deleted %v", in.Paths)
		}, tool.AtMostOnce())
	cleanerModel, err := provider.New(ctx, modelSpec, model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		for _, r := range last.ToolResults() {
			switch r.ToolUseID {
			case "inspect-1":
				return model.ToolTurn(model.Call("delete-1", "delete_files", seed.Paths{Paths: old})), nil
			case "delete-1":
				if r.Status == model.ToolSuccess {
					return model.TextTurn("Deleted " + strings.Join(old, ", ") + "."), nil
				}
				return model.TextTurn("Deleted nothing: " + r.Text() + "."), nil
			}
		}
		return model.ToolTurn(model.Call("inspect-1", "inspect_files", seed.Paths{Paths: files})), nil
	}))
	if err != nil {
		return nil, nil, err
	}
	cleaner, err = agent.New(ctx, agent.Config{ID: "cleaner", OwnerPath: "assistant/cleanup", System: sys, Session: sess,
		Model: cleanerModel, SystemPrompt: "You delete files older than 5 days, after inspecting them.",
		Tools: []tool.Tool{inspect, deleteFiles}, Hooks: []hook.Provider{hook.Func(approve)}})
	if err != nil {
		return nil, nil, err
	}
	assistantModel, err := provider.New(ctx, modelSpec, model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("The cleaner reports: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("cleanup-1", "cleanup", agent.ToolInput{Prompt: "Delete the files older than 5 days."})), nil
	}))
	if err == nil {
		assistant, err = agent.New(ctx, agent.Config{ID: "assistant", System: sys, Session: sess, Model: assistantModel,
			SystemPrompt: "You help with the workspace; the cleaner agent does the cleaning.",
			Tools:        []tool.Tool{agent.AsTool(cleaner, "cleanup", "Ask the cleaner agent to clean up the workspace")}})
	}
	if err != nil {
		_ = cleaner.Close(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	return cleaner, assistant, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	steps, err := seed.ParseTwoSteps("subagent", args, stdout)
	if err != nil {
		return err
	}

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
	cleaner, assistant, err := agents(ctx, sys, sess, steps.Model, work)
	if err != nil {
		return err
	}
	defer cleaner.Close(context.WithoutCancel(ctx))
	defer assistant.Close(context.WithoutCancel(ctx))
	saved, err := assistant.Status(ctx)
	if err != nil {
		return err
	}

	if !steps.Resume {
		if saved.Interrupted() {
			return fmt.Errorf("%s: %w", steps.Dir, seed.ErrWaiting)
		}
		const task = "Clean up my workspace"
		fmt.Fprintf(stdout, "step 1 (pid %d): invoke: %s\n", os.Getpid(), task)
		res, err := assistant.Invoke(ctx, agent.Text(task))
		if err != nil {
			return err
		}
		if !res.Interrupted() {
			fmt.Fprintf(stdout, "assistant: %s\n", res.Message.Text())
			return nil
		}
		for _, in := range res.Interrupts {
			// The name is the cleaner's interrupt id (AsTool), the reason
			// its hook's: what it asks.
			var reason seed.Paths
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "  waits for %s from %s (id %s)\n", in.Name, in.Source, in.ID)
			fmt.Fprintf(stdout, "    the cleaner asks, through the assistant's cleanup tool: delete %v?\n", reason.Paths)
		}
		fmt.Fprintf(stdout, "The run is saved in %s and this process ends. Answer from another one:\n  go run ./examples/subagent -dir %s -resume -answer y\n",
			filepath.Join(steps.Dir, sqlite.FileName), steps.Dir)
		return nil
	}

	if !saved.Interrupted() {
		return fmt.Errorf("%s: %w", steps.Dir, seed.ErrNothingToResume)
	}
	fmt.Fprintf(stdout, "step 2 (pid %d): the assistant saved in %s waits for %d answer(s)\n", os.Getpid(), filepath.Join(steps.Dir, sqlite.FileName), len(saved.Interrupts))
	ask := seed.NewAsker(steps.Answer, stdin, stdout)
	waiting := saved.Interrupts
	var res *agent.Result
	for len(waiting) > 0 {
		var responses []interrupt.Response
		for _, in := range waiting {
			var reason seed.Paths
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "interrupt %s from %s\n", in.Name, in.Source)
			responses = append(responses, interrupt.Respond(in.ID, ask.Ask(fmt.Sprintf("Do you want to delete %v (y/N): ", reason.Paths))))
		}
		if res, err = assistant.Invoke(ctx, agent.Resume(responses...)); err != nil {
			return err
		}
		waiting = res.Interrupts
	}
	fmt.Fprintf(stdout, "assistant: %s\n", res.Message.Text())
	log, err := os.ReadFile(work.Path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "work done, by both processes (%s):\n%s", work.Path, log)
	return nil
}
