package persistence_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S5: an agent's record names the session and owner it was saved
// under; found under another key (copied to another session, or to
// another agent of the same session), it is a *DamageError naming the key
// it was found under, and nothing is written to either record. The
// original still loads, and so do the session's other records.
func TestOpenAgent_ARecordUnderAnotherKeyIsDamage(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a", "b")...), persistence.SaveInvocation))
	other, _, err := newManager(t, st).OpenAgent(ctx, "bystander")
	require.NoError(t, err)
	require.NoError(t, other.Save(ctx, agentRec(2, userMsgs("c")...), persistence.SaveInvocation))

	from := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
	raw, err := st.Load(ctx, from)
	require.NoError(t, err)
	assert.Contains(t, string(raw.Data), `"session":"sm-session","owner":"sm-agent",`, "the data names its key")

	for _, to := range []persistence.Key{
		{SessionID: "elsewhere", Kind: persistence.KindAgent, ID: smAgent},
		{SessionID: smSession, Kind: persistence.KindAgent, ID: "impostor"},
	} {
		persistencetest.CopyRecord(t, st, from, to)
		before, err := st.Load(ctx, to)
		require.NoError(t, err)
		m, err := persistence.NewSessionManager(st, to.SessionID)
		require.NoError(t, err)
		_, _, err = m.OpenAgent(ctx, to.ID)
		var de *persistence.DamageError
		require.ErrorAs(t, err, &de, "%s", to)
		assert.Equal(t, to, de.Key)
		assert.ErrorIs(t, err, persistence.ErrDamaged)

		// An agent built on it fails to load it, and writes nothing.
		a, err := agent.New(ctx, agent.Config{ID: to.ID, Model: model.Scripted(model.TextTurn("hi")), Session: m})
		if err == nil {
			_, err = a.Invoke(ctx, agent.Text("hello"))
			require.NoError(t, a.Close(ctx))
		}
		require.ErrorAs(t, err, &de, "%s", to)
		after, err := st.Load(ctx, to)
		require.NoError(t, err)
		assert.Equal(t, before, after, "nothing is written to the copy")
	}

	_, rec := openAgent(t, newManager(t, st))
	assert.Equal(t, []string{"a", "b"}, msgTexts(rec.Messages))
	_, rec, err = newManager(t, st).OpenAgent(ctx, "bystander")
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, msgTexts(rec.Messages))
}

// SPEC S5: a record of an earlier build, whose data names no session or
// owner, loads wherever it is (the golden sessions are such records); a
// record that names an empty one is damage, as this build never writes it.
func TestOpenAgent_ARecordThatNamesNoOwnerLoads(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	key := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
	save := func(data string) {
		t.Helper()
		require.NoError(t, st.Delete(ctx, key))
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: key, Data: json.RawMessage(data)})
		require.NoError(t, err)
	}
	save(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)
	_, rec := openAgent(t, newManager(t, st))
	require.NotNil(t, rec)

	for _, data := range []string{
		`{"session":"","state":{},"interrupts":{"activated":false,"interrupts":[]}}`,
		`{"owner":null,"state":{},"interrupts":{"activated":false,"interrupts":[]}}`,
		`{"owner":1,"state":{},"interrupts":{"activated":false,"interrupts":[]}}`,
	} {
		save(data)
		_, _, err := newManager(t, st).OpenAgent(ctx, smAgent)
		var de *persistence.DamageError
		require.ErrorAs(t, err, &de, data)
	}
}

// SPEC S5: Import refuses an export edited to put a record under another
// session or record id than the one its data names, and writes nothing;
// the export as it was imports.
func TestImport_RefusesRecordsMovedToAnotherKey(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a")...), persistence.SaveInvocation))
	exp, err := export.Read(ctx, st, smSession)
	require.NoError(t, err)

	dst := memory.New()
	moved := *exp
	moved.SessionID = "clone"
	err = export.Write(ctx, dst, &moved)
	var de *persistence.DamageError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, persistence.Key{SessionID: "clone", Kind: persistence.KindAgent, ID: smAgent}, de.Key)
	assert.Contains(t, err.Error(), `of session "sm-session"`)

	renamed := *exp
	renamed.Records = append([]export.Record(nil), exp.Records...)
	renamed.Records[0].ID = "other"
	require.ErrorAs(t, export.Write(ctx, dst, &renamed), &de)
	assert.Equal(t, "other", de.Key.ID)

	infos, err := dst.Sessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos, "nothing is written")

	require.NoError(t, export.Write(ctx, dst, exp))
	_, rec := openAgent(t, newManager(t, dst))
	assert.Equal(t, []string{"a"}, msgTexts(rec.Messages))
}

// SPEC S2: Import refuses an export whose session or record id a store
// cannot keep with ErrBadID, whatever its data holds (an id edited to
// one of another session's is damage too, but the id is what is wrong),
// and writes nothing.
func TestImport_S2_ABadIdIsErrBadIDBeforeAnythingElse(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a")...), persistence.SaveInvocation))
	exp, err := export.Read(ctx, st, smSession)
	require.NoError(t, err)

	dst := memory.New()
	for name, edit := range map[string]func(*export.Session){
		"session": func(e *export.Session) { e.SessionID = "a/b" },
		"record":  func(e *export.Session) { e.Records[0].ID = "bad\xff" },
	} {
		bad := *exp
		bad.Records = append([]export.Record(nil), exp.Records...)
		edit(&bad)
		err := export.Write(ctx, dst, &bad)
		require.ErrorIs(t, err, persistence.ErrBadID, name)
		assert.NotErrorIs(t, err, persistence.ErrDamaged, name)
		require.ErrorIs(t, export.Check(&bad), persistence.ErrBadID, name)
	}
	infos, err := dst.Sessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos, "nothing is written")
}
