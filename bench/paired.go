package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
)

// The peer's b4 script and its mode that Braid's b4 rows compare with.
const (
	peerB4Script = "bench/b4_session_interrupt_resume.mjs"
	peerB4Mode   = "new-instance-per-request"
)

// pairedRound is one round of pairedB4: the peer's b4 and Braid's three
// SQLite rows, measured back to back, in cycles/s.
type pairedRound struct {
	peer, durable, noFsync, clients32 float64
}

// pairedB4 measures b4 in rounds, each of which runs the peer's b4 (in
// peerDir, an installed copy of the peer benchmark) and then Braid's
// durable, no-fsync and 32-client rows, back to back. The peer's speed
// moves from minute to minute on these shared machines more than Braid's
// does; a round's ratios compare figures of one minute, and the median
// over rounds is what the targets are read against.
func pairedB4(ctx context.Context, w io.Writer, env *benchcase.Env, peerDir string, rounds int) error {
	if _, err := os.Stat(filepath.Join(peerDir, peerB4Script)); err != nil {
		return fmt.Errorf("-peer-dir: no peer benchmark there (scripts/peer-bench.sh installs one): %w", err)
	}
	dir, err := os.MkdirTemp("", "braid-b4-paired-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	durable, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(dir, "durable")})
	if err != nil {
		return err
	}
	defer durable.Close()
	noFsync, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(dir, "nofsync"), NoFsync: true})
	if err != nil {
		return err
	}
	defer noFsync.Close()

	var seq atomic.Int64
	one := func(store persistence.Store) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				if err := env.SessionCycle(ctx, store, fmt.Sprintf("pair-%d", seq.Add(1))); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// A failed cycle in RunParallel's goroutines cannot stop the
	// benchmark; failed makes the round an error instead of a figure.
	var failed atomic.Pointer[error]
	many := func(b *testing.B) {
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := env.SessionCycle(ctx, durable, fmt.Sprintf("pair32-%d", seq.Add(1))); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	fmt.Fprintf(w, "\nb4 in %d paired rounds (each: the peer's %s, then Braid's rows, back to back)\n\n", rounds, peerB4Mode)
	fmt.Fprintln(w, "| round | peer cycles/s | sqlite durable | ratio | sqlite no fsync | ratio | 32 clients, durable | vs 1 durable |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	var all []pairedRound
	for i := 1; i <= rounds; i++ {
		peer, err := runPeerB4(ctx, peerDir)
		if err != nil {
			return err
		}
		r := pairedRound{peer: peer}
		for _, m := range []struct {
			to *float64
			fn func(*testing.B)
		}{{&r.durable, one(durable)}, {&r.noFsync, one(noFsync)}, {&r.clients32, many}} {
			res := testing.Benchmark(m.fn)
			if err := failed.Load(); err != nil {
				return fmt.Errorf("a paired b4 benchmark failed: %w", *err)
			}
			if res.N == 0 {
				return errors.New("a paired b4 benchmark failed")
			}
			*m.to = perSecond(res)
		}
		all = append(all, r)
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.1f× | %.0f | %.1f× | %.0f | %.1f× |\n", i, r.peer,
			r.durable, r.durable/r.peer, r.noFsync, r.noFsync/r.peer, r.clients32, r.clients32/r.durable)
	}
	durableX := ratios(all, func(r pairedRound) float64 { return r.durable / r.peer })
	noFsyncX := ratios(all, func(r pairedRound) float64 { return r.noFsync / r.peer })
	clientsX := ratios(all, func(r pairedRound) float64 { return r.clients32 / r.durable })
	fmt.Fprintf(w, "\nmedian of the rounds (lowest–highest): sqlite durable %s the peer (target 4×), without fsync %s (target 10×), 32 clients %s one durable client (target 4×)\n",
		durableX, noFsyncX, clientsX)
	return nil
}

// spread is the median and range of a ratio over paired rounds.
type spread struct{ median, low, high float64 }

func (s spread) String() string {
	return fmt.Sprintf("%.1f× (%.1f–%.1f×)", s.median, s.low, s.high)
}

func ratios(rounds []pairedRound, f func(pairedRound) float64) spread {
	xs := make([]float64, len(rounds))
	for i, r := range rounds {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return spread{median: med, low: xs[0], high: xs[n-1]}
}

// runPeerB4 runs the peer's b4 script once (500 cycles after 50 warm-up
// cycles, as scripts/peer-bench.sh does) and returns its cycles/s in
// peerB4Mode. The peer writes its sessions under TMPDIR, as Braid does.
func runPeerB4(ctx context.Context, peerDir string) (float64, error) {
	cmd := exec.CommandContext(ctx, "node", peerB4Script, "500", "50")
	cmd.Dir = peerDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("peer b4 in %s: %w", peerDir, err)
	}
	return parsePeerB4(out.Bytes())
}

// parsePeerB4 reads the peer's b4 result line (common.mjs printResult).
func parsePeerB4(out []byte) (float64, error) {
	for line := range bytes.Lines(out) {
		var r struct {
			Bench string `json:"bench"`
			Modes map[string]struct {
				PerSecond float64 `json:"perSecond"`
			} `json:"modes"`
		}
		if json.Unmarshal(line, &r) != nil || r.Bench != "b4_session_interrupt_resume" {
			continue
		}
		if v := r.Modes[peerB4Mode].PerSecond; v > 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("peer b4: no %s figure in its output: %q", peerB4Mode, out)
}
