package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S5, M10: damage to a stored graph's own record (its data, or an
// entry of its log: bit flips, truncations, renamed, repeated and
// case-changed keys) is, when a new graph loads it, a *DamageError naming
// the record, or ErrTopology when what changed names another graph or
// node; a text that still reads as a record loads. Never a panic, never
// another kind of error.
func TestGraphSession_DamagedOrchestratorRecordIsADamageError(t *testing.T) {
	ctx := context.Background()
	st := persistence.NewMemoryStore()
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: freshSystem(t), Hooks: []hook.Provider{gate(r, "gated")}}
	}
	g := build(t, sessionGraph(r), cfg())
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "s1", persistence.KindMultiAgent)
	// load builds a new graph on the store as it is (building opens the
	// stored run) and reports what loading it gave.
	load := func() error {
		g, err := sessionGraph(r).Build(ctx, cfg())
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		_, err = g.Status(ctx)
		return err
	}
	persistencetest.RecordDamage(t, st, key, load, persistencetest.Edits{
		Data: [][2]string{
			{`"status":`, `"statuz":`},
			{`"status":`, `"Status":`},
			{`"seq":`, `"seq":0,"seq":`},
			{`{"type":`, `{"type":"swarm","type":`},
		},
		Messages: [][2]string{
			{`"status":`, `"Status":`},
			{`"run":`, `"runs":`},
			{`"node":{"id":`, `"node":{"id":"zz","id":`},
			{`"started":`, `"started":0,"started":`},
		},
	}, func(err error) bool { return errors.Is(err, actors.ErrTopology) })
}
