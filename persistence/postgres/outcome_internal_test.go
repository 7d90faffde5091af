package postgres

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
)

// unsent is an error pgx marks as met before anything was sent.
type unsent struct{}

func (unsent) Error() string     { return "not sent" }
func (unsent) SafeToRetry() bool { return true }

// closedConn is pgx's "conn closed", which it marks as met before anything
// was sent though it gives it too on a second read of a connection that
// broke while it read a reply.
type closedConn struct{}

func (closedConn) Error() string     { return pgconn.ErrConnClosed.Error() }
func (closedConn) SafeToRetry() bool { return true }
func (closedConn) Unwrap() error     { return pgconn.ErrConnClosed }

// SPEC S4: a write's error, once its request was sent, leaves the outcome
// unknown (persistence.ErrOutcomeUnknown) unless the server answered that
// it failed or pgx says nothing was sent.
func TestOutcomeUnknown_OnlyWhenNoAnswerAndPerhapsSent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"broken connection", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"pgx: not sent", fmt.Errorf("write: %w", unsent{}), false},
		{"pgx: conn closed, after a broken read", fmt.Errorf("commit: %w", closedConn{}), true},
		{"the server's error", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "57014"}, false},
		{"a lock timeout", &pgconn.PgError{Severity: "ERROR", Code: "55P03"}, false},
		{"a pooler's FATAL", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08P01"}, true},
		{"a PANIC", &pgconn.PgError{Severity: "PANIC", Code: "58030"}, true},
		{"a timeout", errors.Join(io.EOF, errors.New("i/o timeout")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.unknown, outcomeUnknown(tc.err))
		})
	}
}
