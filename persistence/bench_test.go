package persistence_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

// BenchmarkSessionCycle is peer scenario b4: a persisted interrupt + resume
// cycle where each request builds a fresh agent on the session (the seed's
// server pattern), with a new session per cycle.
func BenchmarkSessionCycle(b *testing.B) {
	env, err := benchcase.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()
	run := func(b *testing.B, store persistence.Store) {
		defer store.Close()
		n := 0
		for b.Loop() {
			n++
			if err := env.SessionCycle(ctx, store, fmt.Sprintf("bench-%d-%d", b.N, n)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, noFsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sqlite-nofsync=%v", noFsync), func(b *testing.B) {
			st, err := sqlite.Open(ctx, sqlite.Config{Dir: b.TempDir(), NoFsync: noFsync})
			if err != nil {
				b.Fatal(err)
			}
			run(b, st)
		})
	}
	// 32 clients, each its own sessions, on one durable store: their
	// durable points share the WAL's fsyncs (group commit). The same
	// without fsync shows what the fsyncs cost them.
	for _, noFsync := range []bool{false, true} {
		name := "sqlite-32-clients"
		if noFsync {
			name += "-nofsync"
		}
		b.Run(name, func(b *testing.B) { parallelCycles(b, env, noFsync) })
	}
	b.Run("postgres", func(b *testing.B) {
		dsn := os.Getenv("BRAID_TEST_POSTGRES_DSN")
		if dsn == "" {
			b.Skip("BRAID_TEST_POSTGRES_DSN not set")
		}
		st, err := postgres.New(ctx, postgres.Config{DSN: dsn})
		if err != nil {
			b.Fatal(err)
		}
		run(b, st)
	})
}

// parallelCycles runs b4 cycles from 32 clients on one SQLite store.
func parallelCycles(b *testing.B, env *benchcase.Env, noFsync bool) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: b.TempDir(), NoFsync: noFsync})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := env.SessionCycle(ctx, st, fmt.Sprintf("bench32-%d-%d", b.N, n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
