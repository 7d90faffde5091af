package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
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

// SPEC S4: after a commit whose reply was lost, the store asks the server
// whether the transaction committed, and the answer is final: it waits
// for the session's lock, which the transaction holds to its end, and
// says it cannot tell if the lock stays taken (the transaction's
// connection may still be open on the server's side).
func TestOutcome_TellsCommittedFromRolledBackOnceTheTransactionEnded(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn})
	require.NoError(t, err)
	defer s.Close()
	s.lockWait = "100ms"
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	session := "outcome-" + uuid.NewString()
	begin := func() (pgx.Tx, string, string) {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		var xid, run string
		require.NoError(t, tx.QueryRow(ctx, s.lockXid, "on", session).Scan(nil, nil, &xid, &run))
		return tx, xid, run
	}

	tx, xid, run := begin()
	committed, known := s.outcome(ctx, session, xid, run)
	assert.False(t, known, "the transaction holds the lock: it may still commit")
	assert.False(t, committed)
	require.NoError(t, tx.Commit(ctx))
	committed, known = s.outcome(ctx, session, xid, run)
	assert.True(t, known)
	assert.True(t, committed)

	tx, xid, run = begin()
	require.NoError(t, tx.Rollback(ctx))
	committed, known = s.outcome(ctx, session, xid, run)
	assert.True(t, known)
	assert.False(t, committed, "rolled back")
}

// SPEC S3: a server older than PostgreSQL 13 is refused with an error that
// says which version is needed and which the server is.
func TestCheckServerVersion_RefusesServersOlderThan13(t *testing.T) {
	assert.EqualError(t, checkServerVersion(120017, "12.17 (Debian 12.17-1)"),
		"postgres store: PostgreSQL 13 or later is needed; the server is 12.17 (Debian 12.17-1)")
	assert.EqualError(t, checkServerVersion(90624, "9.6.24"), "postgres store: PostgreSQL 13 or later is needed; the server is 9.6.24")
	assert.NoError(t, checkServerVersion(130000, "13.0"))
	assert.NoError(t, checkServerVersion(150018, "15.18"))
}
