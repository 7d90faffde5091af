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

// SPEC S3, S5: the database dropped and created again (empty) under an
// open store: the store's connections are ended with it, and its next
// calls fail within their deadline with an error that says Braid's
// tables are not there, matching neither persistence.ErrNotFound (a load
// would tell a session that is gone from a new one) nor
// persistence.ErrOutcomeUnknown; nothing is created in the new database.
// Once a New (another process, an operator) creates the tables again,
// the open store works on them without being reopened.
func TestStore_DatabaseDroppedAndCreatedAgainUnderTheStore(t *testing.T) {
	dsn := newDatabase(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	s, err := postgres.New(bg, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	k := agentKey("dropped-"+uuid.NewString(), "a")
	change := persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 1)}
	batch := []persistence.Change{change, {Key: agentKey(k.SessionID, "b"), Data: json.RawMessage(`{"n":1}`)}}
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, change)
	require.NoError(t, err)

	admin, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(bg) })
	_, err = admin.Exec(bg, `DROP DATABASE `+name+` WITH (FORCE)`)
	require.NoError(t, err)
	_, err = admin.Exec(bg, `CREATE DATABASE `+name+` OWNER `+name+`_r`)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	for what, call := range map[string]func() error{
		"load":       func() error { _, err := s.Load(ctx, k); return err },
		"session":    func() error { _, err := s.Session(ctx, k.SessionID); return err },
		"sessions":   func() error { _, err := s.Sessions(ctx); return err },
		"save":       func() error { _, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, change); return err },
		"batch save": func() error { _, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, batch...); return err },
		"delete":     func() error { return s.Delete(ctx, k) },
	} {
		err := call()
		require.Error(t, err, what)
		assert.NoError(t, ctx.Err(), "%s: fails at once", what)
		assert.Contains(t, err.Error(), "Braid's tables", what)
		assert.NotErrorIs(t, err, persistence.ErrNotFound, what)
		assert.NotErrorIs(t, err, persistence.ErrOutcomeUnknown, what)
	}
	assert.Zero(t, braidTables(t, dsn), "the store created nothing in the new database")

	other, err := postgres.New(bg, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	require.NoError(t, other.Close())
	_, err = s.Load(bg, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound, "the session went with the database")
	vs, err := s.Save(bg, persistence.SaveOptions{Durable: true}, change)
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, vs)
}
