// Command bench prints Braid's figures for the scenarios of the Strands
// TypeScript peer benchmark, and the ratio to the peer when its results are
// given:
//
//	go run ./bench                              # Braid only
//	go run ./bench -peer results.jsonl          # with the peer's run-bench.sh output
//
// Run the peer in the same session (scripts/peer-bench.sh does) and compare
// ratios, not absolute times: these machines are shared and noisy.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	peer, err := readPeer(*peerFile)
	if err != nil {
		return err
	}
	env, err := benchcase.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	ctx := context.Background()

	rows := []row{
		{scenario: "b1 invoke, one tool", mode: "fresh", peerBench: "b1_invoke_one_tool", peerMode: "fresh",
			res: best(*rounds, scenario(ctx, env, true, benchcase.InvokeOneTool))},
		{scenario: "b1 invoke, one tool", mode: "reused", peerBench: "b1_invoke_one_tool", peerMode: "reused-reset",
			res: best(*rounds, scenario(ctx, env, false, benchcase.InvokeOneTool))},
		{scenario: "b2 interrupt + resume", mode: "fresh", peerBench: "b2_interrupt_resume", peerMode: "fresh",
			res: best(*rounds, scenario(ctx, env, true, benchcase.InterruptResume, benchcase.Approval()))},
		{scenario: "b2 interrupt + resume", mode: "reused", peerBench: "b2_interrupt_resume", peerMode: "reused-reset",
			res: best(*rounds, scenario(ctx, env, false, benchcase.InterruptResume, benchcase.Approval()))},
	}
	b4, fsyncs, err := sessionRows(ctx, env, *rounds, *pgDSN)
	if err != nil {
		return err
	}
	rows = append(rows, b4...)
	hop := best(*rounds, func(b *testing.B) {
		s, err := actors.NewSerial(env.Sys)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close(ctx)
		for b.Loop() {
			if err := benchcase.Hop(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	life := best(*rounds, func(b *testing.B) {
		for b.Loop() {
			s, err := actors.NewSerial(env.Sys)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	fmt.Fprintf(w, "Braid, %s %s/%s, %d CPUs, best of %d\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *rounds)
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
	fmt.Fprintf(w, "\nb4 with fsync: %d fsyncs per cycle, in %d rounds (one fdatasync of the redo log per durable point)", fsyncs.calls, fsyncs.rounds)
	if n := fsyncs.syncfs.Load(); n > 0 {
		fmt.Fprintf(w, ",\n  and one syncfs per %.0f cycles (the %d KiB redo log starting over; %d in %d cycles, inside the timings)",
			float64(fsyncs.cycles.Load())/float64(n), redoLogSize>>10, n, fsyncs.cycles.Load())
	}
	fmt.Fprintln(w)
	hopNs, lifeNs := float64(hop.NsPerOp()), float64(life.NsPerOp())
	fmt.Fprintf(w, "\nactor hop (one invocation's messaging: ask, grant, done): %.2f µs\n", hopNs/1e3)
	fmt.Fprintf(w, "actor life (spawn and stop an agent's actor, fresh mode only): %.2f µs\n", lifeNs/1e3)
	for _, r := range rows {
		if r.peerBench == "b4_session_interrupt_resume" {
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
	return nil
}

type fsyncCount struct {
	calls, rounds int
	// syncfs counts the redo log's resets over every b4 file run, cycles
	// the cycles of those runs.
	syncfs, cycles *atomic.Int64
}

// redoLogSize is the bench's file store's redo log: small enough that each
// run resets it many times.
const redoLogSize = 512 << 10

// sessionRows measures b4, the seed's session pattern, on a file store in a
// new folder under $TMPDIR (run the peer with the same TMPDIR) with and
// without fsync, and on PostgreSQL when dsn is set. It also counts the fsyncs
// of one cycle.
func sessionRows(ctx context.Context, env *benchcase.Env, rounds int, dsn string) ([]row, fsyncCount, error) {
	count := fsyncCount{syncfs: new(atomic.Int64), cycles: new(atomic.Int64)}
	dir, err := os.MkdirTemp("", "braid-b4-")
	if err != nil {
		return nil, count, err
	}
	defer os.RemoveAll(dir)
	var mu sync.Mutex
	counting, err := persistence.NewFileStore(filepath.Join(dir, "count"), persistence.OnSync(func(_ persistence.Key, paths []string) {
		mu.Lock()
		count.calls += len(paths)
		count.rounds++
		mu.Unlock()
	}))
	if err != nil {
		return nil, count, err
	}
	// The first cycle is the store's first durable saves: the first is
	// made with fsyncs of the files and the second makes the redo log.
	// Count a cycle of a store that runs.
	if err := env.SessionCycle(ctx, counting, "warm"); err != nil {
		return nil, count, err
	}
	mu.Lock()
	count.calls, count.rounds = 0, 0
	mu.Unlock()
	if err := env.SessionCycle(ctx, counting, "count"); err != nil {
		return nil, count, err
	}
	defer counting.Close()
	var seq atomic.Int64
	cycles := func(store persistence.Store, counted bool, opts ...persistence.ManagerOption) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if counted {
					count.cycles.Add(1)
				}
				if err := env.SessionCycle(ctx, store, fmt.Sprintf("b4-%d", seq.Add(1)), opts...); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// A small redo log, so that the runs include its resets (a syncfs that
	// makes the files of the cycles before durable, every few dozen
	// cycles): the deferred cost is paid inside the measurement.
	file, err := persistence.NewFileStore(filepath.Join(dir, "sessions"), persistence.RedoLogSize(redoLogSize),
		persistence.OnSync(func(_ persistence.Key, paths []string) {
			if len(paths) == 1 && filepath.Base(paths[0]) == persistence.SyncFSName {
				count.syncfs.Add(1)
			}
		}))
	if err != nil {
		return nil, count, err
	}
	defer file.Close()
	const peer, peerMode = "b4_session_interrupt_resume", "new-instance-per-request"
	rows := []row{
		{scenario: "b4 session interrupt + resume", mode: "file, fsync", peerBench: peer, peerMode: peerMode, res: best(rounds, cycles(file, true))},
		{scenario: "b4 session interrupt + resume", mode: "file, no fsync", peerBench: peer, peerMode: peerMode, res: best(rounds, cycles(file, false, persistence.NoFsync()))},
	}
	if dsn != "" {
		cfg := postgres.DefaultConfig()
		cfg.DSN, cfg.TablePrefix = dsn, "braid_bench_"
		pg, err := postgres.New(ctx, cfg)
		if err != nil {
			return nil, count, err
		}
		defer pg.Close()
		rows = append(rows, row{scenario: "b4 session interrupt + resume", mode: "postgres", peerBench: peer, peerMode: peerMode, res: best(rounds, cycles(pg, false))})
	}
	return rows, count, nil
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

// readPeer reads {"bench":..,"modes":{mode:{"perSecond":..}}} lines.
func readPeer(path string) (map[string]float64, error) {
	out := map[string]float64{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
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
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for m, v := range line.Modes {
			if v.PerSecond > 0 {
				out[line.Bench+"/"+m] = v.PerSecond
			}
		}
	}
	return out, sc.Err()
}
