//go:build !race

// The test of this file is left out of race-detector builds, where it would
// not fit the machines that run them: it holds over 2 GiB of messages in
// the test process (those it saves and those it loads back), which the
// race detector's shadow memory multiplies, and the server holds up to
// twice a message for each statement. make test (all -race) does not run
// it; .ci/run runs it on its own, without -race.

package postgres_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// bigMessage is a JSON message of exactly persistence.MaxValueSize bytes,
// the longest a message may be, whose first bytes name n.
func bigMessage(n int) json.RawMessage {
	m := make([]byte, persistence.MaxValueSize)
	head := fmt.Sprintf(`{"n":%d,"a":"`, n)
	copy(m, head)
	for i := len(head); i < len(m)-2; i++ {
		m[i] = 'x'
	}
	copy(m[len(m)-2:], `"}`)
	return m
}

// SPEC S1, S3: a save whose messages are more than 1 GiB in all (four of
// persistence.MaxValueSize, the longest a message may be, and its data),
// more than PostgreSQL takes in one protocol message or one value (1 GiB
// each), is stored whole and loads back byte for byte: a new record
// (longer than the one-round-trip append carries), and a rewrite of its
// whole history. The store sends it in several statements of one
// transaction, none carrying more than MaxValueSize of messages.
func TestSave_MessagesOfMoreThanAGibibyteInAllAreStoredWhole(t *testing.T) {
	s, err := postgres.New(bg, postgres.Config{DSN: persistencetest.PostgresDSN(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	k := agentKey("big-"+uuid.NewString(), "a")
	big := []json.RawMessage{bigMessage(0), bigMessage(1), bigMessage(2), bigMessage(3)}

	v, err := s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`), Messages: big})
	require.NoError(t, err, "a new record")
	require.Equal(t, []int64{1}, v)
	// The rewrite keeps none of the stored messages and writes them in
	// another order.
	rewritten := []json.RawMessage{big[3], big[2], big[1], big[0]}
	v, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: json.RawMessage(`{"n":2}`), Messages: rewritten})
	require.NoError(t, err, "a rewrite of the whole history")
	require.Equal(t, []int64{2}, v)

	r, err := s.Load(bg, k)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Version)
	assert.JSONEq(t, `{"n":2}`, string(r.Data))
	require.Len(t, r.Messages, len(rewritten))
	for i, m := range r.Messages {
		assert.True(t, string(m) == string(rewritten[i]), "message %d loads back byte for byte", i)
	}
}
