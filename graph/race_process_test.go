//go:build unix

package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/childproc"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/tool"
)

// The test below re-runs this test binary as helper processes, which
// TestGraphRaceHelper runs when BRAID_GRAPH_RACE names a mode. Each builds
// raceGraph on the store BRAID_GRAPH_RACE_STORE names (the SQLite folder
// BRAID_GRAPH_RACE_DIR, or the PostgreSQL test server), on session
// BRAID_GRAPH_RACE_SESSION, and appends what its agents and hooks do to
// the file BRAID_GRAPH_RACE_LOG.
const raceEnv = "BRAID_GRAPH_RACE"

// raceConflict is the exit code of a racing resume that lost with
// persistence.ErrConflict.
const raceConflict = 4

// raceLog appends one line per event to a file, synced, shared by every
// process of a test.
type raceLog struct {
	mu   sync.Mutex
	path string
}

func (l *raceLog) add(line string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		return err
	}
	return f.Sync()
}

func (l *raceLog) counts(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(l.path)
	require.NoError(t, err)
	out := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		out[line]++
	}
	return out
}

// raceGraph is a → b → ask. b is gated by a BeforeNodeCall hook
// ("approval"); ask's agent calls its tool lookup, which interrupts with
// "which". Every model turn logs "model:<node>", lookup's run past its
// answer "tool:ask", every interrupt raised without an answer
// "raise:<name>:<node>".
func raceGraph(l *raceLog) (*graph.Builder, []hook.Provider) {
	text := func(id string) agent.Config {
		return agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			if err := l.add("model:" + id); err != nil {
				return model.Turn{}, err
			}
			return model.TextTurn(id + " done"), nil
		})}
	}
	lookup := tool.New("lookup", "test tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", map[string]string{"node": "ask"})
		if err != nil {
			if lerr := l.add("raise:which:ask"); lerr != nil {
				return "", lerr
			}
			return "", err
		}
		if err := l.add("tool:ask"); err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	ask := agent.Config{Tools: []tool.Tool{lookup}, Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		if err := l.add("model:ask"); err != nil {
			return model.Turn{}, err
		}
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn("ask done: " + trs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", "lookup", map[string]any{})), nil
	})}
	gated := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		ans, err := ev.Interrupt("approval", map[string]string{"node": "b"})
		if err != nil {
			if lerr := l.add("raise:approval:b"); lerr != nil {
				return lerr
			}
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelNode("b denied")
		}
		return nil
	})
	b := graph.NewBuilder().AddNode("a", agentnode.Agent(text("a"))).AddNode("b", agentnode.Agent(text("b"))).
		AddNode("ask", agentnode.Agent(ask)).AddEdge("a", "b").AddEdge("b", "ask")
	return b, []hook.Provider{gated}
}

// raceKey names an interrupt of raceGraph by its name and node.
func raceKey(in interrupt.Interrupt) string {
	var reason struct{ Node string }
	_ = json.Unmarshal(in.Reason, &reason)
	return in.Name + ":" + reason.Node
}

// raceAnswers answers every interrupt of res.
func raceAnswers(res *multiagent.Result) agent.Input {
	var rs []interrupt.Response
	for _, i := range res.Interrupts {
		ans := "42"
		if i.Name == "approval" {
			ans = "y"
		}
		rs = append(rs, interrupt.Respond(i.ID, ans))
	}
	return agent.Resume(rs...)
}

// answerToTheEnd answers what the run of res asks until it ends.
func answerToTheEnd(t *testing.T, g *graph.Graph, res *multiagent.Result) *multiagent.Result {
	t.Helper()
	for range 5 {
		if res.Status != multiagent.StatusInterrupted {
			return res
		}
		var err error
		res, err = g.Invoke(context.Background(), raceAnswers(res))
		require.NoError(t, err)
	}
	t.Fatal("the run did not end")
	return nil
}

// raceOut is what a helper that finished prints.
type raceOut struct {
	Status multiagent.Status `json:"status"`
	Order  []string          `json:"order"`
	Texts  map[string]string `json:"texts"`
}

// TestGraphRaceHelper is not a test: it is a helper process's body. Modes:
// "interrupt" starts the run and answers what it asks until it waits for
// the interrupt BRAID_GRAPH_RACE_AT names (a raceKey); "race" loads the
// session, prints "ready", waits for a line on stdin, then answers what
// is pending, exits raceConflict if that is a conflict, or else drives the
// run to its end and prints it; "finish" drives the run to its end and
// prints it.
func TestGraphRaceHelper(t *testing.T) {
	mode := os.Getenv(raceEnv)
	if mode == "" {
		t.Skip("only a helper process")
	}
	ctx := context.Background()
	st, err := openKillStore(ctx, os.Getenv("BRAID_GRAPH_RACE_STORE"), os.Getenv("BRAID_GRAPH_RACE_DIR"))
	require.NoError(t, err)
	defer st.Close()
	l := &raceLog{path: os.Getenv("BRAID_GRAPH_RACE_LOG")}
	b, hooks := raceGraph(l)
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, os.Getenv("BRAID_GRAPH_RACE_SESSION")), Hooks: hooks})
	var res *multiagent.Result
	switch mode {
	case "interrupt":
		at := os.Getenv("BRAID_GRAPH_RACE_AT")
		res, err = g.Invoke(ctx, agent.Text("go"))
		for range 5 {
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			if raceKey(res.Interrupts[0]) == at {
				break
			}
			res, err = g.Invoke(ctx, raceAnswers(res))
		}
		require.Equal(t, at, raceKey(res.Interrupts[0]))
	case "race":
		now, serr := g.Status(ctx)
		require.NoError(t, serr)
		require.Equal(t, multiagent.StatusInterrupted, now.Status)
		fmt.Println("ready")
		_, err = bufio.NewReader(os.Stdin).ReadString('\n')
		require.NoError(t, err)
		res, err = g.Invoke(ctx, raceAnswers(now))
		if errors.Is(err, persistence.ErrConflict) {
			var ce *persistence.ConflictError
			require.ErrorAs(t, err, &ce, "the conflict carries its record")
			fmt.Println("RETRY " + retryOutcome(ctx, func() error {
				_, err := g.Invoke(ctx, raceAnswers(now))
				return err
			}))
			require.NoError(t, g.Close(ctx))
			fmt.Fprintln(os.Stderr, "lost:", err)
			os.Exit(raceConflict)
		}
		require.NoError(t, err)
		res = answerToTheEnd(t, g, res)
	case "finish":
		res, err = g.Status(ctx)
		require.NoError(t, err)
		res = answerToTheEnd(t, g, res)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	require.NoError(t, g.Close(ctx))
	out := raceOut{Status: res.Status, Order: res.ExecutionOrder, Texts: map[string]string{}}
	for _, n := range res.Results {
		out.Texts[n.NodeID] = n.Text()
	}
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	fmt.Printf("RESULT %s\n", raw)
}

// retryOutcome retries a resume that lost with ErrConflict (the retry
// goes on from the stored run, which the winner may have saved again
// since: then it conflicts again) and names how it ends.
func retryOutcome(ctx context.Context, resume func() error) string {
	for range 20 {
		err := resume()
		switch {
		case err == nil:
			return "resumed"
		case errors.Is(err, persistence.ErrConflict):
			continue
		case errors.Is(err, interrupt.ErrUnknownID):
			return "unknown-id"
		case errors.Is(err, interrupt.ErrNotInterrupted):
			return "not-interrupted"
		default:
			return "error:" + strings.ReplaceAll(err.Error(), "\n", " ")
		}
	}
	return "conflicts"
}

// retryOf is how a losing racer's retry ended, as it printed it.
func retryOf(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(line, "RETRY "); ok {
			return r
		}
	}
	return ""
}

// raceRig is one test's store, session and log, for its helpers.
type raceRig struct {
	store, dir, session string
	log                 *raceLog
}

func (r raceRig) command(mode string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestGraphRaceHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), raceEnv+"="+mode, "BRAID_GRAPH_RACE_STORE="+r.store, "BRAID_GRAPH_RACE_DIR="+r.dir,
		"BRAID_GRAPH_RACE_SESSION="+r.session, "BRAID_GRAPH_RACE_LOG="+r.log.path,
		// A helper built with -race would wait a second at its exit.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func raceResult(t *testing.T, raw string) raceOut {
	t.Helper()
	for _, line := range strings.Split(raw, "\n") {
		if b, ok := strings.CutPrefix(line, "RESULT "); ok {
			var out raceOut
			require.NoError(t, json.Unmarshal([]byte(b), &out))
			return out
		}
	}
	t.Fatalf("the helper printed no result:\n%s", raw)
	return raceOut{}
}

// SPEC S4, S3, M5, M6, M10: two processes hold the same graph run, which
// waits for an answer (b's BeforeNodeCall gate, or the tool of ask's
// agent), and resume it with the same answer at the same moment. Exactly
// one proceeds and finishes the run; the other gets a
// *persistence.ConflictError (ErrConflict) and runs nothing, and its
// retry is refused (the answer was taken) rather than taking the run: the approved
// node and the answered tool run once, no interrupt is raised twice, and
// a third process finds the run finished without running anything.
func TestGraphProcess_TwoProcessesRacingAResumeRunItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	want := raceOut{Status: multiagent.StatusCompleted, Order: []string{"a", "b", "ask"},
		Texts: map[string]string{"a": "a done", "b": "b done", "ask": "ask done: answer 42"}}
	wantRuns := map[string]int{"model:a": 1, "model:b": 1, "model:ask": 2, "tool:ask": 1,
		"raise:approval:b": 1, "raise:which:ask": 1}
	for _, store := range []string{"sqlite", "postgres"} {
		for _, at := range []string{"approval:b", "which:ask"} {
			t.Run(store+"/"+at, func(t *testing.T) {
				if store == "postgres" {
					persistencetest.PostgresDSN(t) // skips, or fails under CI, without a server
				}
				dir := t.TempDir()
				rig := raceRig{store: store, dir: dir, session: "race-" + uuid.NewString(), log: &raceLog{path: filepath.Join(dir, "runs.log")}}
				raw, err := rig.command("interrupt", "BRAID_GRAPH_RACE_AT="+at).CombinedOutput()
				require.NoError(t, err, "%s", raw)

				hs := []*childproc.Child{childproc.Start(t, rig.command("race")), childproc.Start(t, rig.command("race"))}
				for _, h := range hs { // both hold the interrupted run
					h.Send(t, "go")
				}
				codes := map[int]int{}
				var winner *childproc.Child
				for _, h := range hs {
					code := h.Wait(t)
					codes[code]++
					if code == 0 {
						winner = h
					}
				}
				assert.Equal(t, map[int]int{0: 1, raceConflict: 1}, codes, "one wins, one conflicts:\n%s\n%s", hs[0].Output(), hs[1].Output())
				assert.Equal(t, wantRuns, rig.log.counts(t), "every node, tool and interrupt ran once")
				require.NotNil(t, winner, "one wins:\n%s\n%s", hs[0].Output(), hs[1].Output())
				assert.Equal(t, want, raceResult(t, winner.Output()), "the winner finishes the run")
				for _, h := range hs {
					if h != winner {
						assert.Contains(t, []string{"unknown-id", "not-interrupted"}, retryOf(h.Output()),
							"the loser's retry goes on from the stored run, where its answer is spent:\n%s", h.Output())
					}
				}

				raw, err = rig.command("finish").CombinedOutput()
				require.NoError(t, err, "%s", raw)
				assert.Equal(t, want, raceResult(t, string(raw)), "a new process finds the run finished")
				assert.Equal(t, wantRuns, rig.log.counts(t), "and runs nothing")
			})
		}
	}
}
