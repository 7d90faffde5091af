package graph_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
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

	recs, err := st.Session(ctx, "s1")
	require.NoError(t, err)
	var key persistence.Key
	var orig *persistence.Record
	for _, rec := range recs {
		if rec.Key.Kind == persistence.KindMultiAgent {
			key, orig = rec.Key, rec
		}
	}
	require.NotNil(t, orig, "no record of the graph in %v", recs)
	require.NotEmpty(t, orig.Messages, "the graph's log")

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
	require.NoError(t, load(), "the record as written loads")

	// put stores the record with part (-1: the data, else log entry part)
	// replaced by text.
	put := func(part int, text []byte) {
		require.True(t, st.Tamper(key, func(rec *persistence.Record) {
			rec.Data = append([]byte(nil), orig.Data...)
			rec.Messages = append(rec.Messages[:0:0], orig.Messages...)
			if part < 0 {
				rec.Data = text
			} else {
				rec.Messages[part] = text
			}
		}))
	}
	check := func(part int, text []byte, mustFail bool) {
		t.Helper()
		put(part, text)
		err := load()
		var de *persistence.DamageError
		switch {
		case err == nil:
			require.False(t, mustFail, "part %d loaded: %s", part, text)
		case errors.As(err, &de):
			require.Equal(t, key, de.Key, "part %d: %s", part, text)
		case errors.Is(err, actors.ErrTopology):
		default:
			t.Fatalf("part %d: %q: neither a DamageError nor ErrTopology: %v", part, text, err)
		}
	}
	rnd := rand.New(rand.NewPCG(9, 9))
	// Renamed, case-changed and repeated keys: encoding/json alone would
	// read each of these, dropping or overwriting a field.
	dataEdits := [][2]string{
		{`"status":`, `"statuz":`},
		{`"status":`, `"Status":`},
		{`"seq":`, `"seq":0,"seq":`},
		{`{"type":`, `{"type":"swarm","type":`},
	}
	logEdits := [][2]string{
		{`"status":`, `"Status":`},
		{`"run":`, `"runs":`},
		{`"node":{"id":`, `"node":{"id":"zz","id":`},
		{`"started":`, `"started":0,"started":`},
	}
	for part := -1; part < len(orig.Messages); part++ {
		text, edits := orig.Data, dataEdits
		if part >= 0 {
			text, edits = orig.Messages[part], logEdits
		}
		for _, e := range edits {
			if edited := replaceOnce(text, e); edited != nil {
				check(part, edited, true)
			}
		}
		for _, m := range strictjsontest.Mutations(rnd, text, nil)[1:] {
			check(part, m, false)
		}
	}
	put(-1, orig.Data)
	require.NoError(t, load(), "the record restored loads again")
}

// replaceOnce returns b with the first e[0] replaced by e[1], or nil if b
// has no e[0].
func replaceOnce(b []byte, e [2]string) []byte {
	s := string(b)
	for i := 0; i+len(e[0]) <= len(s); i++ {
		if s[i:i+len(e[0])] == e[0] {
			return []byte(s[:i] + e[1] + s[i+len(e[0]):])
		}
	}
	return nil
}
