package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/persistence"
)

// SPEC S4, R5: a save that fails (here a conflict) returns within its
// context's deadline and the cancel grace, even when the server stops
// answering as the store rolls its transaction back: the rollback is
// bounded, it does not wait for ever.
func TestSave_FailingReturnsByItsDeadlineWhenTheServerStopsAnsweringTheRollback(t *testing.T) {
	p := newSilentProxy(t)
	s, k := storeBehind(t, p, 2)
	defer closeWithin(t, s, frozenTimeout+frozenBound)
	// A second change makes it take the general path, whose transaction
	// is rolled back once the version check fails.
	k2 := persistence.Key{SessionID: k.SessionID, Kind: persistence.KindAgent, ID: "b"}
	p.freezeAt("rollback")
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	saved := make(chan error, 1)
	go func() {
		_, err := s.Save(ctx, persistence.SaveOptions{},
			persistence.Change{Key: k, Data: json.RawMessage(`{"n":2}`)},
			persistence.Change{Key: k2, Data: json.RawMessage(`{"n":1}`)})
		saved <- err
	}()
	select {
	case err := <-saved:
		var ce *persistence.ConflictError
		assert.ErrorAs(t, err, &ce)
	case <-time.After(time.Second + 5*time.Second + frozenBound):
		t.Fatal("a failed save still waits for its rollback on a server that stopped answering, long past its deadline")
	}
}
