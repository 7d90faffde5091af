package postgres_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// newDatabase creates, on the tests' server, a database and a role that
// owns it, runs the statements setup (with %[1]s the database's name and
// %[2]s the role's), and returns a DSN of the role on the database; the
// test's end drops both.
func newDatabase(t *testing.T, setup ...string) string {
	t.Helper()
	dsn := persistencetest.PostgresDSN(t)
	admin, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(bg) })
	name := "braid_db_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	for _, sql := range append([]string{`CREATE ROLE %[2]s LOGIN`, `CREATE DATABASE %[1]s OWNER %[2]s`}, setup...) {
		_, err := admin.Exec(bg, strings.NewReplacer("%[1]s", name, "%[2]s", name+"_r").Replace(sql))
		require.NoError(t, err, sql)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(bg, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		_, _ = admin.Exec(bg, `DROP ROLE IF EXISTS `+name+`_r`)
	})
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Path = "/" + name
	u.User = url.User(name + "_r")
	return u.String()
}

// SPEC S3, S4, R5: a statement_timeout or lock_timeout that an operator
// set on the database or the role (ALTER DATABASE/ROLE ... SET) bounds
// the store's statements: a save that waits for its session's lock
// longer (another writer holds it), and a load that waits for its table,
// fail with the server's timeout error, at once, well within their
// context's deadline, never matching persistence.ErrOutcomeUnknown (the
// server answered: nothing was stored), and nothing of the save commits
// later; the next calls, once the lock is free, succeed.
func TestStore_TimeoutSetOnTheDatabaseOrRoleFailsTheCallCleanly(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		code          string // the timeout's SQLSTATE
	}{
		{"lock_timeout on the database", `ALTER DATABASE %[1]s SET lock_timeout = '250ms'`, "55P03"},
		{"statement_timeout on the role", `ALTER ROLE %[2]s SET statement_timeout = '250ms'`, "57014"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDatabase(t, tc.setting)
			s, err := postgres.New(bg, postgres.Config{DSN: dsn})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			holderConn, err := pgx.Connect(bg, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = holderConn.Close(bg) })

			session := "timeout-" + uuid.NewString()
			var changes []persistence.Change
			for _, id := range []string{"a", "b"} {
				k := agentKey(session, id)
				_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 1)})
				require.NoError(t, err)
				changes = append(changes, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`), From: 1, Messages: msgs(1, 1)})
			}
			failsWithTheTimeout := func(what string, err error, ctx context.Context) {
				t.Helper()
				require.Error(t, err, what)
				assert.NoError(t, ctx.Err(), "%s: failed at the server's timeout, not at the context's deadline", what)
				assert.Contains(t, err.Error(), tc.code, what)
				assert.Contains(t, err.Error(), "postgres store", what)
				assert.NotErrorIs(t, err, persistence.ErrOutcomeUnknown, what)
			}

			holder, err := holderConn.Begin(bg)
			require.NoError(t, err)
			_, err = holder.Exec(bg, `SELECT pg_advisory_xact_lock(1651663209, hashtext($1))`, session)
			require.NoError(t, err)
			_, err = holder.Exec(bg, `LOCK TABLE braid_records IN ACCESS EXCLUSIVE MODE`)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			defer cancel()
			_, err = s.Save(ctx, persistence.SaveOptions{Durable: true}, changes[0])
			failsWithTheTimeout("save", err, ctx)
			_, err = s.Save(ctx, persistence.SaveOptions{Durable: true}, changes...)
			failsWithTheTimeout("batch save", err, ctx)
			_, err = s.Load(ctx, changes[0].Key)
			failsWithTheTimeout("load", err, ctx)
			require.NoError(t, holder.Commit(bg))

			for _, c := range changes {
				r, err := s.Load(bg, c.Key)
				require.NoError(t, err)
				assert.Equal(t, int64(1), r.Version, "%s: the saves that timed out are not stored", c.Key)
			}
			vs, err := s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
			require.NoError(t, err, "the next save")
			assert.Equal(t, []int64{2, 2}, vs)
		})
	}
}
