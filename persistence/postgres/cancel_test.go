package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S4, R5: a save whose context ends while it waits for its
// session's lock (another writer holds it) fails with the context's
// error, and then nothing of it commits: the server stops waiting when the
// save returns, and the save does not land once the lock is free. Both
// paths: the one-round-trip append, and the transaction of a batch.
func TestSave_CancelledWhileWaitingForTheLockNeverCommits(t *testing.T) {
	s := newStore(t)
	watch, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	defer watch.Close(bg)
	for name, ids := range map[string][]string{"append": {"a"}, "batch": {"a", "b"}} {
		t.Run(name, func(t *testing.T) {
			session := "cancel-" + uuid.NewString()
			var changes []persistence.Change
			for _, id := range ids {
				changes = append(changes, persistence.Change{Key: persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: id},
					Data: json.RawMessage(`{"cancelled":true}`)})
			}
			holder := holdSessionLock(t, session)
			ctx, cancel := context.WithCancel(bg)
			done := make(chan error, 1)
			go func() {
				_, err := s.Save(ctx, persistence.SaveOptions{}, changes...)
				done <- err
			}()
			awaitSessionLockWaiter(t, watch, session)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			assert.Zero(t, sessionLockWaiters(t, watch, session), "the server still waits for the lock for the cancelled save")

			require.NoError(t, holder.Commit(bg))
			// Any waiter queued before this one has had the lock and ended.
			again := holdSessionLock(t, session)
			require.NoError(t, again.Commit(bg))
			for _, c := range changes {
				_, err := s.Load(bg, c.Key)
				assert.ErrorIs(t, err, persistence.ErrNotFound, "%s: the cancelled save committed after it returned", c.Key)
			}
		})
	}
}
