package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

type examplePaths struct {
	Paths []string `json:"paths" jsonschema:"files to delete"`
}

// The README's quick start: a hook asks before delete_files runs.
func Example() {
	ctx := context.Background()
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in examplePaths) (bool, error) { return true, nil })

	approve := func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		answer, err := ev.Interrupt("myapp-approval", map[string]any{"paths": ev.ToolUse.InputMap()["paths"]})
		if err != nil {
			return err
		}
		if s, _ := answer.String(); strings.ToLower(s) != "y" {
			ev.CancelTool("User denied permission to delete files")
		}
		return nil
	}

	a, err := agent.New(context.Background(), agent.Config{
		Model: model.Scripted(
			model.ToolTurn(model.Call("t1", "delete_files", examplePaths{Paths: []string{"a/b/c.txt"}})),
			model.TextTurn("Deleted a/b/c.txt."),
		),
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{deleteFiles},
		Hooks:        []hook.Provider{hook.Func(approve)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close(ctx)

	res, err := a.Invoke(ctx, agent.Text("paths=<[a/b/c.txt]>"))
	for err == nil && res.StopReason == agent.StopInterrupt {
		var answers []interrupt.Response
		for _, in := range res.Interrupts {
			fmt.Printf("%s wants approval for %s\n", in.Name, in.Reason)
			answers = append(answers, interrupt.Respond(in.ID, "y"))
		}
		res, err = a.Invoke(ctx, agent.Resume(answers...))
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Text())
	// Output:
	// myapp-approval wants approval for {"paths":["a/b/c.txt"]}
	// Deleted a/b/c.txt.
}

// A resume in the JSON a Strands Python or TypeScript client sends.
func ExampleParseInput() {
	in, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840","response":"y"}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range in.Responses() {
		s, _ := r.Value.String()
		fmt.Println(in.IsResume(), r.ID, s)
	}
	// Output:
	// true v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840 y
}
