package persistence_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// R2-1: a store's first durable save (fsync path) keeps message files that
// another store wrote under its redo log, without fsync. The second store's
// save is acknowledged durable; after a machine crash the kept file is lost,
// recovery finds the files not intact and writes back the first store's
// older record: the acknowledged save is gone.
func TestRedo_Review2FsyncPathKeepsOtherStoresUnsyncedFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	synced, onSync := syncedPaths()
	a, err := persistence.NewFileStore(dir, onSync)
	require.NoError(t, err)
	warm(t, a)
	v, err := a.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)

	b, err := persistence.NewFileStore(dir, onSync) // another process's store, no log yet
	require.NoError(t, err)
	v, err = b.Save(ctx, rec(rk, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	require.NoError(t, err, "acknowledged durable")

	lost := append(a.UnsyncedForTest(), b.UnsyncedForTest()...)
	a.CrashForTest()
	b.CrashForTest()
	msg0 := filepath.Join(dir, "session_x", "agents", "agent_a", "messages", "message_0.json")
	require.Contains(t, lost, msg0, "a wrote it without fsync")
	for _, p := range lost {
		// A head is fsynced under its temp name before it is swapped in.
		if !synced[p] && !synced[p+".tmp"] {
			require.NoError(t, os.Remove(p)) // what nobody fsynced is lost
		}
	}
	f, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer f.Close()
	r, err := f.Load(ctx, rk)
	require.NoError(t, err)
	require.Equal(t, v, r.Version, "acknowledged durable save v%d lost: %s", v, r.Data)
}

// R2-2: session.json made by another owner's non-durable save is not
// fsynced by this owner's first durable save (fsync path), and no redo
// record exists to repair it: after a crash the durable owner is damaged.
func TestRedo_Review2FsyncPathLeavesSessionJSONUnsynced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	synced, onSync := syncedPaths()
	s, err := persistence.NewFileStore(dir, onSync)
	require.NoError(t, err)
	other := persistence.Key{SessionID: "x", Kind: persistence.KindMultiAgent, ID: "g"}
	_, err = s.Save(ctx, rec(other, `{}`), persistence.SaveOptions{})
	require.NoError(t, err)
	_, err = s.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err, "acknowledged durable")
	sj := filepath.Join(dir, "session_x", "session.json")
	lost := s.UnsyncedForTest()
	s.CrashForTest()
	for _, p := range lost {
		if !synced[p] {
			require.NoError(t, os.WriteFile(p, nil, 0o644)) // delalloc: the name survived, the data did not
		}
	}
	_ = sj
	f, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Load(ctx, rk)
	require.NoError(t, err, "acknowledged durable save unreadable")
}

// R2-3: a Delete cut off between the folder's removal and its deletion
// record (process killed, or logDeletion failing), then retried: the retry
// finds no folder and returns nil without recording anything; a record of
// the owner in a live store's log brings it back when that store dies.
func TestRedo_Review2RetriedDeleteRecordsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	_, err = a.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)

	cut := true
	b, err := persistence.NewFileStore(dir, persistence.OnSync(func(k persistence.Key, paths []string) {
		if cut && len(paths) == 1 && filepath.Base(paths[0]) == "deletions" {
			cut = false
			runtime.Goexit() // the process dies here
		}
	}))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Delete(ctx, rk) }()
	<-done
	require.NoError(t, b.Delete(ctx, rk), "the retry is acknowledged")
	_, err = b.Load(ctx, rk)
	require.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, b.Close())

	a.CrashForTest() // process killed, no machine crash
	c, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer c.Close()
	r, err := c.Load(ctx, rk)
	require.ErrorIs(t, err, persistence.ErrNotFound, "resurrected: %v", r)
}

// R2-4: recovery's "intact files win" trusts a head at the record's version
// whose message file is an old, valid file under a reused number: a save
// killed after its fsynced round 1 (fsync path) leaves message_1 durable;
// the next durable save (redo path) overwrites message_1 in place without
// fsync. If the crash loses that overwrite but keeps the new head,
// recovery keeps the old message instead of the logged one.
func TestRedo_Review2FilesWinTrustsReusedMessageNumber(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s0, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	v, err := s0.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	require.NoError(t, s0.Close())

	killed, err := persistence.NewFileStore(dir, persistence.BeforeCommit(func(persistence.Key, int64) { runtime.Goexit() }))
	require.NoError(t, err)
	const x = `{"role":"user","content":[{"text":"never acknowledged"}]}`
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = killed.Save(ctx, rec(rk, `{"n":"x"}`, m0, x), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	}()
	<-done
	msg1 := filepath.Join(dir, "session_x", "agents", "agent_a", "messages", "message_1.json")
	old, err := os.ReadFile(msg1)
	require.NoError(t, err, "left over, fsynced in round 1")

	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	v2, err := a.Save(ctx, rec(rk, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	require.NoError(t, err)
	require.Contains(t, a.UnsyncedForTest(), msg1)
	a.CrashForTest()
	require.NoError(t, os.WriteFile(msg1, old, 0o644)) // the in-place overwrite is lost

	f, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer f.Close()
	r, err := f.Load(ctx, rk)
	require.NoError(t, err)
	require.Equal(t, v2, r.Version)
	requireState(t, savedState{`{"n":2}`, []string{m0, m1}}, r)
}

// syncedPaths collects every path a store fsyncs (OnSync).
func syncedPaths() (map[string]bool, persistence.FileOption) {
	var mu sync.Mutex
	m := map[string]bool{}
	return m, persistence.OnSync(func(_ persistence.Key, paths []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range paths {
			m[p] = true
		}
	})
}
