package postgres_test

import (
	"encoding/json"
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

// withSetting returns dsn with a server setting for its sessions, in the
// DSN's own form (URL or key=value).
func withSetting(dsn, name, value string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " " + name + "='" + value + "'"
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + name + "=" + strings.ReplaceAll(value, " ", "%20")
}

// SPEC S4: a save that waited for its session's lock while another writer
// changed the record fails with a *ConflictError naming the stored
// version, whatever the default isolation level the DSN gives (an
// operator may set default_transaction_isolation for the database), not
// with the server's serialization failure.
func TestSave_StaleSaveConflictsUnderAnyDefaultIsolation(t *testing.T) {
	base := persistencetest.PostgresDSN(t)
	watch, err := pgx.Connect(bg, base)
	require.NoError(t, err)
	defer watch.Close(bg)
	for _, iso := range []string{"repeatable read", "serializable"} {
		s, err := postgres.New(bg, postgres.Config{DSN: withSetting(base, "default_transaction_isolation", iso)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		for name, ids := range map[string][]string{"append": {"a"}, "batch": {"a", "b"}} {
			t.Run(iso+"/"+name, func(t *testing.T) {
				session := "iso-" + uuid.NewString()
				var changes []persistence.Change
				for _, id := range ids {
					k := persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: id}
					_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`)})
					require.NoError(t, err)
					changes = append(changes, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":1}`)})
				}
				// Another writer holds the lock; the save starts, waits for
				// it, and the other writer moves record a on before it lets go.
				other := holdSessionLock(t, session)
				done := make(chan error, 1)
				go func() {
					_, err := s.Save(bg, persistence.SaveOptions{}, changes...)
					done <- err
				}()
				awaitSessionLockWaiter(t, watch, session)
				_, err := other.Exec(bg, `UPDATE braid_records SET version = 2 WHERE session_id = $1 AND id = 'a'`, session)
				require.NoError(t, err)
				require.NoError(t, other.Commit(bg))

				err = <-done
				var ce *persistence.ConflictError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, int64(2), ce.Actual)
				for _, c := range changes {
					r, err := s.Load(bg, c.Key)
					require.NoError(t, err)
					assert.JSONEq(t, `{}`, string(r.Data), "%s: the stale save wrote", c.Key)
				}
			})
		}
	}
}
