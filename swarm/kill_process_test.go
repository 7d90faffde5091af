//go:build unix

package swarm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// The tests of this file re-run this test binary as helper processes,
// which TestSwarmProcessHelper runs when BRAID_SWARM_PROC names a mode.
// Each helper builds its swarm on the store BRAID_SWARM_PROC_STORE names
// ("sqlite": the folder BRAID_SWARM_PROC_DIR; "postgres": the test
// server), on session BRAID_SWARM_PROC_SESSION, and appends what its
// agents, hooks and client do to the file BRAID_SWARM_PROC_LOG.
const procEnv = "BRAID_SWARM_PROC"

// Exit codes of a helper.
const (
	procFinished = 3 // a killing helper finished before its k-th save
	procConflict = 4 // a racing resume lost with persistence.ErrConflict
)

// runLog appends one line per event to a file, synced, so the events of
// a process killed with SIGKILL are all there, in order, across every
// process of a test.
type runLog struct {
	mu   sync.Mutex
	path string
}

func (l *runLog) add(line string) error {
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

func readRunLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// countRuns counts the log's lines that start with one of prefixes.
func countRuns(lines []string, prefixes ...string) map[string]int {
	out := map[string]int{}
	for _, l := range lines {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out[l]++
			}
		}
	}
	return out
}

// procSwarm is a → b → c: a hands off to b; b is gated by a BeforeNodeCall
// hook ("approval") and asks in one turn for its tool lookup (which
// interrupts with "which") and a handoff to c; c is gated too. Every
// model turn logs "model:<node>", every run of lookup past its answer
// "tool:b", every interrupt raised without an answer
// "raise:<name>:<node>".
func procSwarm(l *runLog) (*swarm.Builder, []hook.Provider) {
	handoffTo := func(id, to, msg string) model.ToolCall {
		return model.Call("h-"+id, swarm.HandoffTool, map[string]any{"agent_name": to, "message": msg, "context": map[string]any{"from": id}})
	}
	member := func(id string, first func() model.Turn, tools ...tool.Tool) agent.Config {
		m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
			if err := l.add("model:" + id); err != nil {
				return model.Turn{}, err
			}
			last, _ := req.LastMessage()
			if trs := last.ToolResults(); len(trs) > 0 {
				var texts []string
				for _, tr := range trs {
					texts = append(texts, tr.Text())
				}
				return model.TextTurn(id + " done: " + strings.Join(texts, "; ")), nil
			}
			return first(), nil
		})
		return agent.Config{ID: id, Model: m, Tools: tools}
	}
	lookup := tool.New("lookup", "test tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", map[string]string{"node": "b"})
		if err != nil {
			if lerr := l.add("raise:which:b"); lerr != nil {
				return "", lerr
			}
			return "", err
		}
		if err := l.add("tool:b"); err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	gated := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID == "a" {
			return nil
		}
		ans, err := ev.Interrupt("approval", map[string]string{"node": ev.NodeID})
		if err != nil {
			if lerr := l.add("raise:approval:" + ev.NodeID); lerr != nil {
				return lerr
			}
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelNode(ev.NodeID + " denied")
		}
		return nil
	})
	b := swarm.NewBuilder().
		AddAgent(member("a", func() model.Turn { return model.ToolTurn(handoffTo("a", "b", "dig")) })).
		AddAgent(member("b", func() model.Turn {
			return model.ToolTurn(handoffTo("b", "c", "write it up"), model.Call("t1", "lookup", map[string]any{}))
		}, lookup)).
		AddAgent(member("c", func() model.Turn { return model.TextTurn("c done") }))
	return b, []hook.Provider{gated}
}

// askKey names an interrupt of procSwarm by its name and node.
func askKey(in interrupt.Interrupt) string {
	var reason struct{ Node string }
	_ = json.Unmarshal(in.Reason, &reason)
	return in.Name + ":" + reason.Node
}

// procAnswer is the client's answer to an interrupt of procSwarm.
func procAnswer(in interrupt.Interrupt) string {
	if in.Name == "approval" {
		return "y"
	}
	return "42"
}

// driveProcSwarm drives s to its end as an application does, wherever
// its session stands: start the task, carry a cut-off run on, or answer
// what is asked. It logs "asked:<key>" for every interrupt it is shown
// and "accepted:<key>" once a resume answering it has returned.
func driveProcSwarm(ctx context.Context, s *swarm.Swarm, l *runLog) (*multiagent.Result, error) {
	for range 10 {
		st, err := s.Status(ctx)
		if err != nil {
			return nil, err
		}
		var in agent.Input
		var answered []string
		switch st.Status {
		case multiagent.StatusCompleted:
			return st, nil
		case multiagent.StatusPending:
			in = agent.Text("find the answer")
		case multiagent.StatusExecuting:
			in = agent.Input{} // carry the cut-off run on
		case multiagent.StatusInterrupted:
			var rs []interrupt.Response
			for _, i := range st.Interrupts {
				if err := l.add("asked:" + askKey(i)); err != nil {
					return nil, err
				}
				answered = append(answered, askKey(i))
				rs = append(rs, interrupt.Respond(i.ID, procAnswer(i)))
			}
			in = agent.Resume(rs...)
		default:
			return nil, fmt.Errorf("run ended %s: %s", st.Status, st.Message)
		}
		if _, err := s.Invoke(ctx, in); err != nil {
			return nil, err
		}
		for _, k := range answered {
			if err := l.add("accepted:" + k); err != nil {
				return nil, err
			}
		}
	}
	return nil, errors.New("the swarm did not finish")
}

// driveProcSwarmTo starts s's run and answers what it asks until it waits
// for the interrupt with askKey at.
func driveProcSwarmTo(ctx context.Context, s *swarm.Swarm, l *runLog, at string) (*multiagent.Result, error) {
	res, err := s.Invoke(ctx, agent.Text("find the answer"))
	for range 10 {
		if err != nil || res.Status != multiagent.StatusInterrupted {
			return res, fmt.Errorf("want an interrupt %s, got %v (%v)", at, res, err)
		}
		var rs []interrupt.Response
		for _, i := range res.Interrupts {
			if err := l.add("asked:" + askKey(i)); err != nil {
				return nil, err
			}
			if askKey(i) == at {
				return res, nil
			}
			rs = append(rs, interrupt.Respond(i.ID, procAnswer(i)))
		}
		res, err = s.Invoke(ctx, agent.Resume(rs...))
	}
	return nil, fmt.Errorf("no interrupt %s", at)
}

// procOut is what a helper that finished reports on its stdout.
type procOut struct {
	Status multiagent.Status `json:"status"`
	Order  []string          `json:"order"`
	Texts  map[string]string `json:"texts"`
	Count  int               `json:"count"`
}

func outOf(res *multiagent.Result) procOut {
	out := procOut{Status: res.Status, Order: res.ExecutionOrder, Texts: map[string]string{}, Count: res.ExecutionCount}
	for _, n := range res.Results {
		out.Texts[n.NodeID] = n.Text()
	}
	return out
}

// killAfterSave kills its process (SIGKILL) right after its k-th save
// has committed.
type killAfterSave struct {
	persistence.Store
	after int64
	saves atomic.Int64
}

func (s *killAfterSave) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil && s.saves.Add(1) == s.after {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return v, err
}

func openProcStore(ctx context.Context) (persistence.Store, error) {
	if os.Getenv("BRAID_SWARM_PROC_STORE") == "postgres" {
		return postgres.New(ctx, postgres.Config{DSN: os.Getenv("BRAID_TEST_POSTGRES_DSN")})
	}
	return sqlite.Open(ctx, sqlite.Config{Dir: os.Getenv("BRAID_SWARM_PROC_DIR")})
}

// TestSwarmProcessHelper is not a test: it is a helper process's body.
// Modes: "kill" drives the run from wherever it stands and SIGKILLs
// itself right after its BRAID_SWARM_PROC_KILL-th save (if the run ends
// first, it prints how many saves it made and exits procFinished); "finish" drives it to its end and prints it;
// "interrupt" drives it until it waits for the interrupt named by
// BRAID_SWARM_PROC_AT (an askKey); "race" loads the
// session, prints "ready", waits for a line on stdin, then answers every
// pending interrupt at once and, if that is not a conflict, finishes.
func TestSwarmProcessHelper(t *testing.T) {
	mode := os.Getenv(procEnv)
	if mode == "" {
		t.Skip("only a helper process")
	}
	ctx := context.Background()
	st, err := openProcStore(ctx)
	require.NoError(t, err)
	defer st.Close()
	if mode == "kill" {
		after, err := strconv.ParseInt(os.Getenv("BRAID_SWARM_PROC_KILL"), 10, 64)
		require.NoError(t, err)
		st = &killAfterSave{Store: st, after: after}
	}
	l := &runLog{path: os.Getenv("BRAID_SWARM_PROC_LOG")}
	b, hooks := procSwarm(l)
	s := build(t, b, swarm.Config{Session: manager(t, st, os.Getenv("BRAID_SWARM_PROC_SESSION")), Hooks: hooks})
	var res *multiagent.Result
	switch mode {
	case "kill":
		_, err = driveProcSwarm(ctx, s, l)
		require.NoError(t, err)
		require.NoError(t, s.Close(ctx))
		fmt.Printf("SAVES %d\n", st.(*killAfterSave).saves.Load())
		os.Exit(procFinished)
	case "finish":
		res, err = driveProcSwarm(ctx, s, l)
	case "interrupt":
		res, err = driveProcSwarmTo(ctx, s, l, os.Getenv("BRAID_SWARM_PROC_AT"))
	case "race":
		now, serr := s.Status(ctx)
		require.NoError(t, serr)
		require.Equal(t, multiagent.StatusInterrupted, now.Status)
		fmt.Println("ready")
		_, err = bufio.NewReader(os.Stdin).ReadString('\n')
		require.NoError(t, err)
		var rs []interrupt.Response
		for _, i := range now.Interrupts {
			rs = append(rs, interrupt.Respond(i.ID, procAnswer(i)))
		}
		// The winner's result is read again by driveProcSwarm, below.
		_, err = s.Invoke(ctx, agent.Resume(rs...))
		if errors.Is(err, persistence.ErrConflict) {
			var ce *persistence.ConflictError
			require.ErrorAs(t, err, &ce, "the conflict carries its record")
			fmt.Println("RETRY " + retryOutcome(ctx, func() error {
				_, err := s.Invoke(ctx, agent.Resume(rs...))
				return err
			}))
			require.NoError(t, s.Close(ctx))
			fmt.Fprintln(os.Stderr, "lost:", err)
			os.Exit(procConflict)
		}
		require.NoError(t, err)
		res, err = driveProcSwarm(ctx, s, l)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	b2, err := json.Marshal(outOf(res))
	require.NoError(t, err)
	fmt.Printf("RESULT %s\n", b2)
}

// procRig is one test's store, session and log, for its helpers.
type procRig struct {
	store, dir, session, log string
}

func newProcRig(t *testing.T, store string) procRig {
	dir := t.TempDir()
	return procRig{store: store, dir: dir, session: "proc-" + uuid.NewString(), log: filepath.Join(dir, "runs.log")}
}

func (r procRig) command(mode string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSwarmProcessHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), procEnv+"="+mode, "BRAID_SWARM_PROC_STORE="+r.store, "BRAID_SWARM_PROC_DIR="+r.dir,
		"BRAID_SWARM_PROC_SESSION="+r.session, "BRAID_SWARM_PROC_LOG="+r.log,
		// A helper built with -race would wait a second at its exit.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

// resultOf is the result a helper printed.
func resultOf(t *testing.T, raw []byte) procOut {
	t.Helper()
	for _, line := range strings.Split(string(raw), "\n") {
		if b, ok := strings.CutPrefix(line, "RESULT "); ok {
			var out procOut
			require.NoError(t, json.Unmarshal([]byte(b), &out))
			return out
		}
	}
	t.Fatalf("the helper printed no result:\n%s", raw)
	return procOut{}
}

// runProc runs a helper of r in mode to its end and returns what it printed.
func (r procRig) runProc(t *testing.T, mode string) procOut {
	t.Helper()
	raw, err := r.command(mode).CombinedOutput()
	require.NoError(t, err, "%s", raw)
	return resultOf(t, raw)
}

// cleanProcRun runs procSwarm once without a crash, on a memory store
// in this process: the result and the log every crashed run must match.
func cleanProcRun(t *testing.T) (procOut, []string) {
	t.Helper()
	ctx := context.Background()
	l := &runLog{path: filepath.Join(t.TempDir(), "clean.log")}
	b, hooks := procSwarm(l)
	s := build(t, b, swarm.Config{Session: manager(t, memory.New(), "clean"), System: actorstest.System(t), Hooks: hooks})
	res, err := driveProcSwarm(ctx, s, l)
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	return outOf(res), readRunLog(t, l.path)
}

// procStores are the stores every process test of this file runs on:
// the embedded default, and PostgreSQL (skipped without a server, but
// never under CI).
var procStores = []string{"sqlite", "postgres"}

// SPEC S1, S5, S6, M6, M9, M10, I9: a swarm process is killed (SIGKILL)
// right after each of its saves in turn, in a run that stops at b's
// BeforeNodeCall gate, at b's tool (after a's handoff to b) and at c's
// gate (after b's handoff to c). A new process carries the run on from
// the store and answers what it is asked. The run ends as the run
// without a crash does (same node history, same node results); no model
// turn or tool that completed before the kill runs again (every one
// runs, across both processes, as often as without a crash); every
// interrupt is put to the client (none lost), and none is raised or asked
// again once a resume answering it has returned. (An interrupt raised but
// not yet saved when the process died may be raised again: it was never
// asked.)
func TestSwarmProcess_KilledAfterEverySaveFinishesAsAnUninterruptedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	want, clean := cleanProcRun(t)
	require.Equal(t, []string{"a", "b", "c"}, want.Order)
	wantRuns := countRuns(clean, "model:", "tool:")
	require.Equal(t, map[string]int{"model:a": 2, "model:b": 2, "model:c": 1, "tool:b": 1}, wantRuns)
	require.Equal(t, map[string]int{"asked:approval:b": 1, "asked:which:b": 1, "asked:approval:c": 1}, countRuns(clean, "asked:"))
	for _, store := range procStores {
		t.Run(store, func(t *testing.T) {
			if store == "postgres" {
				persistencetest.PostgresDSN(t) // skips, or fails under CI, without a server
			}
			// A run without a kill counts the saves; then one round per save,
			// concurrently (the rounds wait on I/O and child processes).
			counted := newProcRig(t, store)
			raw, err := counted.command("kill", "BRAID_SWARM_PROC_KILL=0").CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit) && exit.ExitCode() == procFinished, "%v\n%s", err, raw)
			saves := savesOf(t, raw)
			require.Greater(t, saves, 10, "the run has more saves than that")
			for k := 1; k <= saves; k++ {
				t.Run(fmt.Sprintf("save-%d", k), func(t *testing.T) {
					t.Parallel()
					killRound(t, store, k, want, wantRuns)
				})
			}
		})
	}
}

// savesOf is the number of saves a helper that finished printed.
func savesOf(t *testing.T, raw []byte) int {
	t.Helper()
	for _, line := range strings.Split(string(raw), "\n") {
		if n, ok := strings.CutPrefix(line, "SAVES "); ok {
			saves, err := strconv.Atoi(n)
			require.NoError(t, err)
			return saves
		}
	}
	t.Fatalf("the helper printed no save count:\n%s", raw)
	return 0
}

// killRound kills a helper right after its k-th save, finishes the run in
// a new process and checks it against the run without a crash.
func killRound(t *testing.T, store string, k int, want procOut, wantRuns map[string]int) {
	rig := newProcRig(t, store)
	out, err := rig.command("kill", "BRAID_SWARM_PROC_KILL="+strconv.Itoa(k)).CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "save %d: %v\n%s", k, err, out)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "save %d: %v\n%s", k, err, out)
	killed := readRunLog(t, rig.log)

	got := rig.runProc(t, "finish")
	all := readRunLog(t, rig.log)
	assert.Equal(t, want, got, "save %d: the run ends as without a crash", k)
	assert.Equal(t, wantRuns, countRuns(all, "model:", "tool:"),
		"save %d: nothing that completed ran again (killed process: %v, then: %v)", k, killed, all[len(killed):])
	accepted := map[string]bool{}
	for i, line := range all {
		if key, ok := strings.CutPrefix(line, "accepted:"); ok {
			accepted[key] = true
		}
		if key, ok := strings.CutPrefix(line, "raise:"); ok {
			assert.False(t, accepted[key], "save %d: %s raised again after its answer was taken (line %d)", k, key, i)
		}
		if key, ok := strings.CutPrefix(line, "asked:"); ok {
			assert.False(t, accepted[key], "save %d: %s asked again after its answer was taken (line %d)", k, key, i)
		}
	}
	for _, key := range []string{"approval:b", "which:b", "approval:c"} {
		assert.True(t, slices.Contains(all, "asked:"+key), "save %d: %s was asked (not lost)", k, key)
	}
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
