package swarm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/swarm"
)

// SPEC S5, M10: damage to a stored swarm's own record (its data, with the
// swarm's node history and shared context, or an entry of its log) is a
// *DamageError, or ErrTopology when what changed names another swarm or
// node, when a new swarm loads it; never a panic.
func TestSwarmSession_DamagedOrchestratorRecordIsADamageError(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)}
	}
	s := build(t, researchSwarm(r), cfg())
	res, err := s.Invoke(ctx, agent.Text("find it"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.NoError(t, s.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "sess", persistence.KindMultiAgent)
	load := func() error {
		s, err := researchSwarm(r).Build(ctx, cfg())
		if err != nil {
			return err
		}
		defer s.Close(ctx)
		_, err = s.Status(ctx)
		return err
	}
	persistencetest.RecordDamage(t, st, key, load, persistencetest.Edits{
		Data: [][2]string{
			{`"history":`, `"History":`},
			{`"handoffs":`, `"handoff":`},
			// A key twice, which encoding/json reads as its last value.
			{`"history":`, `"history":[],"history":`},
		},
		Messages: [][2]string{
			{`"executed":`, `"Executed":`},
			{`"executed":`, `"executed":[],"executed":`},
			// A node's result carries JSON in bytes: {"k":"v"} becomes "{".
			{`"context":"eyJrIjoidiJ9"`, `"context":"ew=="`},
		},
	}, func(err error) bool { return errors.Is(err, actors.ErrTopology) })
}

// SPEC S5: a swarm's record copied into another session is a record of
// another session: the swarm built there gets a *DamageError naming the
// copy, and the original still resumes.
func TestSwarmSession_ARecordCopiedToAnotherSessionIsDamage(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	s := build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)})
	res, err := s.Invoke(ctx, agent.Text("find it"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.NoError(t, s.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "sess", persistence.KindMultiAgent)
	copied := persistence.Key{SessionID: "copy", Kind: key.Kind, ID: key.ID}
	persistencetest.CopyRecord(t, st, key, copied)
	_, err = researchSwarm(r).Build(ctx, swarm.Config{Session: manager(t, st, "copy"), System: actorstest.System(t)})
	var de *persistence.DamageError
	require.ErrorAs(t, err, &de)
	require.Equal(t, copied, de.Key)
	require.ErrorContains(t, err, `of session "sess"`)

	s = build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, "sess"), System: actorstest.System(t)})
	status, err := s.Status(ctx)
	require.NoError(t, err)
	require.Len(t, status.Interrupts, 1)
	require.NoError(t, s.Close(ctx))
}
