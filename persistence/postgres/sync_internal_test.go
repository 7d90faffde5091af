package postgres

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// SPEC I9, S1: a durable save commits with synchronous_commit on and any
// other with it off, whatever the server's default, and the setting is the
// save's transaction's only. The test runs the save's own batch with a SHOW
// after its statements, in the same implicit transaction, on one
// connection, and a SHOW after it on the same connection.
func TestSaveBatch_SetsSynchronousCommitForItsTransactionOnly(t *testing.T) {
	dsn := os.Getenv("BRAID_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BRAID_TEST_POSTGRES_DSN is not set under CI=true")
		}
		t.Skip("BRAID_TEST_POSTGRES_DSN not set")
	}
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn, MaxConns: 1})
	require.NoError(t, err)
	defer s.Close()
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SET synchronous_commit = local`) // neither on nor off
	require.NoError(t, err)

	k := persistence.Key{SessionID: "sync-" + time.Now().Format("150405.000000000"), Kind: persistence.KindAgent, ID: "a"}
	base := int64(0)
	for _, tc := range []struct {
		opts persistence.SaveOptions
		want string
	}{
		{persistence.SaveOptions{}, "off"},
		{persistence.SaveOptions{Durable: true}, "on"},
		{persistence.SaveOptions{Durable: true, NoSync: true}, "off"},
	} {
		tc.opts.Base = base
		rec := &persistence.Record{Key: k, SchemaVersion: persistence.SchemaVersion, Data: json.RawMessage(`{}`),
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[]}`)}}
		batch := s.saveBatch(rec, tc.opts, time.Now().UTC())
		batch.Queue(`SHOW synchronous_commit`)
		res := conn.SendBatch(ctx, batch)
		_, err := res.Exec()
		require.NoError(t, err)
		var written int64
		require.NoError(t, res.QueryRow().Scan(&written))
		assert.EqualValues(t, 1, written)
		var got string
		require.NoError(t, res.QueryRow().Scan(&got))
		require.NoError(t, res.Close())
		assert.Equal(t, tc.want, got, "%+v", tc.opts)

		require.NoError(t, conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got))
		assert.Equal(t, "local", got, "the setting outlived the save's transaction")
		base++
	}
	conn.Release()
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, base, r.Version)
}
