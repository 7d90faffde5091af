package sqlite_test

import (
	"context"
	"fmt"
	"os"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

type examplePaths struct {
	Paths []string `json:"paths"`
}

// The README's sessions: a store opened once per process, and a fresh
// agent with a session manager per request. The first request stops at
// the tool's interrupt, which is saved (SPEC I9); the second, a new agent
// on the same session, resumes it (SPEC S1).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "braid-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(ctx, sqlite.Config{Dir: dir}) // dir/braid.db
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in examplePaths) (string, error) {
			answer, err := tc.Interrupt("myapp-approval", in.Paths)
			if err != nil {
				return "", err
			}
			if s, _ := answer.String(); s != "y" {
				return "not deleted", nil
			}
			return "deleted", nil
		})
	// One model for every request: the scripted conversation goes on
	// across them, as a provider's would.
	m := model.Scripted(
		model.ToolTurn(model.Call("t1", "delete_files", examplePaths{Paths: []string{"a/b/c.txt"}})),
		model.TextTurn("Deleted a/b/c.txt."),
	)
	// request serves one request: it builds an agent on the session, runs
	// in, and closes the agent. The session manager opens nothing.
	request := func(in agent.Input) (*agent.Result, error) {
		sess, err := persistence.NewSessionManager(store, "myapp")
		if err != nil {
			return nil, err
		}
		a, err := agent.New(ctx, agent.Config{
			Model:   m,
			Tools:   []tool.Tool{deleteFiles},
			Session: sess,
		})
		if err != nil {
			return nil, err
		}
		defer a.Close(ctx)
		return a.Invoke(ctx, in)
	}

	res, err := request(agent.Text("Delete a/b/c.txt"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s %s\n", res.StopReason, res.Interrupts[0].Name, res.Interrupts[0].Reason)

	res, err = request(agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.StopReason, res.Message.Text())
	// Output:
	// interrupt myapp-approval ["a/b/c.txt"]
	// end_turn Deleted a/b/c.txt.
}
