package postgres_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// SPEC S3, S4, R5: every connection of an open store cut at once (a
// server restarted within a second, or a proxy or load balancer that
// drops its connections), while its pool holds several just used, which
// the pool hands out unchecked (it pings only those idle for a second or
// more), fails one call at most: the save that met the break may fail
// with persistence.ErrOutcomeUnknown (it was sent, and no reply came),
// and is stored whole or not at all; the store then drops the pool's
// other connections, and the saves after it succeed on new ones, without
// the store reopened.
func TestStore_FailsOneCallAtMostAfterEveryConnectionIsCutAtOnce(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	p := newCutProxy(t, dsn)
	s, err := postgres.New(bg, postgres.Config{DSN: p.dsn, MaxConns: pooled})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	session := "cutall-" + uuid.NewString()
	usePoolAt(t, s, dsn, session, 0)
	// Each connection has the append prepared, so a save sends it at once.
	usePoolAt(t, s, dsn, session, 1)
	require.Equal(t, pooled, p.cutAll(), "the pool held pooled connections, all relayed")

	var failed []persistence.Key
	for i := range pooled {
		k := agentKey(session, fmt.Sprint(i))
		_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2,
			Data: json.RawMessage(`{"n":3}`), From: 2, Messages: msgs(2, 1)})
		if err != nil {
			failed = append(failed, k)
			assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown, "%s: a save that fails after the cut was sent on a cut connection", k)
		}
	}
	assert.LessOrEqual(t, len(failed), 1, "saves that failed after the cut: %v", failed)

	for i := range pooled {
		k := agentKey(session, fmt.Sprint(i))
		r, err := s.Load(bg, k)
		require.NoError(t, err)
		if slices.Contains(failed, k) {
			assert.Contains(t, []int64{2, 3}, r.Version, "%s: the save cut off is stored or not", k)
		} else {
			assert.Equal(t, int64(3), r.Version, "%s: the save succeeded", k)
		}
		assert.Equal(t, rawStrings(msgs(0, int(r.Version))), rawStrings(r.Messages), "%s: the record and its messages together", k)
	}
}
