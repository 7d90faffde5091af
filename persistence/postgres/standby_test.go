package postgres_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// onStandby returns dsn's database on the tests' hot standby.
func onStandby(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	s, err := url.Parse(persistencetest.PostgresStandbyDSN(t))
	require.NoError(t, err)
	s.Path = u.Path
	return s.String()
}

// SPEC S3: on a real hot standby (streaming replication from the tests'
// server), New refuses to open for writing with ErrServerReadOnly, naming
// the standby and sending the operator to the primary, even where
// Braid's tables are there (replicated); opened with Config.ReadOnly, the
// store reads what the primary wrote, and refuses writes itself
// (ErrReadOnly) before sending anything.
func TestStandby_RefusesWritesAndReadsWhatThePrimaryWrote(t *testing.T) {
	primary := persistencetest.PostgresDatabase(t, persistencetest.PostgresDSN(t))
	standby := onStandby(t, primary)
	w, err := postgres.New(bg, postgres.Config{DSN: primary})
	require.NoError(t, err)
	defer w.Close()
	k := persistence.Key{SessionID: "standby-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	msg := json.RawMessage(`{"role":"user","content":[{"text":"hi"}]}`)
	_, err = w.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: []json.RawMessage{msg}})
	require.NoError(t, err)
	persistencetest.PostgresStandbyCaughtUp(t)

	s, err := postgres.New(bg, postgres.Config{DSN: standby})
	if s != nil {
		_ = s.Close()
	}
	require.ErrorIs(t, err, postgres.ErrServerReadOnly)
	assert.Contains(t, err.Error(), "hot standby")
	assert.Contains(t, err.Error(), "connect to the primary")

	r, err := postgres.New(bg, postgres.Config{DSN: standby, ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	rec, err := r.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rec.Version)
	assert.JSONEq(t, `{"n":1}`, string(rec.Data))
	require.Len(t, rec.Messages, 1)
	assert.JSONEq(t, string(msg), string(rec.Messages[0]))
	_, err = r.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, From: 1, Data: json.RawMessage(`{"n":2}`)})
	require.ErrorIs(t, err, postgres.ErrReadOnly)
}
