package sqlstore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// failingRows is a result whose reading fails with err after no row.
type failingRows struct{ err error }

func (r failingRows) Next() bool        { return false }
func (r failingRows) Scan(...any) error { return r.err }
func (r failingRows) Err() error        { return r.err }
func (r failingRows) Close()            {}

// rowsQuerier answers every query with rows.
type rowsQuerier struct{ rows Rows }

func (q rowsQuerier) Exec(context.Context, string, ...any) error { return nil }
func (q rowsQuerier) ExecN(context.Context, string, ...any) (int64, error) {
	return 0, nil
}
func (q rowsQuerier) Query(context.Context, string, ...any) (Rows, error) { return q.rows, nil }

// SPEC R5: a load whose rows stop coming because its context ended
// returns an error that matches the context's error, whatever error the
// driver reports for it (PostgreSQL reports a canceled statement); one
// whose context did not end returns the driver's error alone.
func TestLoad_R5_ACutOffReadMatchesTheContextsError(t *testing.T) {
	driverErr := errors.New("ERROR: canceling statement due to user request (SQLSTATE 57014)")
	q := rowsQuerier{rows: failingRows{err: driverErr}}
	key := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Load(ctx, q, key)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, driverErr, "the driver's error is kept")

	_, err = Load(context.Background(), q, key)
	assert.ErrorIs(t, err, driverErr)
	assert.NotErrorIs(t, err, context.Canceled)
}
