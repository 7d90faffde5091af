// Command session is the seed's session example: a "server" builds a fresh
// agent with a session manager on every request, and a client loop answers
// the interrupts. Answering "t" (trust) is stored in the agent's state, so
// the second delete is not asked again, across requests.
//
// The server opens its store (SQLite, braid.db in -dir) once and closes it
// on shutdown; a session manager per request opens nothing, so nothing
// leaks however many requests it serves.
//
// A request that a crash cut off (its process killed while delete_files
// ran) is carried on by the next client before its own request, and
// delete_files, declared at-most-once, is run again only if the user says
// so.
//
//	go run ./examples/session -answer t -dir /tmp/braid-sessions
package main

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

func main() {
	os.Exit(seed.Exit(os.Stderr, "session", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)))
}

// approvalHook asks before delete_files unless the user trusted it ("t").
type approvalHook struct{ appName string }

func (h approvalHook) RegisterHooks(r *hook.Registry) { hook.Add(r, h.approve) }

func (h approvalHook) approve(_ context.Context, ev *agent.BeforeToolCallEvent) error {
	if ev.ToolUse.Name != "delete_files" {
		return nil
	}
	key := h.appName + "-approval"
	if v, _ := ev.Agent.State().GetString(key); v == "t" { // (t)rust
		return nil
	}
	var in seed.Paths
	if err := ev.ToolUse.DecodeInput(&in); err != nil {
		return err
	}
	approval, err := ev.Interrupt(key, map[string]any{"paths": in.Paths})
	if err != nil {
		return err
	}
	s, _ := approval.String()
	s = strings.ToLower(s)
	if s != "y" && s != "t" {
		ev.CancelTool("User denied permission to delete files")
	}
	return ev.Agent.State().Set(key, s)
}

// server builds a fresh agent per request, as the seed does, over the
// store it opened once.
type server struct {
	store   persistence.Store
	model   string // the --model spec
	deleted *[]string
}

func (s server) handle(ctx context.Context, input agent.Input) (*agent.Result, error) {
	sess, err := persistence.NewSessionManager(s.store, "myapp")
	if err != nil {
		return nil, err
	}
	// Deleting twice is not harmless: cut off by a crash, it is not run
	// again without asking (SPEC S6).
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
			*s.deleted = append(*s.deleted, in.Paths...)
			return true, nil
		}, tool.AtMostOnce())
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("delete_files: " + rs[0].Text()), nil
		}
		// The prompt is "paths=<[a b]>", as the seed's client sends it.
		list := strings.TrimSuffix(strings.TrimPrefix(last.Text(), "paths=<"), ">")
		paths := strings.Fields(strings.Trim(list, "[]"))
		return model.ToolTurn(model.Call(fmt.Sprintf("tooluse_%d", len(req.Messages)), "delete_files", seed.Paths{Paths: paths})), nil
	})
	chosen, err := provider.New(ctx, s.model, m)
	if err != nil {
		return nil, err
	}
	a, err := agent.New(ctx, agent.Config{
		Model:        chosen,
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{deleteFiles},
		Hooks:        []hook.Provider{approvalHook{appName: "myapp"}},
		Session:      sess,
	})
	if err != nil {
		return nil, err
	}
	defer a.Close(ctx)
	return a.Invoke(ctx, input)
}

// client is the seed's client loop: it sends one request for paths and
// answers its interrupts. If the session holds a request a crash cut off
// (agent.ErrIncompleteRun: its process died mid-run), it carries that one
// on first, with the empty input, then sends its own.
func client(ctx context.Context, srv server, ask *seed.Asker, paths []string, out io.Writer) error {
	prompt := agent.Text(fmt.Sprintf("paths=<%v>", paths))
	err := converse(ctx, srv, ask, prompt, out)
	if errors.Is(err, agent.ErrIncompleteRun) {
		fmt.Fprintln(out, "the last request was cut off by a crash: carrying it on")
		if err := converse(ctx, srv, ask, agent.Input{}, out); err != nil {
			return err
		}
		err = converse(ctx, srv, ask, prompt, out)
	}
	return err
}

// converse sends input and answers the interrupts until the agent's turn
// ends: the approval of delete_files, and the braid.recovery question of
// a delete a crash cut off (SPEC S6), answered "rerun" only on "y".
func converse(ctx context.Context, srv server, ask *seed.Asker, input agent.Input, out io.Writer) error {
	result, err := srv.handle(ctx, input)
	for err == nil && result.StopReason == agent.StopInterrupt {
		var responses []interrupt.Response
		for _, in := range result.Interrupts {
			switch in.Name {
			case "myapp-approval":
				var reason seed.Paths
				if err := in.DecodeReason(&reason); err != nil {
					return err
				}
				responses = append(responses, interrupt.Respond(in.ID, ask.Ask(fmt.Sprintf("Do you want to delete %v (t/y/N): ", reason.Paths))))
			case agent.RecoveryInterrupt:
				var reason agent.RecoveryReason
				if err := in.DecodeReason(&reason); err != nil {
					return err
				}
				var paths seed.Paths
				if err := json.Unmarshal(reason.Input, &paths); err != nil {
					return err
				}
				answer := ask.Ask(fmt.Sprintf("%s %v was cut off by a crash; run it again? (y/N): ", reason.Tool, paths.Paths))
				if strings.ToLower(answer) == "y" {
					answer = agent.RecoveryRerun
				}
				responses = append(responses, interrupt.Respond(in.ID, answer))
			default:
				return fmt.Errorf("interrupt %q: the client does not know it", in.Name)
			}
		}
		result, err = srv.handle(ctx, agent.Resume(responses...))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "MESSAGE: %s\n", result.Message.Text())
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	fs.SetOutput(stdout)
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "answer every question with this (t/y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	dir := fs.String("dir", "", "session store folder, holding braid.db (default: a new temporary folder)")
	if err := seed.ParseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "braid-session-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	store, err := sqlite.Open(ctx, sqlite.Config{Dir: *dir})
	if err != nil {
		return err
	}
	defer store.Close()
	var deleted []string
	srv := server{store: store, model: *modelSpec, deleted: &deleted}
	ask := seed.NewAsker(*answer, stdin, stdout)
	for _, paths := range [][]string{{"a/b/c.txt"}, {"d/e/f.txt"}} {
		if err := client(ctx, srv, ask, paths, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "deleted: %v\n", deleted)
	return nil
}
