package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

// usePool stores records "0" to pooled-1 of session through s, at version
// 1 with one message each, by durable saves that wait together for the session's
// lock (held by the test on dsn's server), so that the pool holds pooled
// connections, all just used.
func usePool(t *testing.T, s *postgres.Store, dsn, session string) {
	t.Helper()
	usePoolAt(t, s, dsn, session, 0)
}

// usePoolAt is usePool for records "0" to pooled-1 at version base (with
// base messages), which it brings to version base+1 with one message more:
// each of the pooled connections runs the save of that kind (a creation
// for base 0, an append after), and keeps its statements prepared.
func usePoolAt(t *testing.T, s *postgres.Store, dsn, session string, base int64) {
	t.Helper()
	watch, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer watch.Close(bg)
	holder, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer holder.Close(bg)
	tx, err := holder.Begin(bg)
	require.NoError(t, err)
	_, err = tx.Exec(bg, `SELECT pg_advisory_xact_lock(1651663209, hashtext($1))`, session)
	require.NoError(t, err)
	done := make(chan error, pooled)
	for i := range pooled {
		go func() {
			_, err := s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: agentKey(session, fmt.Sprint(i)),
				Base: base, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, base+1)), From: int(base), Messages: msgs(int(base), 1)})
			done <- err
		}()
	}
	for sessionLockWaiters(t, watch, session) < pooled {
	}
	require.NoError(t, tx.Commit(bg))
	for range pooled {
		require.NoError(t, <-done)
	}
}

// SPEC S3, S4, R5: a server restarted under an open store, by a fast
// shutdown (each session is told it ends) or an immediate one (every
// process quits, as in a crash; the server recovers when it starts), does
// not need the store reopened. While it is down, a call fails within its
// context's deadline. Once it is up, every pooled connection is dead, and
// the calls go on on new ones: a read always succeeds; a save sent on a
// dead connection may fail, with persistence.ErrOutcomeUnknown (after an
// immediate shutdown the server's word that it ended the session never
// comes), but only the first: the store then drops every connection the
// server had, and the later saves succeed. A save is stored whole or not
// at all, and the next save, based on what a load finds, succeeds.
func TestStore_ServesAgainAfterTheServerRestarts(t *testing.T) {
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			srv := newPrivateServer(t)
			s, err := postgres.New(bg, postgres.Config{DSN: srv.dsn, MaxConns: pooled})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			session := "restart-" + uuid.NewString()

			// Down: calls fail, within their deadline.
			usePool(t, s, srv.dsn, session)
			srv.stop(mode)
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			_, err = s.Load(ctx, agentKey(session, "0"))
			require.Error(t, err)
			_, err = s.Save(ctx, persistence.SaveOptions{Durable: true}, persistence.Change{Key: agentKey(session, "0"), Base: 1,
				Data: json.RawMessage(`{"n":2}`), From: 1, Messages: msgs(1, 1)})
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "the calls fail at once on a server that is down")
			srv.start()
			assert.Equal(t, int64(1), requireWhole(t, s, agentKey(session, "0")), "a save while the server was down is not stored")

			// Restarted under pooled connections just used.
			session = "restart-" + uuid.NewString()
			usePool(t, s, srv.dsn, session)
			srv.stop(mode)
			srv.start()
			failed := 0
			for i := range pooled {
				k := agentKey(session, fmt.Sprint(i))
				_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1,
					Data: json.RawMessage(`{"n":2}`), From: 1, Messages: msgs(1, 1)})
				if err != nil {
					failed++
					assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown, "%s: a save that fails after the restart was sent on a dead connection", k)
				}
				v := requireWhole(t, s, k)
				if err == nil {
					assert.Equal(t, int64(2), v, "%s: the save succeeded", k)
				}
				// The next save, based on the stored version, succeeds.
				_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: v,
					Data: json.RawMessage(`{"n":3}`), From: int(v), Messages: msgs(int(v), 1)})
				require.NoError(t, err, "%s: the save after", k)
			}
			assert.LessOrEqual(t, failed, 1, "saves that failed after the restart")
			if mode == "fast" {
				assert.Zero(t, failed, "the server said it ended each session: no save is cut off")
			}
		})
	}
}
