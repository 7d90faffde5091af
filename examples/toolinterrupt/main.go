// Command toolinterrupt is the seed's tool-context example: delete_files
// asks for approval from inside the tool, and returns false unless the answer
// is "y". inspect_files runs beside it and is not run again on resume.
//
//	go run ./examples/toolinterrupt -answer y   # or BRAID_ANSWER=y
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "toolinterrupt", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

// deleteTool is the seed's DeleteTool: the tool itself raises the interrupt.
type deleteTool struct {
	appName string
	deleted []string
}

func (d *deleteTool) deleteFiles(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
	approval, err := tc.Interrupt(d.appName+"-approval", map[string]any{"paths": in.Paths})
	if err != nil {
		return false, err
	}
	if s, _ := approval.String(); strings.ToLower(s) != "y" {
		return false, nil
	}
	d.deleted = append(d.deleted, in.Paths...) // a real tool would delete here
	return true, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("toolinterrupt", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	paths := []string{"a/b/c.txt", "d/e/f.txt"}
	dt := &deleteTool{appName: "myapp"}
	inspections := 0
	inspectFiles := tool.New("inspect_files", "Inspect files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (map[string]any, error) {
			inspections++
			return map[string]any{"files": in.Paths}, nil
		})
	m := seed.Model(
		[]model.ToolCall{
			model.Call("tooluse_delete", "delete_files", seed.Paths{Paths: paths}),
			model.Call("tooluse_inspect", "inspect_files", seed.Paths{Paths: paths}),
		},
		func(rs []model.ToolResult) string {
			for _, r := range rs {
				if r.ToolUseID == "tooluse_delete" {
					return "delete_files returned " + r.Text()
				}
			}
			return "no delete result"
		})
	chosen, err := provider.New(ctx, *modelSpec, m)
	if err != nil {
		return err
	}
	a, err := agent.New(ctx, agent.Config{
		Model:        chosen,
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{tool.New("delete_files", "Delete files at the given paths", dt.deleteFiles, tool.AtMostOnce()), inspectFiles},
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
			fmt.Fprintf(stdout, "interrupt %s from %s\n", in.Name, in.Source)
			var reason struct {
				Paths []string `json:"paths"`
			}
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			responses = append(responses, interrupt.Respond(in.ID, ask.Ask(fmt.Sprintf("Do you want to delete %v (y/N): ", reason.Paths))))
		}
		result, err = a.Invoke(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "MESSAGE: %s\n", result.Message.Text())
	fmt.Fprintf(stdout, "deleted: %v, inspect_files ran %d time(s)\n", dt.deleted, inspections)
	return nil
}
