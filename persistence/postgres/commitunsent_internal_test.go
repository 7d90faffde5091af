package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// commitBreaker is a connection whose first write of a COMMIT, once
// armed, fails with nothing of it written, the connection closed: the
// network broke just before the commit went out.
type commitBreaker struct {
	net.Conn
	armed *atomic.Bool
	hit   *atomic.Int32
}

var commitQuery = append([]byte("commit"), 0)

func (c *commitBreaker) Write(b []byte) (int, error) {
	if len(b) > 5 && b[0] == 'Q' && bytes.Equal(b[5:], commitQuery) && c.armed.CompareAndSwap(true, false) {
		c.hit.Add(1)
		_ = c.Conn.Close()
		return 0, errors.New("connection reset before the commit was written")
	}
	return c.Conn.Write(b)
}

// SPEC S3, S4: a general-path save whose connection breaks before
// anything of its commit was written (pgx says so: nothing sent) cannot
// have committed (the server rolls the transaction back when the
// connection ends), so it runs again on another connection and succeeds,
// stored once, instead of failing.
func TestWrite_RunsAgainWhenItsCommitWasNotSent(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn, MaxConns: 2})
	require.NoError(t, err)
	defer s.Close()

	var armed atomic.Bool
	var hit atomic.Int32
	pc, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	pc.MaxConns = 2
	dial := pc.ConnConfig.DialFunc
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &commitBreaker{Conn: c, armed: &armed, hit: &hit}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	require.NoError(t, err)
	orig := s.pool
	s.pool = pool // Close closes it
	orig.Close()

	session := "commit-unsent-" + uuid.NewString()
	changes := []persistence.Change{
		{Key: persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{"n":1}`),
			Messages: []json.RawMessage{json.RawMessage(`{"m":0}`)}},
		{Key: persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: "b"}, Data: json.RawMessage(`{"n":1}`)},
	}
	armed.Store(true)
	vs, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, changes...)
	require.Equal(t, int32(1), hit.Load(), "the commit's write broke")
	require.NoError(t, err, "the save runs again: nothing of its commit was sent")
	assert.Equal(t, []int64{1, 1}, vs)
	for _, c := range changes {
		r, err := s.Load(ctx, c.Key)
		require.NoError(t, err)
		assert.Equal(t, int64(1), r.Version, "%s: stored once", c.Key)
		assert.Len(t, r.Messages, len(c.Messages), "%s: each message once", c.Key)
	}
}
