package postgres_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

var bg = context.Background()

func newStore(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.New(bg, postgres.Config{DSN: persistencetest.PostgresDSN(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// SPEC S3, S4, S5: the postgres store passes the same suite as the others.
func TestStore_Conformance(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	persistencetest.Run(t, func(t *testing.T) persistencetest.Harness {
		return persistencetest.Harness{Store: newStore(t), Tamper: func(t *testing.T, k persistence.Key, fn func(*persistence.Record)) {
			require.NoError(t, postgres.Tamper(bg, dsn, k, fn))
		}, Exec: func(t *testing.T, stmt string, args ...any) {
			conn, err := pgx.Connect(bg, dsn)
			require.NoError(t, err)
			defer conn.Close(bg)
			_, err = conn.Exec(bg, stmt, args...)
			require.NoError(t, err, stmt)
		}}
	})
}

func TestConfig_Errors(t *testing.T) {
	for _, cfg := range []postgres.Config{
		{},
		{DSN: "postgres://x@127.0.0.1:1/db", MaxConns: -1},
		{DSN: "not a dsn = = ="},
	} {
		_, err := postgres.New(bg, cfg)
		assert.Error(t, err, "%+v", cfg)
	}
	d := postgres.DefaultConfig()
	assert.Error(t, d.Validate(), "no DSN")
	d.DSN = "postgres://localhost/x"
	assert.NoError(t, d.Validate())
}

// Validate judges a Config as New does: a zero field is its default, so
// a Config with only its DSN is valid.
func TestConfigValidate_TakesZeroFieldsAsTheirDefaults(t *testing.T) {
	assert.NoError(t, postgres.Config{DSN: "postgres://localhost/x"}.Validate())
	assert.Error(t, postgres.Config{DSN: "postgres://localhost/x", MaxConns: -1}.Validate())
	assert.Error(t, postgres.Config{DSN: "postgres://localhost/x", ConnectTimeout: -1}.Validate())
}

// SPEC S3: stores starting together (as processes would) create the
// tables once, without failing.
func TestNew_ConcurrentStarts(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := postgres.New(bg, postgres.Config{DSN: dsn})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		assert.NoError(t, <-errs)
	}
}

// SPEC S3, S4: two stores (two pools, as two processes or machines) race
// writers on one record: every update lands once, and a stale save
// conflicts.
func TestTwoStores_LoseNoUpdate(t *testing.T) {
	a, b := newStore(t), newStore(t)
	k := persistence.Key{SessionID: "race-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err := a.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":0}`)})
	require.NoError(t, err)
	const each = 20
	errs := make(chan error, 4)
	for i, s := range []*postgres.Store{a, b, a, b} {
		go func() { errs <- persistencetest.Increment(s, k, each, i%2 == 0) }()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	r, err := b.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(4*each+1), r.Version)
	assert.JSONEq(t, `{"n":80}`, string(r.Data))

	_, err = a.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: r.Version, Data: json.RawMessage(`{"n":1}`), From: len(r.Messages)})
	require.NoError(t, err)
	_, err = b.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: r.Version, Data: json.RawMessage(`{"n":2}`), From: len(r.Messages)})
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, r.Version+1, ce.Actual)
}

// SPEC I9, S3: after Sync returns, the WAL is flushed past every commit
// before it, and Sync wrote the meta row (a commit that writes nothing
// would not wait for the flush).
func TestSync_FlushesTheWALPastEarlierCommits(t *testing.T) {
	s := newStore(t)
	conn, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	defer conn.Close(bg)
	var before int64
	require.NoError(t, conn.QueryRow(bg, `SELECT coalesce((SELECT value FROM braid_meta WHERE name = 'sync'), 0)`).Scan(&before))
	k := persistence.Key{SessionID: "sync-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var lsn string
	require.NoError(t, conn.QueryRow(bg, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn))
	require.NoError(t, s.Sync(bg))
	var flushed bool
	var after int64
	require.NoError(t, conn.QueryRow(bg, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn, (SELECT value FROM braid_meta WHERE name = 'sync')`, lsn).Scan(&flushed, &after))
	assert.True(t, flushed, "WAL flushed to %s", lsn)
	assert.Greater(t, after, before)
}

func BenchmarkStore(b *testing.B) {
	persistencetest.Bench(b, func(b *testing.B) persistence.Store {
		s, err := postgres.New(bg, postgres.Config{DSN: persistencetest.PostgresDSN(b), MaxConns: 40})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// SPEC S5: a database whose tables are of a layout this build does not
// know (a newer Braid's) is refused when a store starts, saying so, and
// nothing is written to it; one of an earlier build (layout 1's tables, no
// layout row) is brought to this build's layout, its records kept. Each case runs in a schema of its own (the DSN's
// search_path), so the tests beside it keep theirs.
func TestNew_RefusesTheTablesOfANewerLayout(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	conn, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer conn.Close(bg)
	schema := "layout_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	_, err = conn.Exec(bg, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(bg, `DROP SCHEMA `+schema+` CASCADE`) })
	for _, stmt := range []string{
		`CREATE TABLE ` + schema + `.braid_meta (name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO ` + schema + `.braid_meta (name, value) VALUES ('layout', 3)`,
	} {
		_, err := conn.Exec(bg, stmt)
		require.NoError(t, err)
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	_, err = postgres.New(bg, postgres.Config{DSN: u.String()})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	assert.Contains(t, err.Error(), "layout 3")
	var tables int
	require.NoError(t, conn.QueryRow(bg, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables))
	assert.Equal(t, 1, tables, "no table created")

	// An earlier build's database: the tables of layout 1 with a record,
	// no layout row. It is brought to layout 2, the record kept.
	for _, stmt := range []string{
		`DELETE FROM ` + schema + `.braid_meta`,
		`CREATE TABLE ` + schema + `.braid_records (session_id text COLLATE "C" NOT NULL, kind text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL, schema_version integer NOT NULL, version bigint NOT NULL, updated_at text NOT NULL,
  data text NOT NULL, messages bigint NOT NULL, PRIMARY KEY (session_id, kind, id))`,
		`INSERT INTO ` + schema + `.braid_records VALUES ('old', 'agent', 'a', 1, 2, '2026-12-01T10:00:00.000000Z', '{"n":1}', 0)`,
	} {
		_, err := conn.Exec(bg, stmt)
		require.NoError(t, err)
	}
	s, err := postgres.New(bg, postgres.Config{DSN: u.String()})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var layout int
	require.NoError(t, conn.QueryRow(bg, `SELECT value FROM `+schema+`.braid_meta WHERE name = 'layout'`).Scan(&layout))
	assert.Equal(t, 2, layout)
	var records int
	require.NoError(t, conn.QueryRow(bg, `SELECT count(*) FROM `+schema+`.braid_records`).Scan(&records))
	assert.Equal(t, 2, records, "the save went to the schema of the DSN")
	rec, err := s.Load(bg, persistence.Key{SessionID: "old", Kind: persistence.KindAgent, ID: "a"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Version)
	assert.Zero(t, rec.Incarnation)
}

// SPEC S3: a store opens with a role that may read and write Braid's
// tables but not create tables (a production role, with the tables
// created by another): opening creates nothing that is there already.
// On a database without the tables such a role gets an error that says
// so.
func TestNew_OpensWithARoleThatCannotCreateTables(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	conn, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer conn.Close(bg)
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")
	schema, role := "dml_"+suffix, "app_"+suffix
	for _, stmt := range []string{`CREATE SCHEMA ` + schema, `CREATE ROLE ` + role + ` LOGIN`, `GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role} {
		_, err := conn.Exec(bg, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		for _, stmt := range []string{`DROP SCHEMA ` + schema + ` CASCADE`, `DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			_, _ = conn.Exec(bg, stmt)
		}
	})
	at := func(user string) string {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		if user != "" {
			u.User = url.User(user)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}

	_, err = postgres.New(bg, postgres.Config{DSN: at(role)})
	require.Error(t, err, "no tables, and the role cannot create them")
	assert.Contains(t, err.Error(), "creating Braid's tables")
	assert.Contains(t, err.Error(), "permission denied")

	admin, err := postgres.New(bg, postgres.Config{DSN: at("")}) // creates the tables
	require.NoError(t, err)
	require.NoError(t, admin.Close())
	_, err = conn.Exec(bg, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA `+schema+` TO `+role)
	require.NoError(t, err)

	s, err := postgres.New(bg, postgres.Config{DSN: at(role)})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	rec, err := s.Load(bg, k)
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":1}`, string(rec.Data))
}

// holdSessionLock takes, on a connection of the test's own, the lock every
// save of sessionID takes (the store's advisory lock key) and holds it
// until the returned transaction ends.
func holdSessionLock(t *testing.T, sessionID string) pgx.Tx {
	t.Helper()
	conn, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(bg) })
	tx, err := conn.Begin(bg)
	require.NoError(t, err)
	_, err = tx.Exec(bg, `SELECT pg_advisory_xact_lock(1651663209, hashtext($1))`, sessionID)
	require.NoError(t, err)
	return tx
}

// sessionLockWaiters counts the server's backends that wait for
// sessionID's lock.
func sessionLockWaiters(t *testing.T, conn *pgx.Conn, sessionID string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(bg, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
  AND classid = 1651663209 AND objid = hashtext($1)::oid`, sessionID).Scan(&n))
	return n
}

// awaitSessionLockWaiter returns once a backend waits for sessionID's
// lock: each pass asks the server, so the wait is on the server's state,
// not on time.
func awaitSessionLockWaiter(t *testing.T, conn *pgx.Conn, sessionID string) {
	t.Helper()
	for sessionLockWaiters(t, conn, sessionID) == 0 {
	}
}
