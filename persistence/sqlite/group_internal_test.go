package sqlite

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// SPEC S4: saves committed in one group are each in a savepoint: a stale
// save is rolled back alone, the others of its group commit, and a save
// whose caller gave up before the group started is not run.
func TestGroup_StaleSaveRollsBackAlone(t *testing.T) {
	ctx := context.Background()
	s, w, err := open(ctx, Config{Dir: t.TempDir()}) // the test holds the writer
	require.NoError(t, err)
	defer func() {
		s.token <- w // gives it back, for Close
		s.Close()
	}()
	save := func(c persistence.Change) error {
		_, err := sqlstore.Apply(ctx, querier{s: s, db: w.conn, stmts: w.stmts}, time.Now(), []persistence.Change{c})
		return err
	}
	k := func(id string) persistence.Key {
		return persistence.Key{SessionID: "group", Kind: persistence.KindAgent, ID: id}
	}
	require.NoError(t, save(persistence.Change{Key: k("a"), Data: json.RawMessage(`{"v":1}`)}))

	gone, cancel := context.WithCancel(ctx)
	cancel()
	saves := []struct {
		ctx    context.Context
		change persistence.Change
	}{
		{ctx, persistence.Change{Key: k("a"), Base: 1, Data: json.RawMessage(`{"v":2}`)}},
		{ctx, persistence.Change{Key: k("a"), Base: 1, Data: json.RawMessage(`{"v":"stale"}`)}},
		{ctx, persistence.Change{Key: k("b"), Data: json.RawMessage(`{"v":1}`)}},
		{gone, persistence.Change{Key: k("c"), Data: json.RawMessage(`{"v":1}`)}},
		{ctx, persistence.Change{Key: k("a"), Base: 2, Data: json.RawMessage(`{"v":3}`)}},
	}
	var group []*request
	for _, sv := range saves {
		c := sv.change
		group = append(group, &request{ctx: sv.ctx, durable: c.Key.ID == "b", reply: make(chan error, 1),
			apply: func(ctx context.Context, q sqlstore.Querier) error {
				_, err := sqlstore.Apply(ctx, q, time.Now(), []persistence.Change{c})
				return err
			}})
	}
	s.commit(w, group)

	assert.NoError(t, <-group[0].reply)
	assert.ErrorIs(t, <-group[1].reply, persistence.ErrConflict)
	assert.NoError(t, <-group[2].reply)
	assert.ErrorIs(t, <-group[3].reply, context.Canceled)
	assert.NoError(t, <-group[4].reply)
	r, err := s.Load(ctx, k("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Version)
	assert.Equal(t, `{"v":3}`, string(r.Data))
	_, err = s.Load(ctx, k("b"))
	assert.NoError(t, err)
	_, err = s.Load(ctx, k("c"))
	assert.ErrorIs(t, err, persistence.ErrNotFound)
}
