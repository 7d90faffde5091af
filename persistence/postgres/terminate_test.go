package postgres_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// storeNamed opens a store on the tests' server whose connections carry
// the application name app, so that the test finds their backends.
func storeNamed(t *testing.T, app string) *postgres.Store {
	t.Helper()
	u, err := url.Parse(persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err := postgres.New(bg, postgres.Config{DSN: u.String()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitingBackend returns the process id of the backend of application
// app that waits for a lock, once there is one other than not (0: any):
// each pass asks the server, so the wait is on its state, not on time.
func waitingBackend(t *testing.T, conn *pgx.Conn, app string, not int32) int32 {
	t.Helper()
	for {
		var pid int32
		err := conn.QueryRow(bg, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'
  AND pid <> $2`, app, not).Scan(&pid)
		if err == nil {
			return pid
		}
		require.ErrorIs(t, err, pgx.ErrNoRows)
	}
}

// SPEC S3, S4: an operator's pg_terminate_backend of the connection of a
// call under way (a save of one owner, a batch save, a load, each waiting
// for a lock another transaction holds, so the statement runs when the
// backend is ended) does not fail the call: the server's word that it
// ended the session came before anything of it could commit, so the call
// runs again on a new connection and succeeds once the lock is free, and
// the save is stored once.
func TestStore_CallWhoseBackendIsTerminatedMidwayRunsAgain(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	admin, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(bg) })
	holderConn, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holderConn.Close(bg) })

	for _, tc := range []struct {
		name string
		ids  []string // the records saved (and loaded)
		load bool     // a load, waiting behind a lock on the table
	}{
		{name: "save", ids: []string{"a"}},
		{name: "batch save", ids: []string{"a", "b"}},
		{name: "load", ids: []string{"a"}, load: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := "braid-term-" + uuid.NewString()[:8]
			s := storeNamed(t, app)
			session := "term-" + uuid.NewString()
			var changes []persistence.Change
			for _, id := range tc.ids {
				k := agentKey(session, id)
				_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 1)})
				require.NoError(t, err)
				changes = append(changes, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`), From: 1, Messages: msgs(1, 1)})
			}

			holder, err := holderConn.Begin(bg)
			require.NoError(t, err)
			if tc.load {
				_, err = holder.Exec(bg, `LOCK TABLE braid_records IN ACCESS EXCLUSIVE MODE`)
			} else {
				_, err = holder.Exec(bg, `SELECT pg_advisory_xact_lock(1651663209, hashtext($1))`, session)
			}
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				var err error
				if tc.load {
					var r *persistence.Record
					if r, err = s.Load(bg, changes[0].Key); err == nil && r.Version != 1 {
						err = assert.AnError
					}
				} else {
					_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
				}
				done <- err
			}()
			first := waitingBackend(t, admin, app, 0)
			var ended bool
			require.NoError(t, admin.QueryRow(bg, `SELECT pg_terminate_backend($1, 10000)`, first).Scan(&ended))
			require.True(t, ended)
			waitingBackend(t, admin, app, first) // the call, run again on a new connection
			require.NoError(t, holder.Commit(bg))
			require.NoError(t, <-done, "the call runs again and succeeds")

			for _, c := range changes {
				r, err := s.Load(bg, c.Key)
				require.NoError(t, err)
				want := int64(1)
				if !tc.load {
					want = 2
				}
				assert.Equal(t, want, r.Version, "%s: stored once", c.Key)
				assert.Equal(t, rawStrings(msgs(0, int(want))), rawStrings(r.Messages), "%s: each message once", c.Key)
			}
		})
	}
}
