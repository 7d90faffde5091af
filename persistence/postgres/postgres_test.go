package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// DSN returns the test server's DSN from BRAID_TEST_POSTGRES_DSN. Without
// it the test is skipped, except under CI=true, where it fails: CI must
// run these (.ci/run starts a server).
func DSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("BRAID_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BRAID_TEST_POSTGRES_DSN is not set under CI=true: .ci/run must start PostgreSQL (scripts/with-postgres.sh)")
		}
		t.Skip("BRAID_TEST_POSTGRES_DSN not set; run under scripts/with-postgres.sh to include PostgreSQL")
	}
	return dsn
}

func newStore(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.New(context.Background(), postgres.Config{DSN: DSN(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// SPEC S3, S4: the postgres store passes the same suite as the others.
func TestPostgresStore_Conformance(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T) persistence.Store { return newStore(t) })
}

func TestPostgresStore_ConfigErrors(t *testing.T) {
	for _, cfg := range []postgres.Config{
		{},
		{DSN: "postgres://x@127.0.0.1:1/db", TablePrefix: "Bad-Prefix"},
	} {
		_, err := postgres.New(context.Background(), cfg)
		assert.Error(t, err)
	}
}

// Two stores (as two processes would) racing to create the tables.
func TestPostgresStore_ConcurrentStart(t *testing.T) {
	dsn := DSN(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := postgres.New(context.Background(), postgres.Config{DSN: dsn, TablePrefix: "braid_start_"})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		assert.NoError(t, <-errs)
	}
}

// SPEC S1, I9: at a durable point with nothing new to save the session
// manager calls Checkpoint; it leaves the record as it was.
func TestPostgresStore_CheckpointKeepsTheRecord(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "checkpoint", Kind: persistence.KindAgent, ID: "a"}
	_ = s.Delete(ctx, k)
	v, err := s.Save(ctx, &persistence.Record{Key: k, SchemaVersion: persistence.SchemaVersion, Data: []byte(`{"n":1}`),
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[]}`)}}, persistence.SaveOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint(ctx, k, true))
	require.NoError(t, s.Checkpoint(ctx, k, false))
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	assert.JSONEq(t, `{"n":1}`, string(r.Data))
	assert.Len(t, r.Messages, 1)
	var _ persistence.Checkpointer = s
}
