package swarm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/swarm"
)

// SPEC M10, S5: a swarm's record keeps its agents' node kinds with its
// shape; a record an earlier build wrote, whose shape has no kinds, still
// loads and resumes, in a fresh runtime.
func TestSwarmSession_ARecordWithoutNodeKindsStillResumes(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)}
	}
	s1 := build(t, researchSwarm(r), cfg())
	res, err := s1.Invoke(ctx, agent.Text("find the answer"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	require.NoError(t, s1.Close(ctx))

	// The record as an earlier build wrote it: the shape alone.
	key := persistencetest.OnlyRecord(t, st, "sess", persistence.KindMultiAgent)
	rec, err := st.Load(ctx, key)
	require.NoError(t, err)
	var d map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Data, &d))
	var shape string
	require.NoError(t, json.Unmarshal(d["shape"], &shape))
	team, kinds, ok := strings.Cut(shape, "; node kinds ")
	require.True(t, ok, "the record keeps the agents' kinds: %s", shape)
	require.Equal(t, `"a"="agent" "b"="agent" "c"="agent"`, kinds)
	d["shape"], err = json.Marshal(team)
	require.NoError(t, err)
	data, err := json.Marshal(d)
	require.NoError(t, err)
	_, err = st.Save(ctx, persistence.SaveOptions{Durable: true},
		persistence.Change{Key: key, Base: rec.Version, Incarnation: rec.Incarnation, Data: data, From: len(rec.Messages)})
	require.NoError(t, err)

	s2 := build(t, researchSwarm(r), cfg())
	res, err = s2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "42")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))
}
