package main

import (
	"bytes"
	"context"
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

// SPEC S3: `braid session list`, show and export only read, so they
// work with a DSN whose transactions are read-only (an operator's
// read-only role) and on a hot standby of the server (streaming
// replication), as they do on a SQLite store opened read-only; delete,
// which writes, is refused, saying the server is read-only.
func TestSession_ReadingCommandsWorkOnAServerThatTakesNoWrites(t *testing.T) {
	ctx := context.Background()
	dsn := persistencetest.PostgresDSN(t)
	st, err := postgres.New(ctx, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	id := "ro-" + uuid.NewString()
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key: persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	persistencetest.PostgresStandbyCaughtUp(t)
	for _, ro := range []string{u.String(), persistencetest.PostgresStandbyDSN(t)} {
		for _, args := range [][]string{{"session", "list", "-postgres", ro}, {"session", "show", "-postgres", ro, id},
			{"session", "export", "-postgres", ro, id}} {
			var so, se bytes.Buffer
			require.Equal(t, 0, run(ctx, args, nil, &so, &se), "%v: %s", args[:2], se.String())
			assert.Contains(t, so.String(), id, "%v", args[:2])
		}
		var so, se bytes.Buffer
		assert.Equal(t, 1, run(ctx, []string{"session", "delete", "-postgres", ro, id}, nil, &so, &se))
		assert.Contains(t, se.String(), "read-only")
	}
}

// SPEC S3: the reading commands and delete create nothing in a
// PostgreSQL database without Braid's tables: they fail saying there is
// no store there and what to give instead, as they do for a folder
// without one. Only import creates a store.
func TestSession_CommandsButImportOnADatabaseWithoutAStoreCreateNothingAndSayWhatToGive(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(persistencetest.PostgresDatabase(t, persistencetest.PostgresDSN(t)))
	require.NoError(t, err)
	for _, args := range [][]string{{"session", "list", "-postgres", u.String()}, {"session", "show", "-postgres", u.String(), "s1"},
		{"session", "export", "-postgres", u.String(), "s1"}, {"session", "delete", "-postgres", u.String(), "s1"}} {
		var so, se bytes.Buffer
		require.Equal(t, 1, run(ctx, args, nil, &so, &se), "%v", args[:2])
		assert.Contains(t, se.String(), "no store in the PostgreSQL database", "%v", args[:2])
		assert.Contains(t, se.String(), "give -postgres", "%v: says what to give", args[:2])
	}
	c, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	defer c.Close(ctx)
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'braid%'`).Scan(&n))
	assert.Zero(t, n, "no table was created")
}

// SPEC S3: delete creates no table even when Braid's tables vanish as it
// starts (an operator drops them, or another tool does): it reports that
// there is no store, as for a database that never had one.
func TestSession_DeleteCreatesNoTablesWhenTheyAreDroppedAsItOpens(t *testing.T) {
	ctx := context.Background()
	dsn := persistencetest.PostgresDatabase(t, persistencetest.PostgresDSN(t))
	st, err := postgres.New(ctx, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	c, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer c.Close(ctx)
	dropped := false
	testHookOpenForWrite = func() {
		_, err := c.Exec(ctx, `DROP TABLE braid_messages, braid_records, braid_meta`)
		require.NoError(t, err)
		dropped = true
	}
	t.Cleanup(func() { testHookOpenForWrite = nil })

	var so, se bytes.Buffer
	assert.Equal(t, 1, run(ctx, []string{"session", "delete", "-postgres", dsn, "s1"}, nil, &so, &se))
	require.True(t, dropped, "delete did not reach its open for writing")
	assert.Contains(t, se.String(), "no store in the PostgreSQL database")
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'braid%'`).Scan(&n))
	assert.Zero(t, n, "delete created tables")
}
