package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/sqlite"
)

var bg = context.Background()

func open(t testing.TB, dir string, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	cfg.Dir = dir
	s, err := sqlite.Open(bg, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func harness(t *testing.T) persistencetest.Harness {
	dir := t.TempDir()
	return persistencetest.Harness{
		Store: open(t, dir, sqlite.Config{}),
		Tamper: func(t *testing.T, k persistence.Key, fn func(*persistence.Record)) {
			require.NoError(t, sqlite.Tamper(bg, dir, k, fn))
		},
		Exec: func(t *testing.T, stmt string, args ...any) {
			db, err := sqlite.RawDB(dir)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.ExecContext(bg, stmt, args...)
			require.NoError(t, err, stmt)
		},
	}
}

// SPEC S2, S4, S5: the embedded store passes the conformance suite.
func TestStore_Conformance(t *testing.T) {
	persistencetest.Run(t, harness)
}

func TestConfig_DefaultsAndValidate(t *testing.T) {
	d := sqlite.DefaultConfig()
	assert.Error(t, d.Validate(), "no Dir")
	d.Dir = "x"
	assert.NoError(t, d.Validate())
	for _, c := range []sqlite.Config{{Dir: "x", BusyTimeout: -1, ReadConns: 1, MaxGroup: 1}, {Dir: "x", BusyTimeout: 1e9, ReadConns: -1, MaxGroup: 1}} {
		assert.Error(t, c.Validate(), "%+v", c)
	}
	_, err := sqlite.Open(bg, sqlite.Config{})
	assert.Error(t, err)
}

// Validate judges a Config as Open does: a zero field is its default, so
// the Config the README shows (only Dir) is valid, and Validate refuses
// only what Open refuses.
func TestConfigValidate_TakesZeroFieldsAsTheirDefaults(t *testing.T) {
	cfg := sqlite.Config{Dir: t.TempDir()}
	require.NoError(t, cfg.Validate())
	s, err := sqlite.Open(bg, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	for _, bad := range []sqlite.Config{{Dir: "x", BusyTimeout: -1}, {Dir: "x", ReadConns: -1}, {Dir: "x", MaxGroup: -1}} {
		assert.Error(t, bad.Validate(), "%+v", bad)
		_, err := sqlite.Open(bg, sqlite.Config{Dir: t.TempDir(), BusyTimeout: bad.BusyTimeout, ReadConns: bad.ReadConns, MaxGroup: bad.MaxGroup})
		assert.Error(t, err, "%+v", bad)
	}
}

// Validate and Open agree on a MaxGroup too large for the queue Open
// makes for it: both refuse it with an error, Open without panicking,
// and both take the largest one allowed.
func TestConfigValidate_RefusesAMaxGroupTooLargeAsOpenDoes(t *testing.T) {
	for _, n := range []int{1<<16 + 1, math.MaxInt / 4, math.MaxInt} {
		cfg := sqlite.Config{Dir: t.TempDir(), MaxGroup: n}
		assert.ErrorContains(t, cfg.Validate(), "MaxGroup", "MaxGroup %d", n)
		var err error
		require.NotPanics(t, func() { _, err = sqlite.Open(bg, cfg) }, "MaxGroup %d", n)
		assert.ErrorContains(t, err, "MaxGroup", "MaxGroup %d", n)
	}
	cfg := sqlite.Config{Dir: t.TempDir(), MaxGroup: 1 << 16}
	require.NoError(t, cfg.Validate())
	s, err := sqlite.Open(bg, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// SPEC S2: one braid.db per folder, which Open creates private, wherever
// the folder is (a URI needs its path escaped: '?' and '#' end a URI's
// path, '%' starts an escape; Windows allows no '?' in a name).
func TestOpen_CreatesThePrivateFolderAndOneFile(t *testing.T) {
	name := "a b?c#d%41"
	if runtime.GOOS == "windows" {
		name = "a b#c;d%41&e"
	}
	dir := filepath.Join(t.TempDir(), name, "store")
	s := open(t, dir, sqlite.Config{})
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err := s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, sqlite.FileName))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	if runtime.GOOS != "windows" {
		di, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}
	require.NoError(t, s.Close())
	again := open(t, dir, sqlite.Config{})
	r, err := again.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Version)
}

// SPEC S2, S4: two stores on one folder (as two processes would be) race
// writers: every update lands once, and a stale save conflicts.
func TestTwoStores_OneFolder_LoseNoUpdate(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir, sqlite.Config{}), open(t, dir, sqlite.Config{})
	k := persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "a"}
	_, err := a.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":0}`)})
	require.NoError(t, err)

	const each = 20
	errs := make(chan error, 4)
	for i, s := range []*sqlite.Store{a, b, a, b} {
		go func() { errs <- persistencetest.Increment(s, k, each, i%2 == 0) }()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	r, err := b.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(4*each+1), r.Version)
	assert.JSONEq(t, `{"n":80}`, string(r.Data))

	// Both based on the same version: the second save conflicts.
	_, err = a.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: r.Version, Data: json.RawMessage(`{"n":1}`), From: len(r.Messages)})
	require.NoError(t, err)
	_, err = b.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: r.Version, Data: json.RawMessage(`{"n":2}`), From: len(r.Messages)})
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, r.Version+1, ce.Actual)
}

// SPEC S2: a writer that holds the lock past BusyTimeout makes a save fail
// with ErrBusy, and changes nothing; the store works once it is released.
func TestSave_LockedPastBusyTimeout_IsErrBusy(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{BusyTimeout: 50e6})
	k := persistence.Key{SessionID: "busy", Kind: persistence.KindAgent, ID: "a"}
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.BeginTx(bg, nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)

	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	assert.ErrorIs(t, err, sqlite.ErrBusy)
	assert.ErrorContains(t, err, sqlite.FileName)
	require.NoError(t, tx.Rollback())

	_, err = s.Load(bg, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound)
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	assert.NoError(t, err)
}

// SPEC S5: damage only SQL can do (invalid UTF-8 in a text column, a
// missing message row, a NULL) is a *DamageError naming the record.
func TestLoad_DamageOnlySQLCanDo(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{})
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	for name, stmt := range map[string]string{
		"invalid UTF-8 in data":    `UPDATE braid_records SET data = CAST(X'7B2261223A22FF227D' AS TEXT) WHERE session_id = ?`,
		"invalid UTF-8 in message": `UPDATE braid_messages SET data = CAST(X'7B2261223A22FF227D' AS TEXT) WHERE session_id = ? AND seq = 1`,
		"a missing message":        `DELETE FROM braid_messages WHERE session_id = ? AND seq = 1`,
		"the last message missing": `DELETE FROM braid_messages WHERE session_id = ? AND seq = 2`,
		"a wrong message count":    `UPDATE braid_records SET messages = 7 WHERE session_id = ?`,
		"bad updated_at":           `UPDATE braid_records SET updated_at = 'yesterday' WHERE session_id = ?`,
	} {
		t.Run(name, func(t *testing.T) {
			k := persistence.Key{SessionID: "damage " + name, Kind: persistence.KindAgent, ID: "a"}
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"a":"b"}`),
				Messages: []json.RawMessage{json.RawMessage(`{"i":0}`), json.RawMessage(`{"i":1}`), json.RawMessage(`{"i":2}`)}})
			require.NoError(t, err)
			_, err = db.ExecContext(bg, stmt, k.SessionID)
			require.NoError(t, err)
			_, err = s.Load(bg, k)
			var de *persistence.DamageError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, persistence.ErrDamaged)
			assert.Equal(t, k, de.Key)
		})
	}
	infos, err := s.Sessions(bg)
	require.NoError(t, err, "one session's damage does not fail the listing")
	var damaged []string
	for _, in := range infos {
		if in.Damaged {
			damaged = append(damaged, in.SessionID)
			assert.True(t, in.UpdatedAt.IsZero())
		}
	}
	assert.Len(t, infos, 6)
	assert.Equal(t, []string{"damage bad updated_at"}, damaged)
	if _, err := db.ExecContext(bg, `UPDATE braid_records SET data = '{}', updated_at = '2026-01-01T00:00:00.000000Z'`); err != nil {
		t.Fatal(err)
	}
	infos, err = s.Sessions(bg)
	require.NoError(t, err)
	for _, in := range infos {
		assert.False(t, in.Damaged, in.SessionID)
	}
}

func BenchmarkStore(b *testing.B) {
	persistencetest.Bench(b, func(b *testing.B) persistence.Store {
		s, err := sqlite.Open(bg, sqlite.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

func BenchmarkStore_NoFsync(b *testing.B) {
	persistencetest.Bench(b, func(b *testing.B) persistence.Store {
		s, err := sqlite.Open(bg, sqlite.Config{Dir: b.TempDir(), NoFsync: true})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// Close with saves in flight: every caller returns (saved, or ErrClosed),
// and every save reported done is there after reopening. (STYLE: no
// goroutine outlives its owner.)
func TestClose_WithSavesInFlight(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	const writers = 8
	type result struct {
		key  persistence.Key
		done int64
		err  error
	}
	results := make(chan result, writers)
	started := make(chan struct{}, writers)
	for i := range writers {
		go func() {
			k := persistence.Key{SessionID: fmt.Sprintf("inflight-%d", i), Kind: persistence.KindAgent, ID: "a"}
			var v int64
			for {
				_, err := s.Save(bg, persistence.SaveOptions{Durable: i%2 == 0}, persistence.Change{Key: k, Base: v, Data: json.RawMessage(`{}`)})
				if err != nil {
					results <- result{k, v, err}
					return
				}
				if v++; v == 1 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-started
	}
	require.NoError(t, s.Close())
	again := open(t, dir, sqlite.Config{})
	for range writers {
		r := <-results
		assert.ErrorIs(t, r.err, persistence.ErrClosed)
		rec, err := again.Load(bg, r.key)
		require.NoError(t, err)
		assert.Equal(t, r.done, rec.Version, "%s", r.key)
	}
}

// A caller whose context ends while the writer waits for another
// process's lock gets its context's error, without waiting for the lock.
func TestSave_ContextEndsWhileLocked(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{})
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.BeginTx(bg, nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	defer tx.Rollback()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	k := persistence.Key{SessionID: "ctx", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, tx.Rollback())
	require.NoError(t, s.Sync(bg)) // the writer is free again
}

// A braid.db whose tables an earlier Braid created as rowid tables, with
// no layout row, opens and works as before, its records included: the
// schema is only ever created when absent, and the records get the
// incarnation column of layout 2 (0 for the records already there).
func TestStore_OpensTheRowidTablesOfAnEarlierVersion(t *testing.T) {
	dir := t.TempDir()
	db := rawExec(t, dir,
		`CREATE TABLE braid_records (session_id text NOT NULL, kind text NOT NULL, id text NOT NULL,
  schema_version integer NOT NULL, version bigint NOT NULL, updated_at text NOT NULL, data text NOT NULL,
  messages bigint NOT NULL, PRIMARY KEY (session_id, kind, id))`,
		`CREATE TABLE braid_messages (session_id text NOT NULL, kind text NOT NULL, id text NOT NULL,
  seq bigint NOT NULL, data text NOT NULL, PRIMARY KEY (session_id, kind, id, seq))`,
		`INSERT INTO braid_records VALUES ('old', 'agent', 'a', 1, 3, '2026-12-01T10:00:00.000000Z', '{"n":1}', 1)`,
		`INSERT INTO braid_messages VALUES ('old', 'agent', 'a', 0, '{"i":0}')`)
	require.NoError(t, db.Close())
	s := open(t, dir, sqlite.Config{})
	old := persistence.Key{SessionID: "old", Kind: persistence.KindAgent, ID: "a"}
	rec, err := s.Load(bg, old)
	require.NoError(t, err)
	assert.Equal(t, int64(3), rec.Version)
	assert.Zero(t, rec.Incarnation)
	assert.Len(t, rec.Messages, 1)
	v, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: old, Base: 3, Data: json.RawMessage(`{"n":2}`), From: 1})
	require.NoError(t, err)
	assert.Equal(t, []int64{4}, v)
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{}`),
		Messages: []json.RawMessage{json.RawMessage(`{"i":0}`)}})
	require.NoError(t, err)
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{}`), From: 1,
		Messages: []json.RawMessage{json.RawMessage(`{"i":1}`)}})
	require.NoError(t, err)
	rec, err = s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Version)
	assert.Len(t, rec.Messages, 2)

	db = rawExec(t, dir)
	var layout int
	require.NoError(t, db.QueryRowContext(bg, `SELECT value FROM braid_meta WHERE name = 'layout'`).Scan(&layout))
	assert.Equal(t, 2, layout, "the database now says which layout its tables are")
}

// A braid.db of layout 1 (the layout row, no incarnation column) is
// brought to layout 2 when a store opens it, and its records load with
// incarnation 0; a record created afterwards has one.
func TestOpen_BringsLayout1ToLayout2(t *testing.T) {
	dir := t.TempDir()
	db := rawExec(t, dir,
		`CREATE TABLE braid_meta (name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO braid_meta (name, value) VALUES ('layout', 1)`,
		`CREATE TABLE braid_records (session_id text NOT NULL, kind text NOT NULL, id text NOT NULL,
  schema_version integer NOT NULL, version bigint NOT NULL, updated_at text NOT NULL, data text NOT NULL,
  messages bigint NOT NULL, PRIMARY KEY (session_id, kind, id)) WITHOUT ROWID`,
		`CREATE TABLE braid_messages (session_id text NOT NULL, kind text NOT NULL, id text NOT NULL,
  seq bigint NOT NULL, data text NOT NULL, PRIMARY KEY (session_id, kind, id, seq)) WITHOUT ROWID`,
		`INSERT INTO braid_records VALUES ('old', 'agent', 'a', 1, 2, '2026-12-01T10:00:00.000000Z', '{"n":1}', 0)`)
	s := open(t, dir, sqlite.Config{})
	old := persistence.Key{SessionID: "old", Kind: persistence.KindAgent, ID: "a"}
	rec, err := s.Load(bg, old)
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Version)
	assert.Zero(t, rec.Incarnation)
	k := persistence.Key{SessionID: "new", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`), Incarnation: 42})
	require.NoError(t, err)
	rec, err = s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(42), rec.Incarnation)
	var layout int
	require.NoError(t, db.QueryRowContext(bg, `SELECT value FROM braid_meta WHERE name = 'layout'`).Scan(&layout))
	assert.Equal(t, 2, layout)

	// SPEC S4: a writer of the old record (incarnation 0), which was
	// deleted and created again up to its version by another writer,
	// conflicts.
	manager := func() *persistence.SessionManager {
		m, err := persistence.NewSessionManager(s, "old")
		require.NoError(t, err)
		return m
	}
	staleM := manager()
	stale, _, err := staleM.Open(bg, persistence.KindAgent, "a")
	require.NoError(t, err)
	_, err = s.DeleteSession(bg, "old")
	require.NoError(t, err)
	m := manager()
	fresh, _, err := m.Open(bg, persistence.KindAgent, "a")
	require.NoError(t, err)
	for _, n := range []string{`{"n":10}`, `{"n":11}`} {
		c, err := fresh.Stage(json.RawMessage(n), fresh.Messages(), nil)
		require.NoError(t, err)
		require.NoError(t, m.Commit(bg, persistence.SaveMessage, c))
	}
	require.Equal(t, stale.Version(), fresh.Version())
	c, err := stale.Stage(json.RawMessage(`{"n":3}`), stale.Messages(), nil)
	require.NoError(t, err)
	var ce *persistence.ConflictError
	err = staleM.Commit(bg, persistence.SaveMessage, c)
	require.ErrorAs(t, err, &ce)
	assert.True(t, ce.Recreated)
	rec, err = s.Load(bg, old)
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":11}`, string(rec.Data))
}

// SPEC S5, S2: a session whose update time is damaged is listed as
// damaged, whether the bad text sorts after the session's other update
// times or before them; so is one whose id, or a record's kind, is none a
// save writes (rows copied by hand), which no other call would show.
func TestSessions_MarksABadUpdateTimeWhereverItSortsAndKeysNoSaveWrites(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{})
	db := rawExec(t, dir)
	for _, id := range []string{"a", "b"} {
		for _, session := range []string{"low", "high", "sound"} {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{
				Key: persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: id}, Data: json.RawMessage(`{}`)})
			require.NoError(t, err)
		}
	}
	for session, bad := range map[string]string{"low": "", "high": "yesterday"} {
		_, err := db.ExecContext(bg, `UPDATE braid_records SET updated_at = ? WHERE session_id = ? AND id = 'a'`, bad, session)
		require.NoError(t, err)
	}
	// Rows copied by hand under a session id and a kind no save writes.
	_, err := db.ExecContext(bg, `INSERT INTO braid_records SELECT 'a/b', kind, id, schema_version, version, updated_at, data, messages, incarnation
FROM braid_records WHERE session_id = 'sound' AND id = 'a'`)
	require.NoError(t, err)
	_, err = db.ExecContext(bg, `INSERT INTO braid_records SELECT 'odd kind', 'bogus', id, schema_version, version, updated_at, data, messages, incarnation
FROM braid_records WHERE session_id = 'sound' AND id = 'a'`)
	require.NoError(t, err)
	infos, err := s.Sessions(bg)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, in := range infos {
		got[in.SessionID] = in.Damaged
	}
	assert.Equal(t, map[string]bool{"low": true, "high": true, "sound": false, "a/b": true, "odd kind": true}, got)
}

// A braid.db where creating the tables fails part of the way (here an
// index holds the name of the second table) is left as it was: Open
// fails, and the first table it created is rolled back with the rest.
func TestOpen_ThatFailsCreatingTheTablesLeavesTheDatabaseAsItWas(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE other (x text)`,
		`CREATE INDEX braid_messages ON other (x)`,
	} {
		_, err := db.ExecContext(bg, stmt)
		require.NoError(t, err)
	}
	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.Error(t, err)
	var n int
	require.NoError(t, db.QueryRowContext(bg, `SELECT count(*) FROM sqlite_master WHERE name IN ('braid_records', 'braid_meta')`).Scan(&n))
	assert.Zero(t, n, "nothing of the failed open was kept")
}

// SPEC S5: a braid.db whose tables are of a layout this build does not
// know (a newer Braid's) is refused when the store opens, saying so, and
// nothing is written to it: an older build would otherwise create its own
// tables beside the newer ones and keep sessions where the newer build
// never looks.
func TestOpen_RefusesTheTablesOfANewerLayout(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE braid_meta (name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO braid_meta (name, value) VALUES ('layout', 3)`,
		`CREATE TABLE braid_sessions (id text PRIMARY KEY, body text NOT NULL)`,
	} {
		_, err := db.ExecContext(bg, stmt)
		require.NoError(t, err)
	}
	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	assert.Contains(t, err.Error(), "layout 3")

	var tables []string
	rows, err := db.QueryContext(bg, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"braid_meta", "braid_sessions"}, tables, "no table created")
	var layout int
	require.NoError(t, db.QueryRowContext(bg, `SELECT value FROM braid_meta WHERE name = 'layout'`).Scan(&layout))
	assert.Equal(t, 3, layout)
}

// The tables are WITHOUT ROWID: each is its primary key's b-tree, so a
// save writes one b-tree per table, not a table and its key's index.
func TestStore_TablesAreTheirPrimaryKeys(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, sqlite.Config{})
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	for _, table := range []string{"braid_records", "braid_messages"} {
		var n int
		require.NoError(t, db.QueryRowContext(bg, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`, table).Scan(&n))
		assert.Zero(t, n, "%s has a separate index for its key", table)
	}
}

// BenchmarkSave_AgainstSQLiteFloor compares, in one run, an appending save
// through the Store (one message added to a 10-message record, no fsync)
// with the SQLite statements such a save cannot do without, run by hand on
// a connection of their own with the same pragmas: BEGIN IMMEDIATE, the
// record's update, the message's insert, COMMIT ("floor"), and a write
// transaction of one update ("floor-1-statement"). The difference is the
// Store's own cost: checks, version bookkeeping, group commit
// (docs/PERFORMANCE.md, where the time of a b4 cycle goes).
func BenchmarkSave_AgainstSQLiteFloor(b *testing.B) {
	k := persistence.Key{SessionID: "floor", Kind: persistence.KindAgent, ID: "agent"}
	data := json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)
	msg := json.RawMessage(`{"role":"assistant","content":[{"text":"done"}]}`)
	first := make([]json.RawMessage, 10)
	for i := range first {
		first[i] = msg
	}
	setup := func(b *testing.B) string {
		dir := b.TempDir()
		s, err := sqlite.Open(bg, sqlite.Config{Dir: dir, NoFsync: true})
		require.NoError(b, err)
		_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data, Messages: first})
		require.NoError(b, err)
		require.NoError(b, s.Close())
		return dir
	}
	b.Run("store", func(b *testing.B) {
		s := open(b, setup(b), sqlite.Config{NoFsync: true})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{
				Key: k, Base: int64(i + 1), Data: data, From: len(first) + i, Messages: []json.RawMessage{msg}})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for _, insert := range []bool{true, false} {
		name := map[bool]string{true: "floor", false: "floor-1-statement"}[insert]
		b.Run(name, func(b *testing.B) {
			db, err := sqlite.RawDB(setup(b), "_pragma=synchronous(OFF)")
			require.NoError(b, err)
			defer db.Close()
			conn, err := db.Conn(bg)
			require.NoError(b, err)
			defer conn.Close()
			prep := func(q string) *sql.Stmt {
				st, err := conn.PrepareContext(bg, q)
				require.NoError(b, err)
				return st
			}
			begin, commit := prep("BEGIN IMMEDIATE"), prep("COMMIT")
			update := prep(`UPDATE braid_records SET version = version + 1, data = ?, messages = ?, updated_at = ?
  WHERE session_id = ? AND kind = ? AND id = ? AND version = ?`)
			add := prep(`INSERT INTO braid_messages (session_id, kind, id, seq, data) VALUES (?, ?, ?, ?, ?)`)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				n := int64(len(first) + i)
				_, err := begin.ExecContext(bg)
				if err == nil {
					_, err = update.ExecContext(bg, []byte(data), n+1, "2026-12-04T00:00:00.000000Z", k.SessionID, string(k.Kind), k.ID, int64(i+1))
				}
				if err == nil && insert {
					_, err = add.ExecContext(bg, k.SessionID, string(k.Kind), k.ID, n, []byte(msg))
				}
				if err == nil {
					_, err = commit.ExecContext(bg)
				}
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// rawExec opens dir's database as another program would and runs stmts on
// it; the database stays open for the test's own checks.
func rawExec(t *testing.T, dir string, stmts ...string) *sql.DB {
	t.Helper()
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, stmt := range stmts {
		_, err := db.ExecContext(bg, stmt)
		require.NoError(t, err, stmt)
	}
	return db
}

// SPEC S5: SQLite keeps a value of any type in any column, so a hand edit
// can put text or a real where the store keeps an integer. Such a record
// is a *persistence.DamageError naming session and owner, for Load and
// Session alike, never a bare scan error; other sessions stay usable, the
// listing does not fail, and DeleteSession clears it.
func TestSQLite_S5_AColumnOfTheWrongTypeIsDamageNamingTheRecord(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, sqlite.Config{})
	db := rawExec(t, dir)
	other := persistence.Key{SessionID: "sound", Kind: persistence.KindAgent, ID: "a"}
	_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: other, Data: json.RawMessage(`{"a":"b"}`)})
	require.NoError(t, err)
	for name, stmt := range map[string]string{
		"text version":        `UPDATE braid_records SET version = 'abc' WHERE session_id = ?`,
		"real version":        `UPDATE braid_records SET version = 1.5 WHERE session_id = ?`,
		"huge real version":   `UPDATE braid_records SET version = 1e30 WHERE session_id = ?`,
		"text schema version": `UPDATE braid_records SET schema_version = 'one' WHERE session_id = ?`,
		"text message count":  `UPDATE braid_records SET messages = 'x' WHERE session_id = ?`,
		"text incarnation":    `UPDATE braid_records SET incarnation = 'q' WHERE session_id = ?`,
		"text message seq":    `UPDATE braid_messages SET seq = 'x' WHERE session_id = ? AND seq = 1`,
		"real message seq":    `UPDATE braid_messages SET seq = 1.5 WHERE session_id = ? AND seq = 1`,
	} {
		t.Run(name, func(t *testing.T) {
			k := persistence.Key{SessionID: "typed " + name, Kind: persistence.KindAgent, ID: "a"}
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"a":"b"}`),
				Messages: []json.RawMessage{json.RawMessage(`{"i":0}`), json.RawMessage(`{"i":1}`), json.RawMessage(`{"i":2}`)}})
			require.NoError(t, err)
			_, err = db.ExecContext(bg, stmt, k.SessionID)
			require.NoError(t, err)

			_, err = s.Load(bg, k)
			var de *persistence.DamageError
			require.ErrorAs(t, err, &de, "load")
			assert.ErrorIs(t, err, persistence.ErrDamaged)
			assert.NotErrorIs(t, err, persistence.ErrSchemaVersion)
			assert.Equal(t, k, de.Key)
			_, err = s.Session(bg, k.SessionID)
			require.ErrorAs(t, err, &de, "session")
			assert.Equal(t, k, de.Key)

			r, err := s.Load(bg, other)
			require.NoError(t, err, "another session stays usable")
			assert.Equal(t, `{"a":"b"}`, string(r.Data))
			_, err = s.Sessions(bg)
			require.NoError(t, err)
			n, err := s.DeleteSession(bg, k.SessionID)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			_, err = s.Load(bg, k)
			assert.ErrorIs(t, err, persistence.ErrNotFound)
		})
	}
}

// SPEC S2: a braid.db that is another program's database (tables, none of
// Braid's) is refused with ErrForeign and left as it was: no Braid table
// is created in it and its journal mode is not switched to WAL. An empty
// file is taken as a new store.
func TestOpen_RefusesAnotherProgramsDatabaseAndLeavesItAsItWas(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.FileName)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE notes (body text)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.ErrorIs(t, err, sqlite.ErrForeign)
	assert.Contains(t, err.Error(), path)

	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "delete", mode, "the journal mode was switched")
	var braid int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'braid%'`).Scan(&braid))
	assert.Zero(t, braid, "Braid's tables were created in it")

	empty := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(empty, sqlite.FileName), nil, 0o600))
	s := open(t, empty, sqlite.Config{})
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
}

// SPEC S2: Close lets go of the database: SQLite folds the WAL back into
// braid.db and removes it, so braid.db alone holds every session (a copy
// of it is a whole store) and no descriptor of the store stays open.
func TestClose_LeavesTheWholeStoreInBraidDB(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	_, err = s.Load(bg, k) // prepares and uses the reads too
	require.NoError(t, err)
	require.NoError(t, s.Close())

	assert.NoFileExists(t, filepath.Join(dir, sqlite.FileName+"-wal"), "the WAL is folded into braid.db on Close")
	cp := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, sqlite.FileName))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(cp, sqlite.FileName), b, 0o600))
	r, err := open(t, cp, sqlite.Config{}).Load(bg, k)
	require.NoError(t, err, "a copy of braid.db alone holds the saved record")
	assert.JSONEq(t, `{"n":1}`, string(r.Data))
}

// SPEC S5: a store that refuses a database (here of a newer layout) keeps
// no connection to it: once the other program closes it, SQLite removes
// the WAL, as it does for the last connection.
func TestOpen_ThatIsRefusedKeepsNoConnection(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.RawDB(dir, "_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	for _, stmt := range []string{
		`CREATE TABLE braid_meta (name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO braid_meta (name, value) VALUES ('layout', 3)`,
	} {
		_, err := db.ExecContext(bg, stmt)
		require.NoError(t, err)
	}
	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	require.NoError(t, db.Close())
	assert.NoFileExists(t, filepath.Join(dir, sqlite.FileName+"-wal"), "the refused store's connection was closed")
}

// SPEC S2: a new store's files are readable by their owner alone, also
// in a folder the store did not create (sessions hold prompts, answers
// and tools' inputs); a database that exists keeps its mode.
func TestOpen_NewStoreFilesAreTheOwnersAlone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are Unix's")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	require.NoError(t, err)
	_, err = s.Save(context.Background(), persistence.SaveOptions{Durable: true}, persistence.Change{
		Key: persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	for _, name := range []string{"braid.db", "braid.db-wal", "braid.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.NoError(t, s.Close())

	require.NoError(t, os.Chmod(filepath.Join(dir, "braid.db"), 0o640))
	s, err = sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	fi, err := os.Stat(filepath.Join(dir, "braid.db"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "an existing database keeps its mode")
}

// A store opened with Config.ReadOnly creates nothing (no folder, no
// braid.db, no tables in an empty braid.db: errors matching
// fs.ErrNotExist), refuses every write with ErrReadOnly and writes
// nothing, reads what a writer committed while that writer holds the
// write lock, and refuses tables of another layout (ErrSchemaVersion)
// without bringing them to this build's.
func TestOpen_ReadOnlyCreatesNothingAndRefusesWrites(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	_, err := sqlite.Open(bg, sqlite.Config{Dir: missing, ReadOnly: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.NoDirExists(t, missing)
	emptyDir := t.TempDir()
	_, err = sqlite.Open(bg, sqlite.Config{Dir: emptyDir, ReadOnly: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.NoFileExists(t, filepath.Join(emptyDir, sqlite.FileName))
	require.NoError(t, os.WriteFile(filepath.Join(emptyDir, sqlite.FileName), nil, 0o600))
	_, err = sqlite.Open(bg, sqlite.Config{Dir: emptyDir, ReadOnly: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	fi, err := os.Stat(filepath.Join(emptyDir, sqlite.FileName))
	require.NoError(t, err)
	assert.Zero(t, fi.Size())

	dir := t.TempDir()
	w, err := sqlite.Open(bg, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	key := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err = w.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: key, Data: json.RawMessage(`{"n":1}`), Incarnation: 1})
	require.NoError(t, err)
	db, err := sqlite.RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(bg)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(bg, "BEGIN IMMEDIATE") // another writer holds the write lock
	require.NoError(t, err)
	r, err := sqlite.Open(bg, sqlite.Config{Dir: dir, ReadOnly: true, BusyTimeout: time.Millisecond})
	require.NoError(t, err)
	rec, err := r.Load(bg, key)
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":1}`, string(rec.Data))
	_, err = r.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: key, Base: 1, Data: json.RawMessage(`{"n":2}`), From: 0, Incarnation: 1})
	assert.ErrorIs(t, err, sqlite.ErrReadOnly)
	assert.ErrorIs(t, r.Delete(bg, key), sqlite.ErrReadOnly)
	_, err = r.DeleteSession(bg, "s")
	assert.ErrorIs(t, err, sqlite.ErrReadOnly)
	_, err = r.DeleteStoredSession(bg, "s")
	assert.ErrorIs(t, err, sqlite.ErrReadOnly)
	assert.ErrorIs(t, r.Sync(bg), sqlite.ErrReadOnly)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.Delete(bg, key), persistence.ErrClosed)
	_, err = conn.ExecContext(bg, "ROLLBACK")
	require.NoError(t, err)
	rec, err = w.Load(bg, key)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rec.Version, "nothing written")
	require.NoError(t, w.Close())

	_, err = db.ExecContext(bg, `UPDATE braid_meta SET value = 3 WHERE name = 'layout'`)
	require.NoError(t, err)
	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir, ReadOnly: true})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	_, err = db.ExecContext(bg, `UPDATE braid_meta SET value = 1 WHERE name = 'layout'`)
	require.NoError(t, err)
	_, err = sqlite.Open(bg, sqlite.Config{Dir: dir, ReadOnly: true})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	var layout int
	require.NoError(t, db.QueryRowContext(bg, `SELECT value FROM braid_meta WHERE name = 'layout'`).Scan(&layout))
	assert.Equal(t, 1, layout, "not brought to this build's layout")
}
