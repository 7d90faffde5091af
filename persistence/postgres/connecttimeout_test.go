package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/postgres"
)

// SPEC S3: Config.ConnectTimeout bounds every connect of the store's
// pool, not only New's: a call, even one whose context never ends, that
// needs a new connection to a server that does not answer fails once
// the timeout has passed, rather than waiting as long as the network
// lets it.
func TestStore_ConnectTimeoutBoundsTheConnectsOfLaterCalls(t *testing.T) {
	p := newSilentProxy(t)
	// Two connections: the pool closes the cut one in the background,
	// which holds its place for a while (it asks the stalled server to
	// cancel what it ran), and the load's connect takes the other.
	s, err := postgres.New(bg, postgres.Config{DSN: p.dsn, MaxConns: 2, ConnectTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "stall-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)

	p.stall()
	done := make(chan error, 1)
	go func() {
		_, err := s.Load(bg, k)
		done <- err
	}()
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(30 * time.Second):
		p.resume()
		t.Fatal("a load that needs a new connection to a server that does not answer still waits, 100 times ConnectTimeout on")
	}
	// The server answers again: the store goes on (and its Close does
	// not wait on a stalled connection).
	p.resume()
	_, err = s.Load(bg, k)
	assert.NoError(t, err)
}
