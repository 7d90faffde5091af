package persistence_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// SPEC S5: Export, Import and CheckExport refuse an agent's record that
// the session manager refuses to load (data of another form, a message
// that does not parse or is not valid), with a *DamageError naming the
// same key and part as OpenAgent's; Import writes nothing then. Before,
// they copied the damage: data {"bogus":1} exported and imported cleanly.
func TestExport_RefusesWhatOpenAgentRefuses(t *testing.T) {
	ctx := context.Background()
	key := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
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
			st := persistence.NewMemoryStore()
			msgs := make([]json.RawMessage, len(tc.msgs))
			for i, m := range tc.msgs {
				msgs[i] = json.RawMessage(m)
			}
			_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: key, Data: json.RawMessage(tc.data), Messages: msgs})
			require.NoError(t, err, "the store takes it: the damage is in what it holds")

			var want, got *persistence.DamageError
			_, _, err = newManager(t, st).OpenAgent(ctx, smAgent)
			require.ErrorAs(t, err, &want, "the session manager refuses it")
			assert.Equal(t, tc.part, want.Part)

			_, err = persistence.Export(ctx, st, smSession)
			require.ErrorAs(t, err, &got)
			assert.Equal(t, want.Key, got.Key)
			assert.Equal(t, want.Part, got.Part)
			assert.Equal(t, want.Error(), got.Error(), "the same words as the manager's")

			exp := &persistence.SessionExport{SessionID: smSession, Records: []persistence.RecordExport{{
				Kind: key.Kind, ID: key.ID, SchemaVersion: persistence.SchemaVersion, Data: json.RawMessage(tc.data), Messages: msgs}}}
			require.ErrorAs(t, persistence.CheckExport(exp), &got)
			assert.Equal(t, want.Part, got.Part)
			dst := persistence.NewMemoryStore()
			require.ErrorAs(t, persistence.Import(ctx, dst, exp), &got)
			assert.Equal(t, want.Key, got.Key)
			infos, err := dst.Sessions(ctx)
			require.NoError(t, err)
			assert.Empty(t, infos, "nothing is written")
		})
	}
}

// CheckRecord passes what the session manager loads: an agent's record as
// saved, and one of an earlier build (naming no session or owner).
func TestCheckRecord_PassesWhatOpenAgentLoads(t *testing.T) {
	ctx := context.Background()
	st := persistence.NewMemoryStore()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a", "b")...), persistence.SaveInvocation))
	key := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
	rec, err := st.Load(ctx, key)
	require.NoError(t, err)
	assert.NoError(t, persistence.CheckRecord(key, rec.Data, rec.Messages))
	assert.NoError(t, persistence.CheckRecord(key, json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`), nil))
}

// Import and CheckExport given no export (nil) refuse it with ErrBadSave,
// as they refuse an export without records, and write nothing (STYLE: no
// panic in library code).
func TestImport_RefusesANilExport(t *testing.T) {
	store := persistence.NewMemoryStore()
	require.ErrorIs(t, persistence.CheckExport(nil), persistence.ErrBadSave)
	require.ErrorIs(t, persistence.Import(context.Background(), store, nil), persistence.ErrBadSave)
	infos, err := store.Sessions(context.Background())
	require.NoError(t, err)
	assert.Empty(t, infos)
}
