package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/persistence"
)

// SPEC S3: a call whose connection keeps dying is tried once more than
// the pool holds connections (enough to meet every connection a restart
// ended, and one new one), then fails with its last error; a call whose
// context ended, or whose error may follow a commit, is not tried again.
func TestRetry_TriesOnceMoreThanThePoolHoldsConnectionsAndNoMore(t *testing.T) {
	s := &Store{maxConns: 3}
	dead := errors.New("connection ended")
	tries := 0
	err := s.retry(context.Background(), func() (bool, error) { tries++; return true, fmt.Errorf("try %d: %w", tries, dead) })
	assert.ErrorIs(t, err, dead)
	assert.Equal(t, 4, tries)
	assert.EqualError(t, err, "try 4: connection ended")

	tries = 0
	err = s.retry(context.Background(), func() (bool, error) {
		tries++
		if tries < 3 {
			return true, dead
		}
		return false, nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 3, tries, "the first try that succeeds ends it")

	tries = 0
	maybeCommitted := errors.New("commit reply lost")
	err = s.retry(context.Background(), func() (bool, error) { tries++; return false, maybeCommitted })
	assert.ErrorIs(t, err, maybeCommitted)
	assert.Equal(t, 1, tries)

	ctx, cancel := context.WithCancel(context.Background())
	tries = 0
	err = s.retry(ctx, func() (bool, error) { tries++; cancel(); return true, dead })
	assert.ErrorIs(t, err, dead)
	assert.Equal(t, 1, tries, "a call whose context ended is not tried again")

	s.closed.Store(true)
	tries = 0
	_ = s.retry(context.Background(), func() (bool, error) { tries++; return true, dead })
	assert.Equal(t, 1, tries, "a closed store tries nothing again")
}

// SPEC S3, S4: only the server's FATAL word that it ended the session on
// its own (terminated, shut down, timed out) says that it did not commit;
// a pooler's FATAL, a PANIC, an ordinary error, a failed connect and a
// broken socket do not.
func TestEnded_OnlyTheServersWordThatItEndedTheSession(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("save: %w", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}), true},
		{&pgconn.PgError{Severity: "FATAL", Code: "25P03"}, true}, // an old server: no unlocalized severity
		{&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P05"}, true},
		{&pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "the server link broke"}, false}, // a pooler's
		{&pgconn.PgError{Severity: "PANIK", SeverityUnlocalized: "PANIC", Code: "XX000"}, false},
		{&pgconn.PgError{Severity: "PANIC", SeverityUnlocalized: "PANIC", Code: "58030"}, false},
		{&pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"}, false},
		{&pgconn.PgError{Severity: "FEHLER", SeverityUnlocalized: "ERROR", Code: "57014"}, false},
		{&pgconn.ConnectError{}, false},
		{errors.New("unexpected EOF"), false},
		{context.Canceled, false},
	} {
		assert.Equal(t, tc.want, ended(tc.err), "%v", tc.err)
	}
}

// SPEC S1: the one-round-trip append carries a change's data and all its
// messages in one statement, so a change longer than
// persistence.MaxValueSize in all takes the general path, whose
// statements stay within it.
func TestOneStatement_OnlyChangesWithinTheBoundTakeTheAppend(t *testing.T) {
	half := persistence.MaxValueSize / 2
	c := persistence.Change{Data: make(json.RawMessage, half), Messages: []json.RawMessage{make(json.RawMessage, half)}}
	assert.True(t, oneStatement(c))
	c.Messages = append(c.Messages, json.RawMessage(`{}`))
	assert.False(t, oneStatement(c))
}
