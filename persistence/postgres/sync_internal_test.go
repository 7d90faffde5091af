package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence/internal/sqlstore"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC I9, S1: a durable save's transaction commits with
// synchronous_commit on and any other with it off, whatever the server's
// default, and the setting is that transaction's only.
func TestWrite_SetsSynchronousCommitForItsTransactionOnly(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn, MaxConns: 1}) // one connection: the SHOW after sees the same one
	require.NoError(t, err)
	defer s.Close()
	_, err = s.pool.Exec(ctx, `SET synchronous_commit = local`) // neither on nor off
	require.NoError(t, err)
	show := func(q sqlstore.Querier) (string, error) {
		rows, err := q.Query(ctx, `SHOW synchronous_commit`)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		var v string
		rows.Next()
		return v, rows.Scan(&v)
	}
	for durable, want := range map[bool]string{false: "off", true: "on"} {
		var got string
		require.NoError(t, s.write(ctx, durable, "sync-setting", func(q sqlstore.Querier) (err error) {
			got, err = show(q)
			return err
		}))
		assert.Equal(t, want, got, "durable %v", durable)
		after, err := show(querier{s, s.pool})
		require.NoError(t, err)
		assert.Equal(t, "local", after, "the setting outlived its transaction")
	}
}

// SPEC I9, S1: the one-round-trip save sends the lock and its statement as
// one pipeline: the synchronous_commit it sets holds for the statements
// after it in that implicit transaction, and not after it.
func TestAppend_PipelineSetsSynchronousCommitForItsTransactionOnly(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn, MaxConns: 1})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.pool.Exec(ctx, `SET synchronous_commit = local`)
	require.NoError(t, err)
	for durable, want := range map[bool]string{false: "off", true: "on"} {
		b := &pgx.Batch{}
		b.Queue(lockSQL, map[bool]string{false: "off", true: "on"}[durable], "pipeline")
		b.Queue(`SHOW synchronous_commit`)
		br := s.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		require.NoError(t, err)
		var got string
		require.NoError(t, br.QueryRow().Scan(&got))
		require.NoError(t, br.Close())
		assert.Equal(t, want, got, "durable %v", durable)
		var after string
		require.NoError(t, s.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&after))
		assert.Equal(t, "local", after, "the setting outlived its transaction")
	}
}
