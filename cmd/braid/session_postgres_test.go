package main

import (
	"bytes"
	"context"
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

// SPEC S3: `braid session list`, show and export only read, so they
// work with a DSN whose transactions are read-only (an operator's
// read-only role, a hot standby), as they do on a SQLite store opened
// read-only; delete, which writes, is refused, saying the server is
// read-only.
func TestSession_ReadingCommandsWorkOnAServerThatTakesNoWrites(t *testing.T) {
	ctx := context.Background()
	dsn := persistencetest.PostgresDSN(t)
	st, err := postgres.New(ctx, postgres.Config{DSN: dsn})
	require.NoError(t, err)
	id := "ro-" + uuid.NewString()
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key: persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	ro := u.String()
	for _, args := range [][]string{{"session", "list", "-postgres", ro}, {"session", "show", "-postgres", ro, id},
		{"session", "export", "-postgres", ro, id}} {
		var so, se bytes.Buffer
		require.Equal(t, 0, run(ctx, args, nil, &so, &se), "%v: %s", args[:2], se.String())
		assert.Contains(t, so.String(), id, "%v", args[:2])
	}
	var so, se bytes.Buffer
	assert.Equal(t, 1, run(ctx, []string{"session", "delete", "-postgres", ro, id}, nil, &so, &se))
	assert.Contains(t, se.String(), "read-only")
}
