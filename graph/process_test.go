//go:build unix

package graph_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

// The test below re-runs this test binary as the process that gets
// killed: BRAID_GRAPH_KILL_AFTER=k makes it run crashGraph on the store
// that openKillStore opens and SIGKILL itself right after its k-th save.
const killEnv = "BRAID_GRAPH_KILL_AFTER"

// openKillStore opens the store of a kill test: PostgreSQL (the test
// server; each round its own session) or the SQLite store in dir.
func openKillStore(ctx context.Context, store, dir string) (persistence.Store, error) {
	if store == "postgres" {
		return postgres.New(ctx, postgres.Config{DSN: os.Getenv("BRAID_TEST_POSTGRES_DSN")})
	}
	return sqlite.Open(ctx, sqlite.Config{Dir: dir})
}

// killingStore kills its process right after its k-th save.
type killingStore struct {
	persistence.Store
	after int64
	saves atomic.Int64
}

func (s *killingStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil && s.saves.Add(1) == s.after {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return v, err
}

// TestGraphKillHelper is not a test: it is the killed process's body.
func TestGraphKillHelper(t *testing.T) {
	after, err := strconv.ParseInt(os.Getenv(killEnv), 10, 64)
	if err != nil {
		t.Skip("only a helper process")
	}
	ctx := context.Background()
	st, err := openKillStore(ctx, os.Getenv("BRAID_GRAPH_STORE"), os.Getenv("BRAID_GRAPH_DIR"))
	require.NoError(t, err)
	ks := &killingStore{Store: st, after: after}
	r := newRecorder()
	g := build(t, crashGraph(r), graph.Config{ID: "g", Session: manager(t, ks, os.Getenv("BRAID_GRAPH_SESSION")), Hooks: []hook.Provider{gate(r, "gated")}})
	finish(t, g)
	os.Exit(3) // finished before its k-th save: the parent stops counting
}

// SPEC M10, S3, S5, S6: a graph process killed (SIGKILL) right after each
// of its saves is resumed by a new process (here: the test, on a fresh
// runtime) from SQLite and from PostgreSQL: every node ends COMPLETED,
// run once, and nothing that had completed runs again.
func TestGraphProcess_KillAfterEverySaveResumesInANewProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			if store == "postgres" {
				persistencetest.PostgresDSN(t) // skips, or fails under CI, without a server
			}
			killRounds(t, store)
		})
	}
}

func killRounds(t *testing.T, store string) {
	ctx := context.Background()
	for k := 1; ; k++ {
		dir := t.TempDir()
		session := "kill-" + uuid.NewString()
		cmd := exec.Command(os.Args[0], "-test.run=^TestGraphKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), killEnv+"="+strconv.Itoa(k), "BRAID_GRAPH_DIR="+dir,
			"BRAID_GRAPH_STORE="+store, "BRAID_GRAPH_SESSION="+session)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "save %d: %v\n%s", k, err, out)
		if exit.ExitCode() == 3 {
			require.Greater(t, k, 10, "the run has more saves than that")
			return
		}
		ws, ok := exit.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "save %d: %v\n%s", k, err, out)

		st, err := openKillStore(ctx, store, dir)
		require.NoError(t, err)
		r := newRecorder()
		g := build(t, crashGraph(r), graph.Config{ID: "g", Session: manager(t, st, session), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "gated")}})
		before, err := g.Status(ctx)
		require.NoError(t, err, "save %d", k)
		done := map[string]bool{}
		for _, n := range before.Results {
			done[n.NodeID] = n.Status == multiagent.StatusCompleted
		}
		final := finish(t, g)
		require.Len(t, final.Results, 5, "save %d", k)
		for _, n := range final.Results {
			assert.Equal(t, 1, n.ExecutionCount, "save %d node %s", k, n.NodeID)
			if done[n.NodeID] {
				assert.Zero(t, r.count("model:"+n.NodeID), "save %d: %s had completed", k, n.NodeID)
			}
		}
		require.NoError(t, g.Close(ctx))
		require.NoError(t, st.Close())
	}
}
