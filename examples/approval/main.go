// Command approval is the seed's BeforeToolCallEvent example: a hook asks
// before delete_files runs, and cancels it unless the answer is "y".
//
//	go run ./examples/approval            # asks at the terminal
//	go run ./examples/approval -answer y  # or BRAID_ANSWER=y
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "approval", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

// approvalHook is the seed's ApprovalHook: a hook provider namespaced by an
// app name.
type approvalHook struct{ appName string }

func (h approvalHook) RegisterHooks(r *hook.Registry) { hook.Add(r, h.approve) }

func (h approvalHook) approve(_ context.Context, ev *agent.BeforeToolCallEvent) error {
	if ev.ToolUse.Name != "delete_files" {
		return nil
	}
	var in seed.Paths
	if err := ev.ToolUse.DecodeInput(&in); err != nil {
		return err
	}
	approval, err := ev.Interrupt(h.appName+"-approval", map[string]any{"paths": in.Paths})
	if err != nil {
		return err
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		ev.CancelTool("User denied permission to delete files")
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	paths := []string{"a/b/c.txt", "d/e/f.txt"}

	var deleted []string
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
			deleted = append(deleted, in.Paths...) // a real tool would delete here
			return true, nil
		}, tool.AtMostOnce())
	inspectFiles := tool.New("inspect_files", "Inspect files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (map[string]any, error) {
			return map[string]any{"files": in.Paths, "olderThan5Days": true}, nil
		})
	m := seed.Model(
		[]model.ToolCall{
			model.Call("tooluse_inspect", "inspect_files", seed.Paths{Paths: paths}),
			model.Call("tooluse_delete", "delete_files", seed.Paths{Paths: paths}),
		},
		func(rs []model.ToolResult) string {
			for _, r := range rs {
				if r.ToolUseID == "tooluse_delete" && r.Status == model.ToolError {
					return "I inspected the files but did not delete them: " + r.Text()
				}
			}
			return fmt.Sprintf("Deleted %v.", paths)
		})

	chosen, err := provider.New(ctx, *modelSpec, m)
	if err != nil {
		return err
	}
	a, err := agent.New(ctx, agent.Config{
		Model:        chosen,
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{deleteFiles, inspectFiles},
		Hooks:        []hook.Provider{approvalHook{appName: "myapp"}},
	})
	if err != nil {
		return err
	}
	defer a.Close(ctx)

	ask := seed.NewAsker(*answer, stdin, stdout)
	result, err := a.Invoke(ctx, agent.Text(fmt.Sprintf("paths=<%v>", paths)))
	for err == nil && result.StopReason == agent.StopInterrupt {
		var responses []interrupt.Response
		for _, in := range result.Interrupts {
			if in.Name != "myapp-approval" {
				continue
			}
			var reason struct {
				Paths []string `json:"paths"`
			}
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			userInput := ask.Ask(fmt.Sprintf("Do you want to delete %v (y/N): ", reason.Paths))
			responses = append(responses, interrupt.Respond(in.ID, userInput))
		}
		result, err = a.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}
	msg, err := json.Marshal(result.Message)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "MESSAGE: %s\n", msg)
	fmt.Fprintf(stdout, "deleted: %v\n", deleted)
	return nil
}
