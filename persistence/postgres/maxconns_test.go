package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

// SPEC S3, R5: other clients holding every connection the server takes
// (max_connections) do not hang an open store: a call that needs a new
// connection (the store's were ended) fails at once, within its
// context's deadline, with the server's refusal ("too many clients"),
// never as an unknown outcome (nothing was sent), and stores nothing;
// once a connection is free again, the next calls succeed without
// reopening the store.
func TestStore_ServerOutOfConnectionsFailsCallsAtOnceAndServesAgain(t *testing.T) {
	srv := newPrivateServer(t, "-c max_connections=6 -c superuser_reserved_connections=0")
	u, err := url.Parse(srv.dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", "braid-store")
	u.RawQuery = q.Encode()
	s, err := postgres.New(bg, postgres.Config{DSN: u.String(), MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	k := agentKey("full-"+uuid.NewString(), "a")
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 1)})
	require.NoError(t, err)

	// Other clients take every connection left, then end the store's and
	// take their slots too.
	var hogs []*pgx.Conn
	t.Cleanup(func() {
		for _, c := range hogs {
			_ = c.Close(bg)
		}
	})
	fill := func() {
		t.Helper()
		for {
			c, err := pgx.Connect(bg, srv.dsn)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "53300" {
				return
			}
			require.NoError(t, err)
			hogs = append(hogs, c)
		}
	}
	fill()
	var terminated int
	require.NoError(t, hogs[0].QueryRow(bg, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))
  FROM pg_stat_activity WHERE application_name = 'braid-store'`).Scan(&terminated))
	require.NotZero(t, terminated, "the store's connections")
	fill()
	var ended bool

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	change := persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`), From: 1, Messages: msgs(1, 1)}
	other := persistence.Change{Key: agentKey(k.SessionID, "b"), Data: json.RawMessage(`{}`)}
	for what, call := range map[string]func() error{
		"load":       func() error { _, err := s.Load(ctx, k); return err },
		"save":       func() error { _, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, change); return err },
		"batch save": func() error { _, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, change, other); return err },
	} {
		err := call()
		require.Error(t, err, what)
		assert.NoError(t, ctx.Err(), "%s: fails at once", what)
		assert.Contains(t, err.Error(), "too many clients", what)
		assert.Contains(t, err.Error(), "postgres store", what)
		assert.NotErrorIs(t, err, persistence.ErrOutcomeUnknown, what)
	}

	// A connection's slot is free once its backend has ended, which the
	// server reports to a terminate that waits for it.
	last := hogs[len(hogs)-1]
	require.NoError(t, hogs[0].QueryRow(bg, `SELECT pg_terminate_backend($1, 10000)`, last.PgConn().PID()).Scan(&ended))
	require.True(t, ended)
	hogs = hogs[:len(hogs)-1]
	_ = last.Close(bg)
	r, err := s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Version, "the saves refused are not stored")
	vs, err := s.Save(bg, persistence.SaveOptions{Durable: true}, change)
	require.NoError(t, err)
	assert.Equal(t, []int64{2}, vs)
}
