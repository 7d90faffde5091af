package persistence_test

// Bad input to the session manager's writers, and stale staged changes:
// a typed error before any I/O, nothing changed (SPEC S2, S4, S5).

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

// A nil record (to Save, Rewrite or StageAgent) and a nil staged change
// (to Commit) are ErrBadSave before any I/O: no panic, nothing sent, a
// parked change still parked, and the writer's next save works.
func TestAgentSession_NilInputIsErrBadSaveBeforeAnyIO(t *testing.T) {
	ctx := context.Background()
	spy := newSpy()
	m := newManager(t, spy)
	as, _ := openAgent(t, m)
	require.NoError(t, as.Save(ctx, agentRec(0, userMsgs("q0")...), persistence.SaveMessage))
	as.DeferDurable()
	require.NoError(t, as.Save(ctx, agentRec(1, userMsgs("q0", "a0")...), persistence.SaveInvocation))
	require.True(t, as.Parked())
	saves, syncs := spy.counts()

	assert.ErrorIs(t, as.Save(ctx, nil, persistence.SaveMessage), persistence.ErrBadSave)
	assert.ErrorIs(t, as.Save(ctx, nil, persistence.SaveInvocation), persistence.ErrBadSave)
	assert.ErrorIs(t, as.Rewrite(ctx, nil, 0, persistence.SaveMessage), persistence.ErrBadSave)
	_, err := as.StageAgent(nil, 0)
	assert.ErrorIs(t, err, persistence.ErrBadSave)
	assert.ErrorIs(t, m.Commit(ctx, persistence.SaveInvocation, nil), persistence.ErrBadSave)
	taken := as.TakeDeferred()
	require.NotNil(t, taken)
	assert.ErrorIs(t, m.Commit(ctx, persistence.SaveInvocation, taken, nil), persistence.ErrBadSave)

	s2, y2 := spy.counts()
	assert.Equal(t, saves, s2, "nothing sent")
	assert.Equal(t, syncs, y2, "nothing synced")
	assert.True(t, as.Parked(), "the taken change is parked again")
	require.NoError(t, as.Save(ctx, agentRec(2, userMsgs("q0", "a0", "q1")...), persistence.SaveMessage))
	_, rec, err := m.OpenAgent(ctx, smAgent)
	require.NoError(t, err)
	assert.Equal(t, []string{"q0", "a0", "q1"}, msgTexts(rec.Messages))
}

// A message that would not load back (OpenAgent refuses what
// model.Message.Validate refuses) is refused before any I/O, so a save
// never leaves a record its own writer cannot open (SPEC S5).
func TestAgentSession_AMessageThatWouldNotLoadIsErrBadSaveBeforeAnyIO(t *testing.T) {
	ctx := context.Background()
	spy := newSpy()
	m := newManager(t, spy)
	as, _ := openAgent(t, m)
	require.NoError(t, as.Save(ctx, agentRec(0, userMsgs("q0")...), persistence.SaveMessage))
	saves, _ := spy.counts()

	bad := []model.Message{
		{Role: "system", Content: []model.ContentBlock{{Text: ptr("x")}}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{{}}},
		{Role: model.RoleAssistant, Content: []model.ContentBlock{{ToolUse: &model.ToolUse{Input: json.RawMessage(`{}`)}}}},
	}
	for _, msg := range bad {
		err := as.Save(ctx, agentRec(1, model.UserText("q0"), msg), persistence.SaveMessage)
		assert.ErrorIs(t, err, persistence.ErrBadSave, "%+v", msg)
		err = as.Rewrite(ctx, agentRec(1, msg), 0, persistence.SaveMessage)
		assert.ErrorIs(t, err, persistence.ErrBadSave, "%+v", msg)
	}
	s2, _ := spy.counts()
	assert.Equal(t, saves, s2, "nothing sent")
	assert.Equal(t, 1, as.Messages())
	_, rec, err := m.OpenAgent(ctx, smAgent)
	require.NoError(t, err)
	assert.Equal(t, []string{"q0"}, msgTexts(rec.Messages))
}

func ptr[T any](v T) *T { return &v }

// SPEC S4: a change staged before another commit of its owner is stale,
// even one that was empty when staged (its data was the stored data then):
// committed after, it fails with a *ConflictError and changes nothing,
// instead of being skipped as if it had been saved.
func TestOwner_AStaleStagedChangeConflictsEvenWhenEmpty(t *testing.T) {
	ctx := context.Background()
	spy := newSpy()
	m := newManager(t, spy)
	o, _, err := m.Open(ctx, persistence.KindMultiAgent, "g")
	require.NoError(t, err)
	first, err := o.Stage(json.RawMessage(`{"n":1}`), 0, nil)
	require.NoError(t, err)
	require.NoError(t, m.Commit(ctx, persistence.SaveMessage, first))

	same, err := o.Stage(json.RawMessage(`{"n":1}`), 0, nil) // nothing new: empty
	require.NoError(t, err)
	other, err := o.Stage(json.RawMessage(`{"n":2}`), 0, nil)
	require.NoError(t, err)
	require.NoError(t, m.Commit(ctx, persistence.SaveMessage, other))
	v := o.Version()

	err = m.Commit(ctx, persistence.SaveMessage, same)
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, v, o.Version())
	rec, err := spy.Load(ctx, o.Key())
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":2}`, string(rec.Data))
}
