package persistence_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/persistence"
)

// The fsyncs of one b4 cycle (the seed's server pattern: request 1 builds an
// agent on a new session and is interrupted, request 2 builds another and
// resumes). Each request has one durable point, and SPEC I9 needs the first
// request's interrupt on disk before it is returned, and the second's end on
// disk before it is returned: two durable points is the least. Each costs
// one fdatasync of the store's redo log, which is allocated ahead, so the
// fdatasync commits no metadata: one device flush, the least a durable
// point can cost. The SPEC S2 files are written without fsync; they become
// durable all at once when the log starts over, and at Close. A store's
// first durable save is made the classic way (the files, then the folder
// that names the head), and its second makes the log (the log, its folder
// and the root, once per store).
func TestFileStore_FsyncsOfASessionCycle(t *testing.T) {
	env, err := benchcase.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	dir := t.TempDir()
	var mu sync.Mutex
	var rounds [][]string
	st, err := persistence.NewFileStore(dir, persistence.OnSync(func(_ persistence.Key, paths []string) {
		mu.Lock()
		defer mu.Unlock()
		var rel []string
		for _, p := range paths {
			r, err := filepath.Rel(dir, p)
			require.NoError(t, err)
			r = filepath.ToSlash(r)
			if strings.HasPrefix(r, "redo/") && strings.HasSuffix(r, ".log") {
				r = "redo/<log>"
			}
			rel = append(rel, r)
		}
		sort.Strings(rel)
		rounds = append(rounds, rel)
	}))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, env.SessionCycle(ctx, st, "b4-first"))
	require.Len(t, rounds, 4)
	assert.Equal(t, []string{"session_b4-first/agents/agent_default"}, rounds[1],
		"the store's first durable save: the files, then the folder that names the head")
	assert.Equal(t, [][]string{{".", "redo", "redo/<log>"}, {"redo/<log>"}}, rounds[2:],
		"the second makes the log and is its first record")

	rounds = nil
	require.NoError(t, env.SessionCycle(ctx, st, "b4"))
	assert.Equal(t, [][]string{{"redo/<log>"}, {"redo/<log>"}}, rounds)
	t.Logf("b4 cycle: %d fsyncs in %d rounds", len(rounds), len(rounds))

	rounds = nil
	require.NoError(t, st.Close())
	assert.Equal(t, [][]string{{"<syncfs>"}}, rounds, "Close makes every file durable at once")
}
