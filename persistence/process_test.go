//go:build unix

package persistence_test

// Tests that cross OS processes (SPEC S1, S4, S5): the test binary re-executes
// itself as a helper (TestMain runs the helper when BRAID_HELPER is set), so
// an interrupt raised in one process is answered in another, processes are
// killed with SIGKILL at every save point and inside a tool, and two
// processes race to resume one run. Every test runs on the embedded SQLite
// store and on PostgreSQL (which CI always provides).

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("BRAID_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

const (
	exitOK       = 0
	exitFailed   = 2
	exitConflict = 3
)

// The scenario: the model asks for delete_files (a hook asks approval) and
// inspect_files (no approval) at once, then answers with the results. Each
// tool run appends a line to the runs file, so the parent counts runs
// across processes.
type pathsIn struct {
	Paths []string `json:"paths"`
}

func scenarioAgent(sess agent.Session, runsFile string, opts ...func(*agent.Config)) (*agent.Agent, error) {
	record := func(name string) error {
		f, err := os.OpenFile(runsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.WriteString(name + "\n"); err != nil {
			return err
		}
		return f.Sync()
	}
	crashIn := func(name string) {
		if os.Getenv("BRAID_CRASH_IN_TOOL") == name {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // cut off mid-tool: it ran, its result is not saved
			select {}
		}
	}
	// delete_files must not run twice (SPEC S6); inspect_files may.
	del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (bool, error) {
		if err := record("delete_files"); err != nil {
			return false, err
		}
		crashIn("delete_files")
		return true, nil
	}, tool.AtMostOnce())
	insp := tool.New("inspect_files", "inspect", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		if err := record("inspect_files"); err != nil {
			return "", err
		}
		crashIn("inspect_files")
		return "inspected", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			var parts []string
			for _, r := range rs {
				parts = append(parts, r.Text())
			}
			return model.TextTurn("done: " + strings.Join(parts, ", ")), nil
		}
		return model.ToolTurn(
			model.Call("t1", "delete_files", pathsIn{Paths: []string{"a/b/c.txt"}}),
			model.Call("t2", "inspect_files", pathsIn{Paths: []string{"a/b/c.txt"}}),
		), nil
	})
	approve := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != "delete_files" {
			return nil
		}
		ans, err := ev.Interrupt("myapp-approval", map[string]any{"paths": []string{"a/b/c.txt"}})
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelTool("denied")
		}
		return nil
	})
	cfg := agent.Config{Model: m, Tools: []tool.Tool{del, insp}, Hooks: []hook.Provider{approve}, Session: sess}
	for _, o := range opts {
		o(&cfg)
	}
	return agent.New(context.Background(), cfg)
}

// helperStore opens the store named by the environment.
func helperStore(ctx context.Context) (persistence.Store, error) {
	switch os.Getenv("BRAID_HELPER_STORE") {
	case "postgres":
		return postgres.New(ctx, postgres.Config{DSN: os.Getenv("BRAID_TEST_POSTGRES_DSN")})
	case "sqlite":
		return sqlite.Open(ctx, sqlite.Config{Dir: os.Getenv("BRAID_HELPER_DIR")})
	}
	return nil, fmt.Errorf("unknown store %q", os.Getenv("BRAID_HELPER_STORE"))
}

func helperMain(mode string) int {
	ctx := context.Background()
	session := os.Getenv("BRAID_HELPER_SESSION")
	runs := os.Getenv("BRAID_HELPER_RUNS")
	crashAt, _ := strconv.Atoi(os.Getenv("BRAID_CRASH_AT"))
	saves := 0
	st, err := helperStore(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: store:", err)
		return exitFailed
	}
	defer st.Close()
	var mopts []persistence.ManagerOption
	if crashAt > 0 {
		mopts = append(mopts, persistence.AfterSaveForTest(func(persistence.Key, persistence.SavePoint, int64) {
			if saves++; saves == crashAt {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}))
	}
	sess, err := persistence.NewSessionManager(st, session, mopts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return exitFailed
	}
	var agentOpts []func(*agent.Config)
	passivated := make(chan struct{}, 1)
	if mode == "passivate" {
		// Its own system, to see the passivation: the agent's actor is
		// stopped once it waits for the answer.
		sys, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) {
			if l == actors.Passivated {
				passivated <- struct{}{}
			}
		}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return exitFailed
		}
		agentOpts = append(agentOpts, func(c *agent.Config) { c.System, c.IdleTimeout = sys, 10*time.Millisecond })
	}
	a, err := scenarioAgent(sess, runs, agentOpts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: agent:", err)
		return exitFailed
	}
	out := json.NewEncoder(os.Stdout)
	switch mode {
	case "passivate":
		// Raise the interrupt, wait for the agent's passivation, report,
		// then wait to be killed.
		<-passivated // New's activation (it checks the session)
		res, err := a.Invoke(ctx, agent.Text("delete old files"))
		if err != nil || res.StopReason != agent.StopInterrupt {
			fmt.Fprintln(os.Stderr, "helper: want an interrupt:", res, err)
			return exitFailed
		}
		<-passivated // the interrupted agent's
		_ = out.Encode(map[string]any{"interrupts": res.Interrupts})
		select {}
	case "interrupt":
		// Raise the interrupt, report it, then wait to be killed.
		res, err := a.Invoke(ctx, agent.Text("delete old files"))
		if err != nil || res.StopReason != agent.StopInterrupt {
			fmt.Fprintln(os.Stderr, "helper: want an interrupt:", res, err)
			return exitFailed
		}
		_ = out.Encode(map[string]any{"interrupts": res.Interrupts})
		select {}
	case "resume", "race-resume":
		if mode == "race-resume" {
			fmt.Println("ready")
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				return exitFailed
			}
		}
		answer := agent.Resume(interrupt.Respond(os.Getenv("BRAID_HELPER_ID"), "y"))
		res, err := a.Invoke(ctx, answer)
		if errors.Is(err, persistence.ErrConflict) {
			fmt.Fprintln(os.Stderr, "helper:", err)
			if mode == "race-resume" {
				return retryLost(ctx, a, answer)
			}
			return exitConflict
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: resume:", err)
			return exitFailed
		}
		_ = out.Encode(map[string]any{"stop": res.StopReason, "text": res.Message.Text()})
		return exitOK
	case "run":
		// The client loop of the seed, from wherever the session is: answer
		// pending interrupts, continue a cut-off run, or start one.
		for range 10 {
			var in agent.Input // empty: carry on from the history
			snap, err := a.Snapshot(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper: snapshot:", err)
				return exitFailed
			}
			st, err := a.Status(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper: status:", err)
				return exitFailed
			}
			switch msgs := snap.Messages; {
			case st.Interrupted():
				var rs []interrupt.Response
				for _, i := range st.Interrupts {
					ans := "y"
					if i.Name == agent.RecoveryInterrupt {
						// A cut-off at-most-once tool: BRAID_RECOVERY
						// answers (default rerun: it had not run yet).
						ans = cmp.Or(os.Getenv("BRAID_RECOVERY"), agent.RecoveryRerun)
						fmt.Fprintln(os.Stderr, "helper: recovery of", i.ID)
					}
					rs = append(rs, interrupt.Respond(i.ID, ans))
				}
				in = agent.Resume(rs...)
			case st.Incomplete():
			case len(msgs) == 0:
				in = agent.Text("delete old files")
			case msgs[len(msgs)-1].Role == model.RoleAssistant && len(msgs[len(msgs)-1].ToolUses()) == 0:
				_ = out.Encode(map[string]any{"messages": msgs})
				return exitOK
			}
			if _, err := a.Invoke(ctx, in); err != nil {
				fmt.Fprintln(os.Stderr, "helper: run:", err)
				return exitFailed
			}
		}
		fmt.Fprintln(os.Stderr, "helper: run did not finish")
		return exitFailed
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return exitFailed
}

// retryLost retries, as the docs advise, a resume that lost with
// ErrConflict: the agent took the stored run, which the winner may have
// saved again since (then the retry conflicts again, and the next goes on
// from the newer run). Whether the winner still runs the run (its claim is
// stored) or has finished it, the answer is taken: the retry is refused
// with interrupt.ErrNotInterrupted naming the id, and the helper exits
// exitConflict. Any other outcome (a retry that runs) is exitFailed.
func retryLost(ctx context.Context, a *agent.Agent, answer agent.Input) int {
	for range 20 {
		_, err := a.Invoke(ctx, answer)
		if errors.Is(err, persistence.ErrConflict) {
			continue
		}
		var ie *interrupt.IDError
		if errors.Is(err, interrupt.ErrNotInterrupted) && errors.As(err, &ie) && ie.ID == answer.Responses()[0].ID {
			return exitConflict
		}
		fmt.Fprintln(os.Stderr, "helper: the retry of a lost resume was not refused:", err)
		return exitFailed
	}
	fmt.Fprintln(os.Stderr, "helper: the retry of a lost resume conflicted 20 times")
	return exitFailed
}

// helper is a started helper process.
type helper struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *bufio.Reader
	stderr *lockedBuffer
}

// lockedBuffer collects a helper's stderr; exec writes it from a goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	store, dir, session, runs string
}

// stores are the stores every process test runs on.
var stores = []string{"sqlite", "postgres"}

func newEnv(t *testing.T, store string) env {
	dir := t.TempDir()
	e := env{store: store, dir: dir, session: fmt.Sprintf("sess-%d", time.Now().UnixNano()), runs: filepath.Join(dir, "runs.txt")}
	if store == "postgres" {
		persistencetest.PostgresDSN(t)
	}
	return e
}

func startHelper(t *testing.T, e env, mode string, extra ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BRAID_HELPER="+mode, "BRAID_HELPER_STORE="+e.store, "BRAID_HELPER_DIR="+e.dir,
		"BRAID_HELPER_SESSION="+e.session, "BRAID_HELPER_RUNS="+e.runs)
	cmd.Env = append(cmd.Env, extra...)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stdin = inR
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	inR.Close()
	h := &helper{cmd: cmd, stdin: inW, stdout: bufio.NewReader(outR), stderr: stderr}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); inW.Close() })
	return h
}

// wait returns the exit code (-1 when killed by a signal).
func (h *helper) wait(t *testing.T) int {
	t.Helper()
	err := h.cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "helper: %v", err)
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1
	}
	return ee.ExitCode()
}

func (h *helper) readJSON(t *testing.T, v any) {
	t.Helper()
	line, err := h.stdout.ReadString('\n')
	require.NoError(t, err, "helper stderr: %s", h.stderr.String())
	require.NoError(t, json.Unmarshal([]byte(line), v), line)
}

func runCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}
	}
	require.NoError(t, err)
	out := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		out[l]++
	}
	return out
}

// interruptInProcess runs the interrupt in a helper, kills it with SIGKILL
// once it has reported the interrupt, and returns the interrupt id.
func interruptInProcess(t *testing.T, e env) string {
	h := startHelper(t, e, "interrupt")
	var got struct{ Interrupts []interrupt.Interrupt }
	h.readJSON(t, &got)
	require.Len(t, got.Interrupts, 1)
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	assert.Equal(t, -1, h.wait(t))
	return got.Interrupts[0].ID
}

// SPEC S1, I9: the interrupt is raised in one OS process, which is killed;
// a brand-new process resumes it from the store and finishes; every tool
// runs exactly once.
func TestProcess_InterruptKillResume(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, store)
			id := interruptInProcess(t, e)
			assert.Equal(t, "v1:before_tool_call:t1:"+interrupt.NameUUID("myapp-approval"), id)
			assert.Equal(t, map[string]int{"inspect_files": 1}, runCounts(t, e.runs), "the sibling ran before the kill")

			h := startHelper(t, e, "resume", "BRAID_HELPER_ID="+id)
			var res struct{ Stop, Text string }
			h.readJSON(t, &res)
			require.Equal(t, exitOK, h.wait(t), h.stderr.String())
			assert.Equal(t, "end_turn", res.Stop)
			assert.Equal(t, "done: true, inspected", res.Text)
			assert.Equal(t, map[string]int{"delete_files": 1, "inspect_files": 1}, runCounts(t, e.runs))
		})
	}
}

// SPEC R4, S1: the agent is passivated in one OS process while it waits for
// the answer (its actor stopped, its state only in the store), which is
// then killed; a brand-new process, with a registry of its own, activates
// it from the store on the resume and finishes; every tool runs once.
func TestProcess_PassivatedAgentResumesInAFreshProcess(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, store)
			h := startHelper(t, e, "passivate")
			var got struct{ Interrupts []interrupt.Interrupt }
			h.readJSON(t, &got)
			require.Len(t, got.Interrupts, 1)
			require.NoError(t, h.cmd.Process.Kill())
			assert.Equal(t, -1, h.wait(t))

			r := startHelper(t, e, "resume", "BRAID_HELPER_ID="+got.Interrupts[0].ID)
			var res struct{ Stop, Text string }
			r.readJSON(t, &res)
			require.Equal(t, exitOK, r.wait(t), r.stderr.String())
			assert.Equal(t, "end_turn", res.Stop)
			assert.Equal(t, "done: true, inspected", res.Text)
			assert.Equal(t, map[string]int{"delete_files": 1, "inspect_files": 1}, runCounts(t, e.runs))
		})
	}
}

// SPEC S4, S6: two processes resume one interrupted run at once: exactly
// one proceeds, the other gets the conflict error; the tool runs once and
// the stored session is the winner's. The loser retries its resume (once
// more after each conflict): whether the winner is still running the run
// or has finished it, the retry is refused as waiting for no answer
// (interrupt.ErrNotInterrupted naming the id) and runs nothing.
func TestProcess_TwoResumesOneWins(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, store)
			id := interruptInProcess(t, e)
			var hs []*helper
			for range 2 {
				h := startHelper(t, e, "race-resume", "BRAID_HELPER_ID="+id)
				line, err := h.stdout.ReadString('\n')
				require.NoError(t, err, h.stderr.String())
				require.Equal(t, "ready\n", line)
				hs = append(hs, h)
			}
			for _, h := range hs { // both have loaded the interrupted session
				_, err := h.stdin.WriteString("go\n")
				require.NoError(t, err)
			}
			codes := map[int]int{}
			for _, h := range hs {
				codes[h.wait(t)]++
			}
			assert.Equal(t, map[int]int{exitOK: 1, exitConflict: 1}, codes, "%s / %s", hs[0].stderr, hs[1].stderr)
			assert.Equal(t, map[string]int{"delete_files": 1, "inspect_files": 1}, runCounts(t, e.runs))

			// Nothing lost: a new process finds the finished run.
			h := startHelper(t, e, "run")
			var fin struct{ Messages []model.Message }
			h.readJSON(t, &fin)
			require.Equal(t, exitOK, h.wait(t), h.stderr.String())
			require.Len(t, fin.Messages, 4)
			assert.Equal(t, "done: true, inspected", fin.Messages[3].Text())
		})
	}
}

// openStore opens e's store in the test process.
func openStore(t *testing.T, e env) persistence.Store {
	t.Helper()
	ctx := context.Background()
	var st persistence.Store
	var err error
	if e.store == "postgres" {
		st, err = postgres.New(ctx, postgres.Config{DSN: persistencetest.PostgresDSN(t)})
	} else {
		st, err = sqlite.Open(ctx, sqlite.Config{Dir: e.dir})
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// finishInNewProcess runs the seed's client loop in a new process and
// checks that it ends with the finished run and a valid history.
func finishInNewProcess(t *testing.T, e env, extra ...string) []model.Message {
	t.Helper()
	r := startHelper(t, e, "run", extra...)
	var fin struct{ Messages []model.Message }
	r.readJSON(t, &fin)
	require.Equal(t, exitOK, r.wait(t), r.stderr.String())
	requireValidHistory(t, fin.Messages)
	if len(extra) == 0 {
		assert.Equal(t, "done: true, inspected", fin.Messages[len(fin.Messages)-1].Text())
	}
	return fin.Messages
}

// SPEC S1, S5, S6: the process is killed (SIGKILL) right after each of its
// saves in turn; the store holds exactly that save (committed saves survive
// the process), and a new process carries on from it and finishes with a
// valid history. No tool whose result was saved runs again.
func TestProcess_KilledAfterEverySavePoint(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			if store == "postgres" {
				persistencetest.PostgresDSN(t) // skips (or fails under CI) here, not in every save-N subtest
			}
			finished := false
			for n := 1; !finished; n++ {
				require.LessOrEqual(t, n, 20, "the run should finish within 20 saves")
				t.Run(fmt.Sprintf("save-%d", n), func(t *testing.T) {
					e := newEnv(t, store)
					h := startHelper(t, e, "run", "BRAID_CRASH_AT="+strconv.Itoa(n))
					code := h.wait(t)
					if code == exitOK {
						finished = true // fewer than n saves: every point before was covered
						return
					}
					require.Equal(t, -1, code, "the helper must die by SIGKILL, not fail: %s", h.stderr.String())
					rec, err := openStore(t, e).Load(context.Background(),
						persistence.Key{SessionID: e.session, Kind: persistence.KindAgent, ID: agent.DefaultID})
					require.NoError(t, err)
					assert.Equal(t, int64(n), rec.Version, "the killed process's last save is stored")
					finishInNewProcess(t, e)
					assert.Equal(t, map[string]int{"delete_files": 1, "inspect_files": 1}, runCounts(t, e.runs))
				})
			}
		})
	}
}

// SPEC S6: a process killed inside a tool (it ran, its result was not
// saved) is carried on by a new process, which runs that tool again (at
// least once) and no other tool twice.
func TestProcess_KilledInsideATool(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, store)
			h := startHelper(t, e, "run", "BRAID_CRASH_IN_TOOL=inspect_files")
			require.Equal(t, -1, h.wait(t), h.stderr.String())
			assert.Equal(t, map[string]int{"inspect_files": 1}, runCounts(t, e.runs))
			finishInNewProcess(t, e)
			assert.Equal(t, map[string]int{"delete_files": 1, "inspect_files": 2}, runCounts(t, e.runs))
		})
	}
}

// SPEC S6: a process killed inside an at-most-once tool (delete_files) is
// carried on by a new process, which does not run it again: it stops with
// the braid.recovery interrupt, and the answer "skip" gives the model an
// error result saying the run was cut off by a crash.
func TestProcess_KilledInsideAnAtMostOnceTool(t *testing.T) {
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, store)
			h := startHelper(t, e, "run", "BRAID_CRASH_IN_TOOL=delete_files")
			require.Equal(t, -1, h.wait(t), h.stderr.String())
			assert.Equal(t, 1, runCounts(t, e.runs)["delete_files"])
			msgs := finishInNewProcess(t, e, "BRAID_RECOVERY=skip")
			assert.Equal(t, 1, runCounts(t, e.runs)["delete_files"], "not run again")
			last := msgs[len(msgs)-1].Text()
			assert.Contains(t, last, "cut off by a crash")
			assert.Contains(t, last, "inspected")
		})
	}
}

func requireValidHistory(t *testing.T, msgs []model.Message) {
	t.Helper()
	require.NotEmpty(t, msgs)
	assert.Equal(t, model.RoleUser, msgs[0].Role)
	for i, m := range msgs {
		if uses := m.ToolUses(); len(uses) > 0 {
			require.Less(t, i+1, len(msgs))
			rs := msgs[i+1].ToolResults()
			require.Len(t, rs, len(uses))
			for k := range uses {
				assert.Equal(t, uses[k].ToolUseID, rs[k].ToolUseID)
			}
		}
		if i > 0 {
			assert.NotEqual(t, msgs[i-1].Role, m.Role, "roles alternate at %d", i)
		}
	}
}
