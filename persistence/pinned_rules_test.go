package persistence_test

// Each test here pins a behaviour of the SPEC (or of a documented limit)
// that a small change to the code could break without another test
// noticing.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC S5: an agent record whose "state" or "interrupts" is null (a
// required field of the wrong type) is a *DamageError naming the session,
// the owner and the record's data, not an agent with an empty state.
func TestOpenAgent_NullStateOrInterruptsIsDamage(t *testing.T) {
	for name, data := range map[string]string{
		"state":      `{"state":null,"interrupts":{"activated":false,"interrupts":[]}}`,
		"interrupts": `{"state":{},"interrupts":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := memory.New()
			key := persistence.Key{SessionID: "s1", Kind: persistence.KindAgent, ID: "default"}
			_, err := store.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: key, Data: []byte(data), Incarnation: 1})
			require.NoError(t, err)
			sm, err := persistence.NewSessionManager(store, "s1")
			require.NoError(t, err)

			_, rec, err := sm.OpenAgent(ctx, "default")
			require.ErrorIs(t, err, persistence.ErrDamaged)
			var de *persistence.DamageError
			require.True(t, errors.As(err, &de))
			assert.Equal(t, key, de.Key)
			assert.Nil(t, rec)
			assert.Contains(t, err.Error(), name)
		})
	}
}

// SPEC S2: an id with any control character (every C0 character, 0x00 to
// 0x1f, and DEL) is a typed ErrBadID, refused before any I/O: by
// ValidateID, by a session manager, and by a store's Save.
func TestValidateID_RefusesEveryControlCharacter(t *testing.T) {
	store := memory.New()
	for r := rune(0); r <= 0x7f; r++ {
		if r >= 0x20 && r < 0x7f {
			continue
		}
		id := fmt.Sprintf("a%cb", r)
		require.ErrorIs(t, persistence.ValidateID("session", id), persistence.ErrBadID, "%U", r)
		_, err := persistence.NewSessionManager(store, id)
		require.ErrorIs(t, err, persistence.ErrBadID, "%U", r)
		_, err = store.Save(context.Background(), persistence.SaveOptions{},
			persistence.Change{Key: persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: id}, Data: []byte(`{}`)})
		require.ErrorIs(t, err, persistence.ErrBadID, "%U", r)
	}
	require.NoError(t, persistence.ValidateID("session", "a b~"), "printable ASCII is fine")
}

// SPEC S1: a save costs O(what changed), also for a writer that loaded an
// existing record (a new process): it knows how many messages are stored,
// and its first save sends only the new ones.
func TestOpenAgent_FirstSaveAfterALoadSendsOnlyTheNewMessages(t *testing.T) {
	ctx := context.Background()
	spy := newSpy()
	m := newManager(t, spy)
	s, _ := openAgent(t, m)
	msgs := userMsgs("a", "b", "c")
	require.NoError(t, s.Save(ctx, agentRec(1, msgs...), persistence.SaveMessage))

	again := newManager(t, spy)
	s2, rec := openAgent(t, again)
	require.Len(t, rec.Messages, 3)
	assert.Equal(t, 3, s2.Messages(), "the writer knows what is stored")
	require.NoError(t, s2.Save(ctx, agentRec(2, append(rec.Messages, userMsgs("d")...)...), persistence.SaveMessage))
	last := spy.last(t)
	require.Len(t, last.Changes, 1)
	assert.Equal(t, 3, last.Changes[0].From, "the stored messages are kept")
	assert.Len(t, last.Changes[0].Messages, 1, "only the new message is sent")
}
