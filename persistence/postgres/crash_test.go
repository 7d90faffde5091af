package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

// requireWhole loads key and checks that it holds version 1 or 2 (one
// message more), never a mix, and returns the version.
func requireWhole(t *testing.T, s *postgres.Store, key persistence.Key) int64 {
	t.Helper()
	r, err := s.Load(bg, key)
	require.NoError(t, err)
	require.Contains(t, []int64{1, 2}, r.Version)
	assert.Equal(t, rawStrings(msgs(0, int(r.Version))), rawStrings(r.Messages), "%s: each message once, the record and its messages together", key)
	return r.Version
}

// SPEC S3, S5: the tables New creates survive a server crash right after
// it returned (an immediate shutdown, whose start recovers from the WAL):
// the store, not reopened, saves into them.
func TestNew_TablesSurviveAServerCrashRightAfterwards(t *testing.T) {
	srv := newPrivateServer(t)
	s, err := postgres.New(bg, postgres.Config{DSN: srv.dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	srv.stop("immediate")
	srv.start()
	k := agentKey("crash-"+uuid.NewString(), "a")
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 1)})
	require.NoError(t, err)
	assert.Equal(t, int64(1), requireWhole(t, s, k))
}
