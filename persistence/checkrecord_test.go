package persistence_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// CheckRecord passes what the session manager loads: an agent's record as
// saved, and one of an earlier build (naming no session or owner).
func TestCheckRecord_PassesWhatOpenAgentLoads(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a", "b")...), persistence.SaveInvocation))
	key := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
	rec, err := st.Load(ctx, key)
	require.NoError(t, err)
	assert.NoError(t, persistence.CheckRecord(key, rec.Data, rec.Messages))
	assert.NoError(t, persistence.CheckRecord(key, json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`), nil))
}
