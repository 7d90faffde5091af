package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// braidTables counts Braid's tables in the database dsn names.
func braidTables(t *testing.T, dsn string) int {
	t.Helper()
	c, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer c.Close(bg)
	var n int
	require.NoError(t, c.QueryRow(bg, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'braid%'`).Scan(&n))
	return n
}

// SPEC S3: a store opened with Config.Existing, on a database without
// Braid's tables, fails to open with an error matching
// persistence.ErrNotFound and creates nothing; where the tables are there,
// it writes as any store.
func TestNew_ExistingCreatesNoTablesAndWritesToThoseThere(t *testing.T) {
	fresh := persistencetest.PostgresDatabase(t, persistencetest.PostgresDSN(t))
	s, err := postgres.New(bg, postgres.Config{DSN: fresh, Existing: true})
	if s != nil {
		_ = s.Close()
	}
	require.ErrorIs(t, err, persistence.ErrNotFound)
	assert.Zero(t, braidTables(t, fresh), "New with Existing created tables")

	created, err := postgres.New(bg, postgres.Config{DSN: fresh})
	require.NoError(t, err)
	require.NoError(t, created.Close())
	s, err = postgres.New(bg, postgres.Config{DSN: fresh, Existing: true})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "existing-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	n, err := s.DeleteSession(bg, k.SessionID)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
