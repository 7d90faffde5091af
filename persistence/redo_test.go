package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

func redoLogs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "redo"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			out = append(out, e.Name())
		}
	}
	return out
}

// warm makes s's redo log: a store makes it at its second durable save (the
// first is made durable by fsyncs of its files).
func warm(t *testing.T, s *persistence.FileStore) {
	t.Helper()
	k := persistence.Key{SessionID: "warm", Kind: persistence.KindAgent, ID: "w"}
	r, err := s.Load(context.Background(), k)
	var base int64
	if err == nil {
		base = r.Version
	}
	for range 2 {
		base, err = s.Save(context.Background(), rec(k, `{}`), persistence.SaveOptions{Base: base, Durable: true})
		require.NoError(t, err)
	}
}

type savedState struct {
	data string
	msgs []string
}

func requireState(t *testing.T, want savedState, r *persistence.Record) {
	t.Helper()
	require.JSONEq(t, want.data, string(r.Data))
	require.Len(t, r.Messages, len(want.msgs))
	for i, m := range want.msgs {
		require.JSONEq(t, m, string(r.Messages[i]))
	}
}

// mangle does to a file what a machine crash may do to one written without
// fsync: lose it, cut it, zero it, or leave it.
func mangle(t *testing.T, rng *rand.Rand, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	switch rng.IntN(4) {
	case 0:
		require.NoError(t, os.Remove(p))
	case 1:
		require.NoError(t, os.WriteFile(p, b[:rng.IntN(len(b)+1)], 0o644))
	case 2:
		require.NoError(t, os.WriteFile(p, make([]byte, len(b)), 0o644))
	}
}

// SPEC S5, I9: a machine crash loses no durable save. Random runs of saves
// (durable and not), checkpoints and deletes on a few owners, with a redo log
// small enough to start over several times; then the store dies, and every
// file it wrote without fsync (heads, message files, session.json, every
// journal) is lost, cut, zeroed or left, at random. A new store on the
// folder finds each owner at its last durable state or a later saved one,
// whole, or deleted if that was the last durable act; and it carries on.
func TestRedo_MachineCrashLosesNoDurableSave(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			dir := t.TempDir()
			s, err := persistence.NewFileStore(dir, persistence.RedoLogSize(8<<10))
			require.NoError(t, err)
			if seed%2 == 0 {
				warm(t, s)
			}
			keys := []persistence.Key{
				{SessionID: "s1", Kind: persistence.KindAgent, ID: "a"},
				{SessionID: "s1", Kind: persistence.KindAgent, ID: "b"},
				{SessionID: "s2", Kind: persistence.KindMultiAgent, ID: "g"},
			}
			type owner struct {
				v       int64
				msgs    []string
				saved   map[int64]savedState // this incarnation's
				floor   int64                // last durable version; 0 with deleted: deleted
				deleted bool
			}
			owners := map[persistence.Key]*owner{}
			for _, k := range keys {
				owners[k] = &owner{saved: map[int64]savedState{}}
			}
			for i := range 60 {
				k := keys[rng.IntN(len(keys))]
				o := owners[k]
				switch op := rng.IntN(10); {
				case op == 0 && o.v > 0:
					require.NoError(t, s.Delete(ctx, k))
					*o = owner{saved: map[int64]savedState{}, deleted: true}
				case op == 1 && o.v > 0:
					require.NoError(t, s.Checkpoint(ctx, k, true))
					o.floor, o.deleted = o.v, false
				default:
					unchanged := len(o.msgs)
					if rng.IntN(4) == 0 {
						unchanged = rng.IntN(len(o.msgs) + 1)
						o.msgs = o.msgs[:unchanged]
					}
					for range rng.IntN(3) {
						// Now and then a message large enough to fill the log.
						pad := strings.Repeat("x", rng.IntN(2)*rng.IntN(3000))
						o.msgs = append(o.msgs, fmt.Sprintf(`{"role":"user","content":[{"text":"m%d %s"}]}`, i, pad))
					}
					data := fmt.Sprintf(`{"i":%d}`, i)
					durable := rng.IntN(3) == 0
					v, err := s.Save(ctx, rec(k, data, o.msgs...), persistence.SaveOptions{Base: o.v, Unchanged: unchanged, Durable: durable})
					require.NoError(t, err)
					o.v = v
					o.saved[v] = savedState{data: data, msgs: append([]string(nil), o.msgs...)}
					if durable {
						o.floor, o.deleted = v, false
					}
				}
			}

			// The machine crashes.
			unsynced := s.UnsyncedForTest()
			s.CrashForTest()
			require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name() == "journal.jsonl" {
					unsynced = append(unsynced, p)
				}
				return err
			}))
			for _, p := range unsynced {
				mangle(t, rng, p)
			}

			fresh, err := persistence.NewFileStore(dir, persistence.RedoLogSize(8<<10))
			require.NoError(t, err)
			assert.Empty(t, redoLogs(t, dir), "the dead store's log is recovered and removed")
			for _, k := range keys {
				o := owners[k]
				r, err := fresh.Load(ctx, k)
				if o.floor == 0 {
					if err != nil {
						require.ErrorIs(t, err, persistence.ErrNotFound, "%v", k)
						continue
					}
				} else {
					require.NoError(t, err, "%v: durable at %d", k, o.floor)
				}
				require.GreaterOrEqual(t, r.Version, o.floor, "%v", k)
				want, ok := o.saved[r.Version]
				require.True(t, ok, "%v: version %d was saved", k, r.Version)
				requireState(t, want, r)
				// And it carries on.
				_, err = fresh.Save(ctx, rec(k, `{"after":true}`), persistence.SaveOptions{Base: r.Version, Durable: true})
				require.NoError(t, err)
			}
			require.NoError(t, fresh.Close())
			assert.Empty(t, redoLogs(t, dir))
		})
	}
}

// A store whose process died, on a machine that did not crash: the next
// store on the folder finds every save as it was, makes it durable and
// removes the dead log; a live store's log is left alone.
func TestRedo_DeadStoreRecoveredLiveStoreLeftAlone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer live.Close()
	warm(t, live)
	lk := persistence.Key{SessionID: "live", Kind: persistence.KindAgent, ID: "a"}
	_, err = live.Save(ctx, rec(lk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)

	dead, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, dead)
	k := persistence.Key{SessionID: "dead", Kind: persistence.KindAgent, ID: "a"}
	v, err := dead.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	v, err = dead.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.NoError(t, err)
	require.Len(t, redoLogs(t, dir), 2)
	dead.CrashForTest()

	fresh, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer fresh.Close()
	assert.Len(t, redoLogs(t, dir), 1, "the live store's log stays")
	r, err := fresh.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version, "the save after the durable one was on disk, and stays")
	requireState(t, savedState{`{"n":2}`, []string{m0, m1}}, r)
	_, err = live.Save(ctx, rec(lk, `{"n":2}`, m0), persistence.SaveOptions{Base: 1, Unchanged: 1, Durable: true})
	require.NoError(t, err, "the live store carries on")
}

// A deleted owner stays deleted: a record of it in another store's log
// (written before the delete) does not bring it back, even after the
// deleting store's log has started over.
func TestRedo_DeletedOwnerIsNotBroughtBack(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprint("reset=", reset), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			a, err := persistence.NewFileStore(dir)
			require.NoError(t, err)
			warm(t, a)
			k := persistence.Key{SessionID: "gone", Kind: persistence.KindAgent, ID: "a"}
			_, err = a.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
			require.NoError(t, err)

			b, err := persistence.NewFileStore(dir, persistence.RedoLogSize(8<<10))
			require.NoError(t, err)
			defer b.Close()
			require.NoError(t, b.Delete(ctx, k))
			if reset { // fill b's log until it starts over
				other := persistence.Key{SessionID: "other", Kind: persistence.KindAgent, ID: "a"}
				var v int64
				big := fmt.Sprintf(`{"role":"user","content":[{"text":%q}]}`, strings.Repeat("y", 3000))
				for range 4 {
					v, err = b.Save(ctx, rec(other, `{}`, big), persistence.SaveOptions{Base: v, Durable: true})
					require.NoError(t, err)
				}
			}
			a.CrashForTest()

			c, err := persistence.NewFileStore(dir)
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Load(ctx, k)
			require.ErrorIs(t, err, persistence.ErrNotFound)
		})
	}
}

// A record larger than the whole redo log is made durable by fsyncs of the
// files themselves (two rounds), and loads whole.
func TestRedo_RecordLargerThanTheLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var rounds int
	s, err := persistence.NewFileStore(dir, persistence.RedoLogSize(8<<10), persistence.OnSync(func(persistence.Key, []string) { rounds++ }))
	require.NoError(t, err)
	warm(t, s)
	rounds = 0
	k := persistence.Key{SessionID: "big", Kind: persistence.KindAgent, ID: "a"}
	big := fmt.Sprintf(`{"role":"user","content":[{"text":%q}]}`, strings.Repeat("z", 10<<10))
	_, err = s.Save(ctx, rec(k, `{}`, big), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	assert.Equal(t, 2, rounds, "the checkpoint's two rounds")
	s.CrashForTest()
	fresh, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer fresh.Close()
	r, err := fresh.Load(ctx, k)
	require.NoError(t, err)
	requireState(t, savedState{`{}`, []string{big}}, r)
}

// A log torn in its last record (the process killed mid-append) recovers
// the records before it.
func TestRedo_TornLastRecordIsIgnored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, s)
	k := persistence.Key{SessionID: "torn", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	logs := redoLogs(t, dir)
	require.Len(t, logs, 1)
	p := filepath.Join(dir, "redo", logs[0])
	before, err := os.ReadFile(p)
	require.NoError(t, err)
	_, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	require.NoError(t, err)
	after, err := os.ReadFile(p)
	require.NoError(t, err)
	s.CrashForTest()
	// The second record is half written, and its files are lost.
	end := len(before)
	for end > 0 && before[end-1] == 0 {
		end--
	}
	last := end
	for last < len(after) && after[last] != 0 {
		last++
	}
	torn := append([]byte(nil), before...)
	copy(torn[end:], after[end:end+(last-end)/2])
	require.NoError(t, os.WriteFile(p, torn, 0o644))
	head := filepath.Join(dir, "session_torn", "agents", "agent_a", "agent.json")
	require.NoError(t, os.WriteFile(head, nil, 0o644))

	fresh, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer fresh.Close()
	r, err := fresh.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	requireState(t, savedState{`{"n":1}`, []string{m0}}, r)
	var anyJSON any
	require.NoError(t, json.Unmarshal(r.Data, &anyJSON))
}

// Durable saves of many owners at once, on a log small enough to start over
// again and again: a reset must not drop the record of a save whose files
// are not written yet. After a machine crash (every unsynced file mangled),
// each owner is at its last acknowledged durable save or later.
func TestRedo_ConcurrentSavesAcrossResets(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			s, err := persistence.NewFileStore(dir, persistence.RedoLogSize(8<<10))
			require.NoError(t, err)
			warm(t, s)
			const owners, saves = 8, 12
			type result struct {
				saved map[int64]savedState
				floor int64
			}
			results := make([]result, owners)
			errs := make(chan error, owners)
			for o := range owners {
				go func() {
					k := persistence.Key{SessionID: fmt.Sprint("c", o), Kind: persistence.KindAgent, ID: "a"}
					res := result{saved: map[int64]savedState{}}
					var v int64
					var msgs []string
					for i := range saves {
						msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"text":"%d-%d %s"}]}`, o, i, strings.Repeat("p", 300)))
						data := fmt.Sprintf(`{"o":%d,"i":%d}`, o, i)
						var err error
						v, err = s.Save(ctx, rec(k, data, msgs...), persistence.SaveOptions{Base: v, Unchanged: len(msgs) - 1, Durable: true})
						if err != nil {
							errs <- err
							return
						}
						res.saved[v] = savedState{data: data, msgs: append([]string(nil), msgs...)}
						res.floor = v
					}
					results[o] = res
					errs <- nil
				}()
			}
			for range owners {
				require.NoError(t, <-errs)
			}
			rng := rand.New(rand.NewPCG(seed, 3))
			unsynced := s.UnsyncedForTest()
			s.CrashForTest()
			for _, p := range unsynced {
				mangle(t, rng, p)
			}
			fresh, err := persistence.NewFileStore(dir)
			require.NoError(t, err)
			defer fresh.Close()
			for o := range owners {
				k := persistence.Key{SessionID: fmt.Sprint("c", o), Kind: persistence.KindAgent, ID: "a"}
				r, err := fresh.Load(ctx, k)
				require.NoError(t, err, "owner %d", o)
				require.GreaterOrEqual(t, r.Version, results[o].floor)
				requireState(t, results[o].saved[r.Version], r)
			}
		})
	}
}

// The cases below came from a review of the redo log; each failed before
// its fix.

var rk = persistence.Key{SessionID: "x", Kind: persistence.KindAgent, ID: "a"}

// 1a: another store deletes and closes cleanly; the first store is killed.
func TestRedo_ReviewDeleteThenCloseResurrects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	_, err = a.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	b, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, b.Delete(ctx, rk))
	require.NoError(t, b.Close())
	a.CrashForTest() // process killed, no machine crash
	c, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer c.Close()
	r, err := c.Load(ctx, rk)
	require.ErrorIs(t, err, persistence.ErrNotFound, "resurrected: %v", r)
}

// 1b: recreated owner overwritten by the old incarnation.
func TestRedo_ReviewDeleteRecreateOverwritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	v := int64(0)
	for i := 0; i < 5; i++ {
		v, err = a.Save(ctx, rec(rk, `{"old":true}`, m0), persistence.SaveOptions{Base: v, Durable: true})
		require.NoError(t, err)
	}
	b, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, b.Delete(ctx, rk))
	_, err = b.Save(ctx, rec(rk, `{"new":true}`), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	a.CrashForTest()
	c, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer c.Close()
	r, err := c.Load(ctx, rk)
	require.NoError(t, err)
	require.JSONEq(t, `{"new":true}`, string(r.Data), "acknowledged v%d replaced", r.Version)
}

// 1c: recovery removes a dead log holding the tombstone while an older live log holds a record.
func TestRedo_ReviewRecoveryDropsTombstone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	_, err = a.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	b, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, b.Delete(ctx, rk))
	b.CrashForTest()
	c, err := persistence.NewFileStore(dir) // recovers b's log, removes it
	require.NoError(t, err)
	require.NoError(t, c.Close())
	a.CrashForTest()
	d, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer d.Close()
	r, err := d.Load(ctx, rk)
	require.ErrorIs(t, err, persistence.ErrNotFound, "resurrected: %v", r)
}

// 2: a torn session.json (written without fsync under the redo log) makes every open fail.
func TestRedo_ReviewTornSessionJSONBlocksOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, a)
	_, err = a.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	sj := filepath.Join(dir, "session_x", "session.json")
	require.Contains(t, a.UnsyncedForTest(), sj)
	a.CrashForTest()
	require.NoError(t, os.WriteFile(sj, nil, 0o644)) // delalloc: the link survived, the data did not
	for i := 0; i < 2; i++ {
		s, err := persistence.NewFileStore(dir)
		require.NoError(t, err, "open %d", i)
		s.Close()
	}
}

// 3: Close during a durable save: Close waits for the save's files, then
// makes them durable and removes the log; the save is acknowledged.
func TestRedo_ReviewCloseDuringDurableSave(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var s *persistence.FileStore
	closed := make(chan error, 1)
	started := false
	s, err := persistence.NewFileStore(dir, persistence.BeforeCommit(func(k persistence.Key, v int64) {
		if k == rk && !started {
			started = true
			go func() { closed <- s.Close() }()
			time.Sleep(50 * time.Millisecond) // Close is waiting on the save now
		}
	}))
	require.NoError(t, err)
	warm(t, s)
	_, err = s.Save(ctx, rec(rk, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err, "acknowledged")
	require.NoError(t, <-closed)
	require.Empty(t, redoLogs(t, dir))
	require.Empty(t, s.UnsyncedForTest(), "Close made the save's files durable")
}

// 4: Delete's tombstone is logged after the owner lock is released: a durable
// save that recreates the owner in between is lost at a machine crash.
func TestRedo_ReviewTombstoneAfterRecreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pre, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	_, err = pre.Save(ctx, rec(rk, `{"old":true}`), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	require.NoError(t, pre.Close())

	s2, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	warm(t, s2)
	var v int64
	var s1 *persistence.FileStore
	s1, err = persistence.NewFileStore(dir, persistence.OnSync(func(k persistence.Key, paths []string) {
		if len(paths) == 1 && filepath.Base(paths[0]) == "deletions" && v == 0 { // inside Delete, after the removal
			v, err = s2.Save(ctx, rec(rk, `{"new":true}`, m0), persistence.SaveOptions{Durable: true})
			require.NoError(t, err)
		}
	}))
	require.NoError(t, err)
	require.NoError(t, s1.Delete(ctx, rk))
	require.Equal(t, int64(1), v, "recreated, acknowledged durable")
	// machine crash: s2's unsynced files are lost.
	lost := s2.UnsyncedForTest()
	s1.CrashForTest()
	s2.CrashForTest()
	for _, p := range lost {
		_ = os.Remove(p)
	}
	f, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Load(ctx, rk)
	require.NoError(t, err, "acknowledged durable save v1 lost")
}
