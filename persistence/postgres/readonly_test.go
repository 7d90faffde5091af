package postgres_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// SPEC S3: a store does not open on a server that takes no writes (a hot
// standby, or default_transaction_read_only on, here from the DSN): New
// fails with ErrServerReadOnly, saying so, even where Braid's tables are
// there already and opening would only read them; the error names the
// setting and what to do (turn it off, or open with Config.ReadOnly), and
// does not send the operator to a primary.
func TestNew_RefusesAServerThatTakesNoWrites(t *testing.T) {
	_ = newStore(t) // the tables are there
	u, err := url.Parse(persistencetest.PostgresDSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()

	s, err := postgres.New(bg, postgres.Config{DSN: u.String()})
	if s != nil {
		_ = s.Close()
	}
	require.ErrorIs(t, err, postgres.ErrServerReadOnly)
	assert.Contains(t, err.Error(), "default_transaction_read_only is on for this connection")
	assert.Contains(t, err.Error(), "turn it off, or set Config.ReadOnly")
	assert.NotContains(t, err.Error(), "connect to the primary")
}

// SPEC S3, S4: a server that stops taking writes under an open store (a
// primary turned standby, an operator's default_transaction_read_only)
// fails every write with ErrServerReadOnly, whichever path it takes (the
// one-round-trip append, a batch's transaction, a delete, a session's
// delete, a sync), saying what to do, and nothing of it is stored; reads
// go on. The database is one of the
// test's own, made read-only for new connections, and the store's
// connections are ended so that it takes new ones.
func TestSave_OnAServerThatTurnedReadOnlyFailsSayingSo(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	fresh := persistencetest.PostgresDatabase(t, dsn)
	u, err := url.Parse(fresh)
	require.NoError(t, err)
	db := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	defer admin.Close(bg)

	s, err := postgres.New(bg, postgres.Config{DSN: fresh})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "ro-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)

	_, err = admin.Exec(bg, `ALTER DATABASE `+db+` SET default_transaction_read_only = on`)
	require.NoError(t, err)
	_, err = admin.Exec(bg, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1`, db)
	require.NoError(t, err)

	other := k
	other.ID = "b"
	writes := map[string]func() error{
		"append": func() error {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`),
				Messages: []json.RawMessage{json.RawMessage(`{"m":1}`)}})
			return err
		},
		"batch": func() error {
			_, err := s.Save(bg, persistence.SaveOptions{Durable: true},
				persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`)},
				persistence.Change{Key: other, Data: json.RawMessage(`{"n":1}`)})
			return err
		},
		"delete": func() error { return s.Delete(bg, k) },
		"delete session": func() error {
			_, err := s.DeleteSession(bg, k.SessionID)
			return err
		},
		"delete stored session": func() error {
			_, err := s.DeleteStoredSession(bg, k.SessionID)
			return err
		},
		"sync": func() error { return s.Sync(bg) },
	}
	for name, write := range writes {
		err := write()
		require.ErrorIs(t, err, postgres.ErrServerReadOnly, name)
		assert.Contains(t, err.Error(), "read-only", name)
		assert.Contains(t, err.Error(), "connect to the primary, or turn default_transaction_read_only off", name)
	}
	r, err := s.Load(bg, k)
	require.NoError(t, err, "reads go on")
	assert.Equal(t, int64(1), r.Version)
	assert.Empty(t, r.Messages)
	_, err = s.Load(bg, other)
	assert.ErrorIs(t, err, persistence.ErrNotFound)
}

// SPEC S3: a store opened with Config.ReadOnly reads a server that takes
// no writes (here a DSN with default_transaction_read_only on), creates
// and changes nothing, and fails every write with ErrReadOnly; a
// database without Braid's tables is not found rather than created.
func TestNew_ReadOnlyReadsAServerThatTakesNoWrites(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	w, err := postgres.New(bg, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	k := persistence.Key{SessionID: "ro-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = w.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.NoError(t, w.Close())

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	s, err := postgres.New(bg, postgres.Config{DSN: u.String(), ReadOnly: true})
	require.NoError(t, err)
	defer s.Close()
	r, err := s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Version)

	other := k
	other.ID = "b"
	writes := map[string]func() error{
		"append": func() error {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: other, Data: json.RawMessage(`{"n":1}`)})
			return err
		},
		"batch": func() error {
			_, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`)},
				persistence.Change{Key: other, Data: json.RawMessage(`{"n":1}`)})
			return err
		},
		"delete": func() error { return s.Delete(bg, k) },
		"delete session": func() error {
			_, err := s.DeleteSession(bg, k.SessionID)
			return err
		},
		"delete stored session": func() error {
			_, err := s.DeleteStoredSession(bg, k.SessionID)
			return err
		},
		"sync": func() error { return s.Sync(bg) },
	}
	for name, write := range writes {
		assert.ErrorIs(t, write(), postgres.ErrReadOnly, name)
	}
	r, err = s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Version)

	// A database without Braid's tables: nothing is created.
	empty := persistencetest.PostgresDatabase(t, dsn)
	_, err = postgres.New(bg, postgres.Config{DSN: empty, ReadOnly: true})
	require.ErrorIs(t, err, persistence.ErrNotFound)
	c, err := pgx.Connect(bg, empty)
	require.NoError(t, err)
	defer c.Close(bg)
	var n int
	require.NoError(t, c.QueryRow(bg, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'braid%'`).Scan(&n))
	assert.Zero(t, n, "no table was created")
}

// SPEC S3: a store opened with Config.ReadOnly on a server that takes
// writes brings no table to this build's layout: tables of an earlier
// layout are an error matching persistence.ErrSchemaVersion, naming the
// store, and the layout row and the columns stay as they were.
func TestNew_ReadOnlyLeavesAnEarlierLayoutAsItIs(t *testing.T) {
	u, err := url.Parse(persistencetest.PostgresDatabase(t, persistencetest.PostgresDSN(t)))
	require.NoError(t, err)
	w, err := postgres.New(bg, postgres.Config{DSN: u.String()})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	c, err := pgx.Connect(bg, u.String())
	require.NoError(t, err)
	defer c.Close(bg)
	// Layout 1: no incarnation column.
	_, err = c.Exec(bg, `ALTER TABLE braid_records DROP COLUMN incarnation`)
	require.NoError(t, err)
	_, err = c.Exec(bg, `UPDATE braid_meta SET value = 1 WHERE name = 'layout'`)
	require.NoError(t, err)

	_, err = postgres.New(bg, postgres.Config{DSN: u.String(), ReadOnly: true})
	require.ErrorIs(t, err, persistence.ErrSchemaVersion)
	assert.Contains(t, err.Error(), "postgres store")
	var layout, cols int
	require.NoError(t, c.QueryRow(bg, `SELECT value FROM braid_meta WHERE name = 'layout'`).Scan(&layout))
	require.NoError(t, c.QueryRow(bg, `SELECT count(*) FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = 'braid_records' AND column_name = 'incarnation'`).Scan(&cols))
	assert.Equal(t, 1, layout, "the layout row is unchanged")
	assert.Zero(t, cols, "no column was added")
}
