package persistence_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

const m2 = `{"role":"user","content":[{"text":"again"}]}`

func journalPath(dir string, k persistence.Key) string {
	return filepath.Join(dir, "session_"+k.SessionID, "agents", "agent_"+k.ID, "journal.jsonl")
}

func headPath(dir string, k persistence.Key) string {
	return filepath.Join(dir, "session_"+k.SessionID, "agents", "agent_"+k.ID, "agent.json")
}

func journalLines(t *testing.T, dir string, k persistence.Key) []string {
	t.Helper()
	b, err := os.ReadFile(journalPath(dir, k))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// SPEC S2, S5: saves between durable points go to the journal and leave the
// head and message files of the last durable save untouched; a load sees
// them; the next durable save writes the full layout and empties the journal.
func TestFileStore_JournalKeepsSavesBetweenDurablePoints(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	durable := snapshotDir(t, dir)

	v, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.NoError(t, err)
	v, err = s.Save(ctx, rec(k, `{"n":3}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 2})
	require.NoError(t, err)
	assert.Equal(t, int64(3), v)

	after := snapshotDir(t, dir)
	for p, b := range durable {
		if !strings.HasSuffix(p, "journal.jsonl") {
			assert.Equal(t, b, after[p], "%s is the durable save's", p)
		}
	}
	assert.Len(t, journalLines(t, dir, k), 2, "one line per save")

	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Version)
	assert.JSONEq(t, `{"n":3}`, string(r.Data))
	requireMessages(t, r, m0, m1)

	v, err = s.Save(ctx, rec(k, `{"n":4}`, m0, m1, m2), persistence.SaveOptions{Base: v, Unchanged: 2, Durable: true})
	require.NoError(t, err)
	assert.Empty(t, journalLines(t, dir, k)[0], "a durable save empties the journal")
	head, err := os.ReadFile(headPath(dir, k))
	require.NoError(t, err)
	assert.Contains(t, string(head), `"version": 4`)
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(headPath(dir, k)), "messages"))
	require.NoError(t, err)
	assert.Len(t, entries, 3, "one file per message at the durable save")
	r, err = s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	requireMessages(t, r, m0, m1, m2)
}

func requireMessages(t *testing.T, r *persistence.Record, want ...string) {
	t.Helper()
	require.Len(t, r.Messages, len(want))
	for i, m := range want {
		assert.JSONEq(t, m, string(r.Messages[i]), "message %d", i)
	}
}

// SPEC S5: a writer killed in the middle of an append leaves a torn last
// line; loads ignore it, and the next save writes over it.
func TestFileStore_JournalTornLineIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(line string) string
	}{
		{"cut short", func(line string) string { return line[:len(line)/2] }},
		{"cut before the newline", func(line string) string { return strings.TrimSuffix(line, "\n") }},
		{"half overwritten", func(line string) string { return strings.Replace(line, `"n":3`, `"n":9`, 1) }},
		{"zeros", func(line string) string { return strings.Repeat("\x00", len(line)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := fileStore(t)
			ctx := context.Background()
			k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
			v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{})
			require.NoError(t, err)
			v, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
			require.NoError(t, err)
			_, err = s.Save(ctx, rec(k, `{"n":3}`, m0), persistence.SaveOptions{Base: v, Unchanged: 1})
			require.NoError(t, err)
			lines := journalLines(t, dir, k)
			require.Len(t, lines, 3)
			torn := lines[0] + "\n" + lines[1] + "\n" + tc.tear(lines[2]+"\n")
			write(t, journalPath(dir, k), torn)

			r, err := s.Load(ctx, k)
			require.NoError(t, err)
			assert.Equal(t, int64(2), r.Version, "the torn save did not happen")
			assert.JSONEq(t, `{"n":2}`, string(r.Data))
			requireMessages(t, r, m0, m1)

			_, err = s.Save(ctx, rec(k, `{"n":3}`, m0), persistence.SaveOptions{Base: 3, Unchanged: 1})
			assert.ErrorIs(t, err, persistence.ErrConflict, "version 3 was never made")
			v, err = s.Save(ctx, rec(k, `{"n":5}`, m0, m2), persistence.SaveOptions{Base: 2, Unchanged: 1})
			require.NoError(t, err)
			assert.Equal(t, int64(3), v)
			assert.Len(t, journalLines(t, dir, k), 3, "the new line replaced the torn one")
			r, err = s.Load(ctx, k)
			require.NoError(t, err)
			assert.JSONEq(t, `{"n":5}`, string(r.Data))
			requireMessages(t, r, m0, m2)
		})
	}
}

// SPEC S5: a writer killed after a checkpoint replaced the head and before it
// emptied the journal leaves lines that no longer continue the head's
// version; loads and saves skip them.
func TestFileStore_JournalStaleLinesAfterCheckpoint(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{})
	require.NoError(t, err)
	v, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.NoError(t, err)
	old, err := os.ReadFile(journalPath(dir, k))
	require.NoError(t, err)
	v, err = s.Save(ctx, rec(k, `{"n":3}`, m2), persistence.SaveOptions{Base: v, Durable: true})
	require.NoError(t, err)
	write(t, journalPath(dir, k), string(old))

	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	assert.JSONEq(t, `{"n":3}`, string(r.Data))
	requireMessages(t, r, m2)
	v, err = s.Save(ctx, rec(k, `{"n":4}`, m2, m0), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.NoError(t, err)
	r, err = s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	requireMessages(t, r, m2, m0)
	assert.Len(t, journalLines(t, dir, k), 1, "the stale lines were cut off")
}

// reseal recomputes the CRC-32C that ends a journal line after an edit, so
// the line is a well-formed save that says something wrong.
func reseal(line string) string {
	const suffix = len(`,"crc":"00000000"}`)
	body := line[:len(line)-suffix] + "}"
	sum := crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))
	return line[:len(line)-suffix] + fmt.Sprintf(`,"crc":"%08x"}`, sum)
}

// SPEC S5: a well-formed journal line from another owner or a newer schema
// is damage: a typed error naming the journal, and nothing overwritten.
func TestFileStore_JournalDamage(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		schema         bool
	}{
		{"line of another agent", `"id":"a"`, `"id":"b"`, false},
		{"line of another session", `"sessionId":"j"`, `"sessionId":"k"`, false},
		{"line of a newer schema", `"schemaVersion":1`, `"schemaVersion":2`, true},
		{"data not an object", `"data":{"n":2}`, `"data":[2]`, false},
		{"keeps more messages than there are", `"keep":1`, `"keep":7`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := fileStore(t)
			ctx := context.Background()
			k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
			v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
			require.NoError(t, err)
			_, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
			require.NoError(t, err)
			line := journalLines(t, dir, k)[0]
			require.Contains(t, line, tc.old)
			write(t, journalPath(dir, k), reseal(strings.Replace(line, tc.old, tc.new, 1))+"\n")
			before := snapshotDir(t, dir)

			_, err = s.Load(ctx, k)
			var de *persistence.DamageError
			require.True(t, errors.As(err, &de), "%T %v", err, err)
			assert.ErrorIs(t, err, persistence.ErrDamaged)
			assert.Equal(t, "session_j/agents/agent_a/journal.jsonl", de.File)
			if tc.schema {
				assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
			}
			_, err = s.Save(ctx, rec(k, `{"n":3}`, m0), persistence.SaveOptions{Base: 2, Unchanged: 1})
			assert.ErrorIs(t, err, persistence.ErrDamaged, "a save over a damaged journal is refused")
			assert.Equal(t, before, snapshotDir(t, dir), "nothing was overwritten")
		})
	}
}

// A journal that reaches its limit is folded into a checkpoint, so loads read
// a bounded journal even when no durable save comes.
func TestFileStore_JournalLimitMakesACheckpoint(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
	var v int64
	var msgs []string
	for i := 0; i < 100; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"text":"m%d"}]}`, i))
		var err error
		v, err = s.Save(ctx, rec(k, fmt.Sprintf(`{"i":%d}`, i), msgs...), persistence.SaveOptions{Base: v, Unchanged: i})
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(journalLines(t, dir, k)), 64)
	head, err := os.ReadFile(headPath(dir, k))
	require.NoError(t, err, "a checkpoint wrote the head")
	assert.Contains(t, string(head), `"version": 65`)
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, int64(100), r.Version)
	assert.JSONEq(t, `{"i":99}`, string(r.Data))
	requireMessages(t, r, msgs...)
}

// Checkpoint writes the journal out without changing the version: the
// session manager's durable point when nothing changed.
func TestFileStore_CheckpointKeepsTheVersion(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "j", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{})
	require.NoError(t, err)
	v, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.NoError(t, err)
	_, err = os.Stat(headPath(dir, k))
	require.ErrorIs(t, err, os.ErrNotExist, "no durable save yet")

	require.NoError(t, s.Checkpoint(ctx, k, true))
	head, err := os.ReadFile(headPath(dir, k))
	require.NoError(t, err)
	assert.Contains(t, string(head), `"version": 2`)
	b, err := os.ReadFile(journalPath(dir, k))
	require.NoError(t, err)
	assert.Empty(t, b)
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, v, r.Version)
	requireMessages(t, r, m0, m1)

	require.NoError(t, s.Checkpoint(ctx, k, true), "nothing left to write")
	again, err := os.ReadFile(headPath(dir, k))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(head, again))
	_, err = s.Save(ctx, rec(k, `{"n":3}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 2})
	require.NoError(t, err)
}

// goldenJournalKey is the record of the golden session with a journal: a
// durable save (version 1, one message), then two saves in the journal.
var goldenJournalKey = persistence.Key{SessionID: "golden-journal", Kind: persistence.KindAgent, ID: "default"}

// SPEC S5 (golden files): a schema-1 session whose newest saves are in the
// journal still loads, so a later change to the journal's format cannot
// silently break sessions cut off between durable saves. With -update the
// folder is written anew.
func TestGolden_JournalSession(t *testing.T) {
	src := filepath.Join("testdata", "golden", "v1", "session_"+goldenJournalKey.SessionID)
	ctx := context.Background()
	if *updateGolden {
		tmp := t.TempDir()
		s, err := persistence.NewFileStore(tmp)
		require.NoError(t, err)
		v, err := s.Save(ctx, rec(goldenJournalKey, `{"state":{"trust":"t"}}`, m0), persistence.SaveOptions{Durable: true})
		require.NoError(t, err)
		v, err = s.Save(ctx, rec(goldenJournalKey, `{"state":{"trust":"t"},"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1})
		require.NoError(t, err)
		_, err = s.Save(ctx, rec(goldenJournalKey, `{"state":{"trust":"t"},"n":3}`, m0, m1, m2), persistence.SaveOptions{Base: v, Unchanged: 2})
		require.NoError(t, err)
		require.NoError(t, os.RemoveAll(src))
		copyTree(t, filepath.Join(tmp, "session_"+goldenJournalKey.SessionID), src)
	}
	root := t.TempDir()
	copyTree(t, src, filepath.Join(root, "session_"+goldenJournalKey.SessionID))
	lines := journalLines(t, root, goldenJournalKey)
	require.Len(t, lines, 2, "the golden journal holds two saves")
	for _, l := range lines {
		assert.Contains(t, l, `"schemaVersion":1`)
	}
	s, err := persistence.NewFileStore(root)
	require.NoError(t, err)
	r, err := s.Load(ctx, goldenJournalKey)
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Version)
	assert.JSONEq(t, `{"state":{"trust":"t"},"n":3}`, string(r.Data))
	requireMessages(t, r, m0, m1, m2)

	// The next durable save folds the journal into the head.
	_, err = s.Save(ctx, rec(goldenJournalKey, `{"state":{"trust":"t"},"n":4}`, m0, m1, m2), persistence.SaveOptions{Base: 3, Unchanged: 3, Durable: true})
	require.NoError(t, err)
	r, err = s.Load(ctx, goldenJournalKey)
	require.NoError(t, err)
	assert.Equal(t, int64(4), r.Version)
	requireMessages(t, r, m0, m1, m2)
}
