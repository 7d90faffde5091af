// Command batchapproval is the seed's BeforeToolsEvent example: one hook
// approves the whole batch of tool calls at once, and cancels every tool of
// the batch unless the answer is "y".
//
//	go run ./examples/batchapproval -answer y   # or BRAID_ANSWER=y
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "batchapproval", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

// batchApprovalHook is the seed's BatchApprovalHook.
type batchApprovalHook struct{ appName string }

func (h batchApprovalHook) RegisterHooks(r *hook.Registry) { hook.Add(r, h.approve) }

func (h batchApprovalHook) approve(_ context.Context, ev *agent.BeforeToolsEvent) error {
	var dangerous []string
	for _, tu := range ev.Message.ToolUses() {
		if tu.Name == "delete_files" {
			dangerous = append(dangerous, tu.Name)
		}
	}
	if len(dangerous) == 0 {
		return nil
	}
	approval, err := ev.Interrupt(h.appName+"-batch-approval", map[string]any{"tools": dangerous})
	if err != nil {
		return err
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		ev.Cancel("Batch cancelled by user")
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("batchapproval", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		deleted []string
	)
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
			mu.Lock() // the two calls of the batch run concurrently
			defer mu.Unlock()
			deleted = append(deleted, in.Paths...)
			return true, nil
		}, tool.AtMostOnce())
	m := seed.Model(
		[]model.ToolCall{
			model.Call("tooluse_1", "delete_files", seed.Paths{Paths: []string{"a/b/c.txt"}}),
			model.Call("tooluse_2", "delete_files", seed.Paths{Paths: []string{"d/e/f.txt"}}),
		},
		func(rs []model.ToolResult) string {
			var lines []string
			for _, r := range rs {
				lines = append(lines, fmt.Sprintf("%s: %s %s", r.ToolUseID, r.Status, r.Text()))
			}
			return strings.Join(lines, "; ")
		})
	chosen, err := provider.New(ctx, *modelSpec, m)
	if err != nil {
		return err
	}
	a, err := agent.New(ctx, agent.Config{
		Model:        chosen,
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{deleteFiles},
		Hooks:        []hook.Provider{batchApprovalHook{appName: "myapp"}},
	})
	if err != nil {
		return err
	}
	defer a.Close(ctx)

	ask := seed.NewAsker(*answer, stdin, stdout)
	result, err := a.Invoke(ctx, agent.Text("Delete a/b/c.txt and d/e/f.txt"))
	for err == nil && result.StopReason == agent.StopInterrupt {
		var responses []interrupt.Response
		for _, in := range result.Interrupts {
			if in.Name != "myapp-batch-approval" {
				continue
			}
			var reason struct {
				Tools []string `json:"tools"`
			}
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			userInput := ask.Ask(fmt.Sprintf("Approve running %v? (y/N): ", reason.Tools))
			responses = append(responses, interrupt.Respond(in.ID, userInput))
		}
		result, err = a.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "MESSAGE: %s\n", result.Message.Text())
	sort.Strings(deleted)
	fmt.Fprintf(stdout, "deleted: %v\n", deleted)
	return nil
}
