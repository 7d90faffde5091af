package persistence_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

func fileStore(t *testing.T) (*persistence.FileStore, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := persistence.NewFileStore(dir)
	require.NoError(t, err)
	return s, dir
}

func rec(k persistence.Key, data string, msgs ...string) *persistence.Record {
	r := &persistence.Record{Key: k, SchemaVersion: persistence.SchemaVersion, Data: json.RawMessage(data)}
	for _, m := range msgs {
		r.Messages = append(r.Messages, json.RawMessage(m))
	}
	return r
}

const m0 = `{"role":"user","content":[{"text":"hi"}]}`
const m1 = `{"role":"assistant","content":[{"text":"hello"}]}`

// SPEC S2: the Strands-like layout, person-readable JSON, no temp files left.
func TestFileStore_Layout(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "myapp", Kind: persistence.KindAgent, ID: "default"}
	_, err := s.Save(ctx, rec(k, `{"state":{}}`, m0, m1), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	mk := persistence.Key{SessionID: "myapp", Kind: persistence.KindMultiAgent, ID: "graph"}
	v, err := s.Save(ctx, rec(mk, `{"nodes":{}}`), persistence.SaveOptions{})
	require.NoError(t, err)
	_, err = s.Save(ctx, rec(mk, `{"nodes":{"a":1}}`), persistence.SaveOptions{Base: v, Durable: true})
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(dir, "redo"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the open store's redo log")
	require.NoError(t, s.Close()) // which removes it

	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	}))
	assert.ElementsMatch(t, []string{
		"session_myapp/session.json",
		"session_myapp/agents/agent_default/journal.jsonl",
		"session_myapp/agents/agent_default/agent.json",
		"session_myapp/agents/agent_default/messages/message_0.json",
		"session_myapp/agents/agent_default/messages/message_1.json",
		"session_myapp/multi_agents/multi_agent_graph/multi_agent.json",
		"session_myapp/multi_agents/multi_agent_graph/journal.jsonl",
	}, files)

	head, err := os.ReadFile(filepath.Join(dir, "session_myapp/agents/agent_default/agent.json"))
	require.NoError(t, err)
	assert.Contains(t, string(head), "\n  \"schemaVersion\": 1,", "indented for people")
	var h map[string]any
	require.NoError(t, json.Unmarshal(head, &h))
	assert.Equal(t, "default", h["id"])
	assert.Equal(t, []any{0.0, 1.0}, h["messages"])
	msg, err := os.ReadFile(filepath.Join(dir, "session_myapp/agents/agent_default/messages/message_1.json"))
	require.NoError(t, err)
	assert.Contains(t, string(msg), `"text": "hello"`)
}

func TestFileStore_RewriteRemovesOldMessageFiles(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{}`, m0, m1), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	_, err = s.Save(ctx, rec(k, `{}`, m1), persistence.SaveOptions{Base: v, Durable: true})
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(dir, "session_s/agents/agent_a/messages"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "message_2.json", entries[0].Name(), "new files get new numbers; old ones go")
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	require.Len(t, r.Messages, 1)
	assert.JSONEq(t, m1, string(r.Messages[0]))
}

// A temp file or an unlisted message file left by a writer that was killed
// does not disturb loading or the next save.
func TestFileStore_LeftoversOfAKilledWriter(t *testing.T) {
	s, dir := fileStore(t)
	ctx := context.Background()
	k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
	v, err := s.Save(ctx, rec(k, `{"n":1}`, m0), persistence.SaveOptions{Durable: true})
	require.NoError(t, err)
	adir := filepath.Join(dir, "session_s/agents/agent_a")
	require.NoError(t, os.WriteFile(filepath.Join(adir, "agent.json.tmp-999"), []byte(`{"trunc`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(adir, "messages/message_1.json"), []byte(`{"half`), 0o644))
	r, err := s.Load(ctx, k)
	require.NoError(t, err)
	assert.Len(t, r.Messages, 1)
	_, err = s.Save(ctx, rec(k, `{"n":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	require.NoError(t, err)
	r, err = s.Load(ctx, k)
	require.NoError(t, err)
	require.Len(t, r.Messages, 2)
	assert.JSONEq(t, m1, string(r.Messages[1]), "the half-written file was replaced")
}

// SPEC S5: damaged files give a typed error naming the session and the file;
// nothing is overwritten; nothing panics.
func TestFileStore_Damage(t *testing.T) {
	k := persistence.Key{SessionID: "s1", Kind: persistence.KindAgent, ID: "a"}
	head := "session_s1/agents/agent_a/agent.json"
	msg0 := "session_s1/agents/agent_a/messages/message_0.json"
	sess := "session_s1/session.json"
	cases := []struct {
		name   string
		file   string
		damage func(t *testing.T, dir string)
		schema bool
	}{
		{"truncated head", head, func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, head)) }, false},
		{"corrupt head", head, func(t *testing.T, dir string) { write(t, filepath.Join(dir, head), "{not json at all") }, false},
		{"empty head", head, func(t *testing.T, dir string) { write(t, filepath.Join(dir, head), "") }, false},
		{"newer schema", head, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, head), `"schemaVersion": 1`, `"schemaVersion": 99`)
		}, true},
		{"head of another agent", head, func(t *testing.T, dir string) { edit(t, filepath.Join(dir, head), `"id": "a"`, `"id": "b"`) }, false},
		{"head of another session", head, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, head), `"sessionId": "s1"`, `"sessionId": "s2"`)
		}, false},
		{"head lists a missing file", msg0, func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, msg0))) }, false},
		{"truncated message", msg0, func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, msg0)) }, false},
		{"message of another agent", msg0, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, msg0), `"ownerId": "a"`, `"ownerId": "zz"`)
		}, false},
		{"message of a newer schema", msg0, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, msg0), `"schemaVersion": 1`, `"schemaVersion": 7`)
		}, true},
		{"corrupt session.json", sess, func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, sess)) }, false},
		{"session.json of another session", sess, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, sess), `"sessionId": "s1"`, `"sessionId": "s9"`)
		}, false},
		{"session.json of a newer schema", sess, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, sess), `"schemaVersion": 1`, `"schemaVersion": 3`)
		}, true},
		{"head data not an object", head, func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, head), `"data": {`, `"data": [{`)
			edit(t, filepath.Join(dir, head), "}\n}", "}]\n}")
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := fileStore(t)
			ctx := context.Background()
			v, err := s.Save(ctx, rec(k, `{"x":1}`, m0, m1), persistence.SaveOptions{Durable: true})
			require.NoError(t, err)
			tc.damage(t, dir)
			before := snapshotDir(t, dir)

			_, err = s.Load(ctx, k)
			require.Error(t, err)
			var de *persistence.DamageError
			require.True(t, errors.As(err, &de), "%T %v", err, err)
			assert.ErrorIs(t, err, persistence.ErrDamaged)
			assert.Equal(t, "s1", de.SessionID)
			assert.Equal(t, tc.file, de.File)
			assert.Contains(t, err.Error(), tc.file)
			assert.Contains(t, err.Error(), `session "s1"`)
			if tc.schema {
				assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
			}

			_, err = s.Save(ctx, rec(k, `{"x":2}`, m0, m1), persistence.SaveOptions{Base: v, Unchanged: 2})
			if tc.file == head {
				require.Error(t, err, "a save over a damaged head is refused")
				assert.ErrorIs(t, err, persistence.ErrDamaged)
				assert.Equal(t, before, snapshotDir(t, dir), "nothing was overwritten")
			}
		})
	}
}

func TestFileStore_ClosedAndBadRoot(t *testing.T) {
	s, _ := fileStore(t)
	require.NoError(t, s.Close())
	_, err := s.Load(context.Background(), persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"})
	assert.ErrorIs(t, err, persistence.ErrClosed)
	_, err = persistence.NewFileStore("")
	assert.Error(t, err)
	f := filepath.Join(t.TempDir(), "file")
	write(t, f, "x")
	_, err = persistence.NewFileStore(filepath.Join(f, "sub"))
	assert.Error(t, err, "a root under a file")
}

func truncate(t *testing.T, p string) {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	write(t, p, string(b[:len(b)/2]))
}

func write(t *testing.T, p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }

func edit(t *testing.T, p, old, new string) {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	write(t, p, strings.Replace(string(b), old, new, 1))
}

// snapshotDir maps every file to its contents.
func snapshotDir(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}
