package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// SPEC S3: when the server ends the pool's connections (a restart, an
// operator's pg_terminate_backend), the next calls run on new connections
// and succeed: a call that finds its connection ended before its
// transaction could commit runs again, so no caller sees a connection
// that was already gone, and every save is stored once. Every pooled
// connection is ended, and all were used just before, so the pool's own
// check of idle connections does not replace them first.
func TestStore_CallsSucceedOnNewConnectionsAfterTheServerEndsThePools(t *testing.T) {
	ops := map[string]func(t *testing.T, s *postgres.Store, k persistence.Key){
		"load": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			r, err := s.Load(bg, k)
			require.NoError(t, err)
			assert.Equal(t, int64(1), r.Version)
		},
		"session": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			rs, err := s.Session(bg, k.SessionID)
			require.NoError(t, err)
			assert.Len(t, rs, pooled)
		},
		"sessions": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			_, err := s.Sessions(bg)
			require.NoError(t, err)
		},
		"create": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			// The create's statements are prepared on every pooled
			// connection (storeWithPooledConnections created records), so
			// its pipeline is sent whole and the FATAL comes in place of
			// its results.
			k.ID = "new"
			vs, err := s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`),
				Messages: []json.RawMessage{json.RawMessage(`{"m":1}`)}})
			require.NoError(t, err)
			assert.Equal(t, []int64{1}, vs)
			r, err := s.Load(bg, k)
			require.NoError(t, err)
			assert.Equal(t, int64(1), r.Version)
			assert.Len(t, r.Messages, 1)
		},
		"append": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			// Its statements are not prepared yet: the FATAL comes while
			// they are.
			appendOnce(t, s, k, false)
		},
		"durable append": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			appendOnce(t, s, k, true)
		},
		"batch": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			other := k
			other.ID = "new"
			vs, err := s.Save(bg, persistence.SaveOptions{Durable: true},
				persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`)},
				persistence.Change{Key: other, Data: json.RawMessage(`{"n":1}`)})
			require.NoError(t, err)
			assert.Equal(t, []int64{2, 1}, vs)
		},
		"sync": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			require.NoError(t, s.Sync(bg))
		},
		"delete": func(t *testing.T, s *postgres.Store, k persistence.Key) {
			require.NoError(t, s.Delete(bg, k))
			_, err := s.Load(bg, k)
			assert.ErrorIs(t, err, persistence.ErrNotFound)
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			s, app, session := storeWithPooledConnections(t)
			endConnections(t, app)
			op(t, s, persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: "0"})
		})
	}
}

// pooled is how many connections storeWithPooledConnections opens.
const pooled = 3

// storeWithPooledConnections opens a store whose pool holds pooled
// connections, all just used: that many saves, one record each in a new
// session, wait together for the session's lock (held by the test), so
// each holds a connection of its own. It returns the store, the
// application name its connections carry, and the session.
func storeWithPooledConnections(t *testing.T) (*postgres.Store, string, string) {
	t.Helper()
	app := "braid-ended-" + uuid.NewString()[:8]
	u, err := url.Parse(persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err := postgres.New(bg, postgres.Config{DSN: u.String(), MaxConns: pooled})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	watch, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	defer watch.Close(bg)
	session := "ended-" + uuid.NewString()
	holder := holdSessionLock(t, session)
	done := make(chan error, pooled)
	for i := range pooled {
		go func() {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{
				Key:  persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: fmt.Sprint(i)},
				Data: json.RawMessage(`{"n":1}`)})
			done <- err
		}()
	}
	for sessionLockWaiters(t, watch, session) < pooled {
	}
	require.NoError(t, holder.Commit(bg))
	for range pooled {
		require.NoError(t, <-done)
	}
	return s, app, session
}

// endConnections ends every connection of the application app, as a
// server restart does, and returns once they are gone.
func endConnections(t *testing.T, app string) {
	t.Helper()
	conn, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	defer conn.Close(bg)
	var ended int
	require.NoError(t, conn.QueryRow(bg, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))
  FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&ended))
	require.Equal(t, pooled, ended, "the store's pooled connections")
}

// appendOnce appends one message to k's record (version 1, no messages)
// and checks that it is stored once.
func appendOnce(t *testing.T, s *postgres.Store, k persistence.Key, durable bool) {
	t.Helper()
	vs, err := s.Save(context.Background(), persistence.SaveOptions{Durable: durable}, persistence.Change{
		Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`), Messages: []json.RawMessage{json.RawMessage(`{"m":1}`)}})
	require.NoError(t, err)
	assert.Equal(t, []int64{2}, vs)
	r, err := s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Version)
	assert.Len(t, r.Messages, 1)
}

// SPEC S3, S4: a save whose connection breaks, without a word from the
// server, before anything of it can have committed runs again on a new
// connection and is stored once: the break comes while the append's
// statements are prepared (a round trip before its pipeline is sent), or
// inside the general path's transaction before its commit is sent. (A
// break once the commit was sent is never run again: lostcommit_test.go.)
func TestSave_BrokenBeforeItCouldCommitRunsAgainAndIsStoredOnce(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	fresh := newStore(t) // on the server itself
	proxy := newCutProxy(t, dsn)
	s, err := postgres.New(bg, postgres.Config{DSN: proxy.dsn, MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	for _, tc := range []struct {
		name  string
		ids   []string // records at version 1 with one message; the save appends one to each
		reply func(reply) bool
	}{
		{name: "append path/prepare", ids: []string{"a"}, reply: func(r reply) bool { return len(r.tags) == 0 && r.status == 'I' }},
		{name: "transaction/begin", ids: []string{"a", "b"}, reply: func(r reply) bool { return len(r.tags) == 1 && r.tags[0] == "BEGIN" }},
		{name: "transaction/lock", ids: []string{"a", "b"}, reply: func(r reply) bool { return len(r.tags) == 1 && r.tags[0] == "SELECT 1" && r.status == 'T' }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := "broken-" + uuid.NewString()
			var changes []persistence.Change
			for _, id := range tc.ids {
				_, err := fresh.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: agentKey(session, id),
					Data: json.RawMessage(`{"n":0}`), Messages: msgs(0, 1)})
				require.NoError(t, err)
				changes = append(changes, persistence.Change{Key: agentKey(session, id), Base: 1, From: 1,
					Data: json.RawMessage(`{"n":1}`), Messages: msgs(1, 1)})
			}
			if len(changes) == 1 {
				// A new connection: the append's statements are not prepared on it.
				require.NoError(t, s.Close())
				s, err = postgres.New(bg, postgres.Config{DSN: proxy.dsn, MaxConns: 1})
				require.NoError(t, err)
			}
			cut := proxy.arm(0, tc.reply)
			versions, err := s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
			requireClosed(t, cut, "the proxy broke the connection")
			require.NoError(t, err)
			assert.Len(t, versions, len(changes))
			for _, c := range changes {
				r, err := fresh.Load(bg, c.Key)
				require.NoError(t, err)
				assert.Equal(t, int64(2), r.Version, "%s: committed once", c.Key)
				assert.Equal(t, rawStrings(msgs(0, 2)), rawStrings(r.Messages), "%s: each message once", c.Key)
			}
		})
	}
}
