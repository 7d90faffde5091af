// Command bench prints Braid's figures for the scenarios of the Strands
// TypeScript peer benchmark, and the ratio to the peer when its results are
// given:
//
//	go run ./bench                              # Braid only
//	go run ./bench -peer results.jsonl          # with the peer's run-bench.sh output
//	go run ./bench -only b5                     # only b5: memory per agent, activation
//	go run ./bench -only b3                     # only b3: graphs (chain, fan-out, gated fan-out)
//	go run ./bench -only b4 -peer-dir DIR       # only b4, in rounds paired with the peer's b4
//
// Run the peer in the same session (scripts/peer-bench.sh does) and compare
// ratios, not absolute times: these machines are shared and noisy. The
// peer's b5 lines (node --expose-gc bench/b5_memory.mjs MODE 1000, for MODE
// idle, interrupted and completed) fill b5's peer column when the results
// hold them.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct {
	scenario, mode string
	peerBench      string
	peerMode       string
	res            testing.BenchmarkResult
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	peerFile := fs.String("peer", "", "JSON lines written by the peer's run-bench.sh (optional)")
	pgDSN := fs.String("postgres", os.Getenv("BRAID_TEST_POSTGRES_DSN"), "PostgreSQL DSN for the b4 postgres row (default $BRAID_TEST_POSTGRES_DSN; none: no row)")
	rounds := fs.Int("rounds", 3, "run each benchmark this many times and keep the best")
	only := fs.String("only", "", "run only this part: b3 (graphs), b4 (the paired rounds; needs -peer-dir) or b5 (memory per agent, activation of a passivated agent); empty: everything")
	peerDir := fs.String("peer-dir", "", "an installed copy of the peer benchmark (scripts/peer-bench.sh leaves one in /tmp/braid-peer/strands-ts): b4 is then also measured in rounds paired with the peer's b4 (optional)")
	paired := fs.Int("paired", 5, "paired b4 rounds (with -peer-dir)")
	b3Reps := fs.Int("b3-reps", 10, "b3: runs per scenario (after two warm-ups; the 10,000-node ones run 3)")
	b5Agents := fs.Int("b5-agents", 1000, "agents per b5 measurement")
	passivateAfter := fs.Duration("passivate-after", 250*time.Millisecond, "b5: IdleTimeout of the passivated agents; must outlast one timed loop of activations")
	child := fs.String("fsync-child", "", "internal: run the b4 cycles that strace counts (durable|nofsync|clients32)")
	childDir := fs.String("fsync-dir", "", "internal: the store folder of -fsync-child")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *child != "" {
		return fsyncChild(*child, *childDir)
	}
	if *only != "" && *only != "b5" && *only != "b3" && *only != "b4" {
		return fmt.Errorf("-only %q: want b3, b4, b5 or nothing", *only)
	}
	if *only == "b4" && *peerDir == "" {
		return errors.New("-only b4 needs -peer-dir")
	}
	if *peerDir != "" && (*only == "b3" || *only == "b5") {
		return fmt.Errorf("-peer-dir is for b4: with -only %s it would do nothing", *only)
	}
	if *paired < 1 {
		return errors.New("-paired must be positive")
	}
	if *b3Reps < 1 {
		return errors.New("-b3-reps must be positive")
	}
	if *b5Agents < 1 || *passivateAfter <= 0 {
		return errors.New("-b5-agents and -passivate-after must be positive")
	}
	peer, err := readPeer(*peerFile)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if *only == "" || *only == "b4" {
		env, err := benchcase.NewEnv()
		if err != nil {
			return err
		}
		defer env.Close()
		if *only == "" {
			if err := throughput(ctx, w, env, peer.perSecond, *rounds, *pgDSN); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "Braid, %s %s/%s, %d CPUs\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
		}
		if *peerDir != "" {
			if err := pairedB4(ctx, w, env, *peerDir, *paired); err != nil {
				return err
			}
		}
		if *only == "b4" {
			return nil
		}
	} else {
		fmt.Fprintf(w, "Braid, %s %s/%s, %d CPUs, best of %d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *rounds)
	}
	if *only != "b5" {
		if err := runB3(ctx, w, peer, *b3Reps); err != nil {
			return err
		}
	}
	if *only == "b3" {
		return nil
	}
	b5, err := runB5(ctx, *b5Agents, *rounds, *passivateAfter)
	if err != nil {
		return err
	}
	printB5(w, b5, peer)
	return nil
}

// throughput runs and prints b1, b2 and b4, the fsync counts and the actor
// share.
func throughput(ctx context.Context, w io.Writer, env *benchcase.Env, peer map[string]float64, rounds int, pgDSN string) error {
	rows := []row{
		{scenario: "b1 invoke, one tool", mode: "fresh", peerBench: "b1_invoke_one_tool", peerMode: "fresh",
			res: best(rounds, scenario(ctx, env, true, benchcase.InvokeOneTool))},
		{scenario: "b1 invoke, one tool", mode: "reused", peerBench: "b1_invoke_one_tool", peerMode: "reused-reset",
			res: best(rounds, scenario(ctx, env, false, benchcase.InvokeOneTool))},
		{scenario: "b2 interrupt + resume", mode: "fresh", peerBench: "b2_interrupt_resume", peerMode: "fresh",
			res: best(rounds, scenario(ctx, env, true, benchcase.InterruptResume, benchcase.Approval()))},
		{scenario: "b2 interrupt + resume", mode: "reused", peerBench: "b2_interrupt_resume", peerMode: "reused-reset",
			res: best(rounds, scenario(ctx, env, false, benchcase.InterruptResume, benchcase.Approval()))},
	}
	b4, err := sessionRows(ctx, env, rounds, pgDSN)
	if err != nil {
		return err
	}
	rows = append(rows, b4...)
	fsyncs := countFsyncs()
	hopWith := func(ctx context.Context) func(*testing.B) {
		return func(b *testing.B) {
			a, err := env.NewAgent()
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close(ctx)
			b.ReportAllocs()
			for b.Loop() {
				if err := benchcase.Hop(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// The rows above wait with a context that cannot end, as the peer's
	// calls do (no abort signal): the caller's goroutine runs the job. A
	// server's request context can end: its job runs on the pool.
	cctx, cancelC := context.WithCancel(ctx)
	defer cancelC()
	hop := best(rounds, hopWith(ctx))
	hopPool := best(rounds, hopWith(cctx))
	b2Pool := best(rounds, scenario(cctx, env, false, benchcase.InterruptResume, benchcase.Approval()))
	life := best(rounds, func(b *testing.B) {
		for b.Loop() {
			if err := env.Life(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	fmt.Fprintf(w, "Braid, %s %s/%s, %d CPUs, best of %d\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), rounds)
	fmt.Fprintln(w, "| scenario | mode | Braid ops/s | µs/op | allocs/op | Strands TS ops/s | ratio |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		ops := perSecond(r.res)
		peerOps, ok := peer[r.peerBench+"/"+r.peerMode]
		peerCol, ratio := "–", "–"
		if ok {
			peerCol, ratio = fmt.Sprintf("%.0f", peerOps), fmt.Sprintf("%.1f×", ops/peerOps)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.1f | %d | %s | %s |\n", r.scenario, r.mode, ops,
			float64(r.res.NsPerOp())/1e3, r.res.AllocsPerOp(), peerCol, ratio)
	}
	byName := map[string]testing.BenchmarkResult{}
	for _, r := range rows {
		byName[r.scenario+"/"+r.mode] = r.res
	}
	single, multi := byName["b4 session interrupt + resume/sqlite, durable"], byName["b4, 32 clients on one store/sqlite, durable"]
	fmt.Fprintf(w, "\n32 clients on one durable sqlite store: %.1f× the cycles/s of one client (group commit)\n",
		float64(single.NsPerOp())/float64(multi.NsPerOp()))
	a10, a10k := byName["append 1 message/to 10 messages"], byName["append 1 message/to 10000 messages"]
	fmt.Fprintf(w, "append to 10,000 messages costs %.2f× an append to 10 (SPEC S1: flat in history length)\n",
		float64(a10k.NsPerOp())/float64(a10.NsPerOp()))
	if fsyncs.err != nil {
		fmt.Fprintf(w, "\nb4 fsyncs per cycle: not counted: %v\n", fsyncs.err)
	} else {
		fmt.Fprintf(w, "\nb4 fsyncs per cycle (strace, %d cycles, store open and close included): sqlite durable %.2f, sqlite no fsync %.2f; 32 clients on one durable store (%d cycles): %.2f (group commit)\n",
			fsyncs.cycles, fsyncs.byMode["durable"], fsyncs.byMode["nofsync"], childCycles("clients32"), fsyncs.byMode["clients32"])
	}
	hopNs, lifeNs := float64(hop.NsPerOp()), float64(life.NsPerOp())
	fmt.Fprintf(w, "\nactor hop (one invocation's messaging: send, job, done, reply), context that cannot end (the caller's goroutine runs the job): %.2f µs, %d allocs\n", hopNs/1e3, hop.AllocsPerOp())
	fmt.Fprintf(w, "actor hop, context that can end (a pool goroutine runs the job): %.2f µs, %d allocs\n", float64(hopPool.NsPerOp())/1e3, hopPool.AllocsPerOp())
	fmt.Fprintf(w, "actor life (spawn and stop an agent's actor, fresh mode only): %.2f µs\n", lifeNs/1e3)
	for _, r := range rows {
		if !strings.HasPrefix(r.scenario, "b1") && !strings.HasPrefix(r.scenario, "b2") {
			continue // the disk, not the actors
		}
		hops := 1.0
		if r.peerBench == "b2_interrupt_resume" {
			hops = 2 // an interrupt and a resume: two invocations
		}
		if r.mode == "reused" {
			hops++ // SetMessages resets the history through the actor too
		}
		actorNs := hops * hopNs
		if r.mode == "fresh" {
			actorNs += lifeNs
		}
		fmt.Fprintf(w, "  %s, %s: %.0f%% of the operation is actor work (%.0f hops%s)\n",
			r.scenario, r.mode, 100*actorNs/float64(r.res.NsPerOp()), hops, map[bool]string{true: " + spawn/stop", false: ""}[r.mode == "fresh"])
	}
	fmt.Fprintf(w, "  b2 interrupt + resume, reused, context that can end: %.1f µs/op, %.0f%% of it actor work (3 pool hops)\n",
		float64(b2Pool.NsPerOp())/1e3, 100*3*float64(hopPool.NsPerOp())/float64(b2Pool.NsPerOp()))
	return nil
}

// fsyncCount is what strace counted for fsyncCycles b4 cycles on a store.
type fsyncCount struct {
	cycles int
	byMode map[string]float64 // mode -> fsync + fdatasync calls per cycle
	err    error              // why nothing was counted
}

const fsyncCycles = 50

// sessionRows measures b4, the seed's session pattern, on the SQLite store
// in a new folder under $TMPDIR (run the peer with the same TMPDIR), with
// and without fsync, and on PostgreSQL when dsn is set; then 32 clients on
// one durable SQLite store, and the cost of one append as the history grows.
func sessionRows(ctx context.Context, env *benchcase.Env, rounds int, dsn string) ([]row, error) {
	dir, err := os.MkdirTemp("", "braid-b4-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var seq atomic.Int64
	cycles := func(store persistence.Store) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := env.SessionCycle(ctx, store, fmt.Sprintf("b4-%d", seq.Add(1))); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	const peer, peerMode = "b4_session_interrupt_resume", "new-instance-per-request"
	var rows []row
	var durable persistence.Store
	for _, noFsync := range []bool{false, true} {
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(dir, fmt.Sprintf("sqlite-%v", noFsync)), NoFsync: noFsync})
		if err != nil {
			return nil, err
		}
		defer st.Close()
		mode := "sqlite, durable"
		if noFsync {
			mode = "sqlite, no fsync"
		} else {
			durable = st
		}
		rows = append(rows, row{scenario: "b4 session interrupt + resume", mode: mode, peerBench: peer, peerMode: peerMode, res: best(rounds, cycles(st))})
	}
	if dsn != "" {
		cfg := postgres.DefaultConfig()
		cfg.DSN = dsn
		pg, err := postgres.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer pg.Close()
		rows = append(rows, row{scenario: "b4 session interrupt + resume", mode: "postgres", peerBench: peer, peerMode: peerMode, res: best(rounds, cycles(pg))})
	}
	// 32 clients, each its own sessions, one store: their durable points
	// share the WAL fsyncs (group commit). ops/s counts cycles of all.
	rows = append(rows, row{scenario: "b4, 32 clients on one store", mode: "sqlite, durable", res: best(rounds, func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := env.SessionCycle(ctx, durable, fmt.Sprintf("b4p-%d", seq.Add(1))); err != nil {
					// b.Error would not stop the benchmark, whose figure
					// would then be printed: fail the command, as best does.
					fmt.Fprintln(os.Stderr, "bench: b4, 32 clients:", err)
					os.Exit(1)
				}
			}
		})
	})})
	for _, n := range []int{10, 100, 1000, 10000} {
		rows = append(rows, row{scenario: "append 1 message", mode: fmt.Sprintf("to %d messages", n), res: best(rounds, appendRow(ctx, durable, n))})
	}
	return rows, nil
}

// appendRow measures one agent save that appends one message to a history
// of n (SPEC S1), through the session manager, on store: the save point of
// every message an agent adds. Every 64 appends the history is cut back to
// n, outside the timing.
func appendRow(ctx context.Context, store persistence.Store, n int) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		m, err := persistence.NewSessionManager(store, fmt.Sprintf("append-%d-%d", n, time.Now().UnixNano()))
		if err != nil {
			b.Fatal(err)
		}
		w, _, err := m.OpenAgent(ctx, "agent")
		if err != nil {
			b.Fatal(err)
		}
		rec := &persistence.AgentRecord{State: map[string]json.RawMessage{}, Interrupts: interrupt.NewState()}
		for i := range n {
			rec.Messages = append(rec.Messages, model.UserText(fmt.Sprintf("message %d: some words of a conversation", i)))
		}
		if err := w.Save(ctx, rec, persistence.SaveInvocation); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			if i++; i%64 == 0 {
				b.StopTimer()
				rec.Messages = rec.Messages[:n]
				if err := w.Rewrite(ctx, rec, n, persistence.SaveMessage); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			rec.Messages = append(rec.Messages, model.AssistantText("one more message"))
			if err := w.Save(ctx, rec, persistence.SaveMessage); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// countFsyncs runs fsyncCycles b4 cycles per SQLite mode in a child
// process under strace, and returns the fsync and fdatasync calls per
// cycle: the durable points' WAL fsyncs, counted by the kernel.
func countFsyncs() fsyncCount {
	out := fsyncCount{cycles: fsyncCycles, byMode: map[string]float64{}}
	strace, err := exec.LookPath("strace")
	if err != nil {
		out.err = errors.New("strace not found (apt-get install strace)")
		return out
	}
	self, err := os.Executable()
	if err != nil {
		out.err = err
		return out
	}
	for _, mode := range []string{"durable", "nofsync", "clients32"} {
		tmp, err := os.MkdirTemp("", "braid-fsync-")
		if err != nil {
			out.err = err
			return out
		}
		defer os.RemoveAll(tmp)
		log := filepath.Join(tmp, "strace.txt")
		cmd := exec.Command(strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", log, self, "-fsync-child", mode, "-fsync-dir", tmp)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			out.err = fmt.Errorf("strace: %w", err)
			return out
		}
		b, err := os.ReadFile(log)
		if err != nil {
			out.err = err
			return out
		}
		calls := 0
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			// % time, seconds, usecs/call, calls, [errors,] syscall
			if len(f) >= 5 && (f[len(f)-1] == "fsync" || f[len(f)-1] == "fdatasync") {
				if n, err := strconv.Atoi(f[3]); err == nil {
					calls += n
				}
			}
		}
		out.byMode[mode] = float64(calls) / float64(childCycles(mode))
	}
	return out
}

// childCycles is how many b4 cycles fsyncChild runs in mode: fsyncCycles
// one after the other, or fsyncCycles for each of 32 concurrent clients.
func childCycles(mode string) int {
	if mode == "clients32" {
		return 32 * fsyncCycles
	}
	return fsyncCycles
}

// fsyncChild is the child countFsyncs traces: it opens the store, runs
// childCycles(mode) cycles (mode durable, nofsync, or clients32: 32
// clients on one durable store), and closes it. The store's open and
// close are counted too, so the figure is a little high, never low.
func fsyncChild(mode, dir string) error {
	env, err := benchcase.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir, NoFsync: mode == "nofsync"})
	if err != nil {
		return err
	}
	defer st.Close()
	if mode != "clients32" {
		for i := range fsyncCycles {
			if err := env.SessionCycle(ctx, st, fmt.Sprintf("fsync-%d", i)); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make(chan error, 32)
	for c := range 32 {
		go func() {
			for i := range fsyncCycles {
				if err := env.SessionCycle(ctx, st, fmt.Sprintf("fsync-%d-%d", c, i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 32 {
		err = cmp.Or(err, <-errs)
	}
	return err
}

func scenario(ctx context.Context, env *benchcase.Env, fresh bool, op func(context.Context, *agent.Agent) error, hooks ...hook.Provider) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		if fresh {
			for b.Loop() {
				if err := env.Fresh(ctx, op, hooks...); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		a, err := env.NewAgent(hooks...)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close(ctx)
		for b.Loop() {
			if err := benchcase.Reused(ctx, a, op); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func best(rounds int, fn func(*testing.B)) testing.BenchmarkResult {
	var out testing.BenchmarkResult
	for i := 0; i < max(rounds, 1); i++ {
		r := testing.Benchmark(fn)
		if r.N == 0 {
			fmt.Fprintln(os.Stderr, "bench: a benchmark failed")
			os.Exit(1)
		}
		if out.N == 0 || r.NsPerOp() < out.NsPerOp() {
			out = r
		}
	}
	return out
}

func perSecond(r testing.BenchmarkResult) float64 {
	return float64(time.Second) / float64(r.NsPerOp())
}

// peerResults are the peer's figures: perSecond by "bench/mode" (b1, b2,
// b4), and b5's heap per agent by mode.
type peerResults struct {
	perSecond map[string]float64
	b3Invoke  map[string]float64 // b3 scenario -> median invoke ms
	b5Heap    map[string]float64 // mode -> perAgentKiB.heapUsed
}

// readPeer reads the peer's JSON lines (common.mjs printResult):
// {"bench":..,"modes":{mode:{"perSecond":..}}} for b1, b2 and b4, and
// {"bench":"b5_memory","mode":..,"perAgentKiB":{"heapUsed":..}} for b5.
func readPeer(path string) (peerResults, error) {
	out := peerResults{perSecond: map[string]float64{}, b5Heap: map[string]float64{}, b3Invoke: map[string]float64{}}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Bench string `json:"bench"`
			Modes map[string]struct {
				PerSecond float64 `json:"perSecond"`
			} `json:"modes"`
			Mode        string `json:"mode"`
			PerAgentKiB *struct {
				HeapUsed float64 `json:"heapUsed"`
			} `json:"perAgentKiB"`
			Results map[string]struct {
				InvokeMs struct {
					P50 float64 `json:"p50"`
				} `json:"invokeMs"`
			} `json:"results"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		for m, v := range line.Modes {
			if v.PerSecond > 0 {
				out.perSecond[line.Bench+"/"+m] = v.PerSecond
			}
		}
		if line.Bench == "b3_graph" {
			for label, r := range line.Results {
				out.b3Invoke[label] = r.InvokeMs.P50
			}
		}
		if line.Bench == "b5_memory" && line.PerAgentKiB != nil {
			out.b5Heap[line.Mode] = line.PerAgentKiB.HeapUsed
		}
	}
	return out, sc.Err()
}
