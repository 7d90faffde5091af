package export_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

const (
	session = "s1"
	agentID = "a1"
)

func mustManager(t *testing.T, st persistence.Store) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, session)
	require.NoError(t, err)
	return m
}

// SPEC S5: export.Read, export.Write and export.Check refuse an agent's record that
// the session manager refuses to load (data of another form, a message
// that does not parse or is not valid), with a *DamageError naming the
// same key and part as OpenAgent's; export.Write writes nothing then. Before,
// they copied the damage: data {"bogus":1} exported and imported cleanly.
func TestReadWriteCheck_RefuseWhatOpenAgentRefuses(t *testing.T) {
	ctx := context.Background()
	key := persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: agentID}
	const data = `{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`
	const msg = `{"role":"user","content":[{"text":"hi"}]}`
	for name, tc := range map[string]struct {
		data string
		msgs []string
		part string
	}{
		"unknown key only":       {`{"bogus":1}`, nil, "data"},
		"unknown key":            {`{"state":{},"interrupts":{"activated":false,"interrupts":[]},"bogus":1}`, nil, "data"},
		"no interrupts":          {`{"state":{}}`, nil, "data"},
		"null state":             {`{"state":null,"interrupts":{"activated":false,"interrupts":[]}}`, nil, "data"},
		"interrupts unknown key": {`{"state":{},"interrupts":{"activated":false,"interrupts":[],"x":1}}`, nil, "data"},
		"another owner":          {`{"owner":"someone","state":{},"interrupts":{"activated":false,"interrupts":[]}}`, nil, "data"},
		"message unknown key":    {data, []string{msg, `{"role":"user","content":[{"text":"hi"}],"bogus":1}`}, "message 1"},
		"message empty block":    {data, []string{`{"role":"user","content":[{}]}`}, "message 0"},
		"message bad role":       {data, []string{`{"role":"robot","content":[{"text":"hi"}]}`}, "message 0"},
	} {
		t.Run(name, func(t *testing.T) {
			st := memory.New()
			msgs := make([]json.RawMessage, len(tc.msgs))
			for i, m := range tc.msgs {
				msgs[i] = json.RawMessage(m)
			}
			_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: key, Data: json.RawMessage(tc.data), Messages: msgs})
			require.NoError(t, err, "the store takes it: the damage is in what it holds")

			var want, got *persistence.DamageError
			_, _, err = mustManager(t, st).OpenAgent(ctx, agentID)
			require.ErrorAs(t, err, &want, "the session manager refuses it")
			assert.Equal(t, tc.part, want.Part)

			_, err = export.Read(ctx, st, session)
			require.ErrorAs(t, err, &got)
			assert.Equal(t, want.Key, got.Key)
			assert.Equal(t, want.Part, got.Part)
			assert.Equal(t, want.Error(), got.Error(), "the same words as the manager's")

			exp := &export.Session{SessionID: session, Records: []export.Record{{
				Kind: key.Kind, ID: key.ID, SchemaVersion: persistence.SchemaVersion, Data: json.RawMessage(tc.data), Messages: msgs}}}
			require.ErrorAs(t, export.Check(exp), &got)
			assert.Equal(t, want.Part, got.Part)
			dst := memory.New()
			require.ErrorAs(t, export.Write(ctx, dst, exp), &got)
			assert.Equal(t, want.Key, got.Key)
			infos, err := dst.Sessions(ctx)
			require.NoError(t, err)
			assert.Empty(t, infos, "nothing is written")
		})
	}
}

// Write and Check given no export (nil) refuse it with ErrBadSave,
// as they refuse an export without records, and write nothing (STYLE: no
// panic in library code).
func TestWrite_RefusesANilExport(t *testing.T) {
	store := memory.New()
	require.ErrorIs(t, export.Check(nil), persistence.ErrBadSave)
	require.ErrorIs(t, export.Write(context.Background(), store, nil), persistence.ErrBadSave)
	infos, err := store.Sessions(context.Background())
	require.NoError(t, err)
	assert.Empty(t, infos)
}
