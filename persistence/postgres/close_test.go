package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

// frozenTimeout is the ConnectTimeout of the stores on a frozen server:
// Close gives up on the server after it.
const frozenTimeout = 300 * time.Millisecond

// frozenBound is how long past its bound a call on a frozen server may
// take before the test calls it stuck: far below pgx's own 15 s waits.
const frozenBound = 4 * time.Second

// storeBehind opens a store through p, with one saved record under key.
func storeBehind(t *testing.T, p *silentProxy, maxConns int32) (*postgres.Store, persistence.Key) {
	t.Helper()
	s, err := postgres.New(bg, postgres.Config{DSN: p.dsn, MaxConns: maxConns, ConnectTimeout: frozenTimeout})
	require.NoError(t, err)
	k := persistence.Key{SessionID: "frozen-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	return s, k
}

// closeWithin closes s and fails the test if Close takes longer than d.
func closeWithin(t *testing.T, s *postgres.Store, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		assert.NoError(t, err)
		t.Logf("Close took %v", time.Since(start))
	case <-time.After(d):
		t.Fatalf("Close on a server that stopped answering still waits after %v (ConnectTimeout %v)", d, frozenTimeout)
	}
}

// SPEC S3: Close is bounded by Config.ConnectTimeout on a server that
// stopped answering: it does not wait for the cancel request that a call
// whose context ended left on its way to that server.
func TestClose_IsBoundedWhenACancelledCallLeftTheServerUnanswering(t *testing.T) {
	p := newSilentProxy(t)
	s, k := storeBehind(t, p, 2)
	p.freeze()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, err := s.Load(ctx, k)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	closeWithin(t, s, frozenTimeout+frozenBound)
}

// SPEC S3, R5: Close is bounded by Config.ConnectTimeout even while a
// call whose context never ends waits for a server that stopped
// answering: Close cuts it off, and the call fails with
// persistence.ErrClosed.
func TestClose_CutsOffACallWaitingForAServerThatStoppedAnswering(t *testing.T) {
	p := newSilentProxy(t)
	s, k := storeBehind(t, p, 2)
	p.freeze()
	loaded := make(chan error, 1)
	go func() {
		_, err := s.Load(bg, k)
		loaded <- err
	}()
	<-p.held // the load's statement waits at the frozen server
	closeWithin(t, s, frozenTimeout+frozenBound)
	select {
	case err := <-loaded:
		assert.ErrorIs(t, err, persistence.ErrClosed)
	case <-time.After(frozenBound):
		t.Fatal("the load still waits after Close returned")
	}
}
