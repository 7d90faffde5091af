package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// `braid session show` prints an orchestrator's record: the run's status,
// each node's, and the interrupts a node waits for.
func TestSession_ShowPrintsAGraphRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	m, err := persistence.NewSessionManager(st, "gs")
	require.NoError(t, err)
	text := func(s string) actors.Node {
		return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) { return model.TextTurn(s), nil })})
	}
	gateB := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		_, err := ev.Interrupt("approval", map[string]string{"node": "b"})
		return err
	})
	g, err := graph.NewBuilder().AddNode("a", text("a done")).AddNode("b", text("b done")).AddEdge("a", "b").
		Build(ctx, graph.Config{ID: "g", Session: m, System: sys, Hooks: []hook.Provider{gateB}})
	require.NoError(t, err)
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.NoError(t, sys.Close(ctx))
	require.NoError(t, st.Close())

	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &so, &se), se.String())
	assert.Regexp(t, `(?m)^gs\s+2\s.*\swaiting$`, so.String())
	so.Reset()
	require.Equal(t, 0, run(ctx, []string{"session", "show", "-dir", dir, "gs"}, nil, &so, &se), se.String())
	out := so.String()
	assert.Contains(t, out, "graph g: INTERRUPTED")
	assert.Contains(t, out, "node a")
	assert.Contains(t, out, "COMPLETED")
	assert.Contains(t, out, "waiting for "+res.Interrupts[0].ID)
	assert.Contains(t, out, `reason={"node":"b"}`)
	assert.Contains(t, out, "agent g:a:a")
}

// `braid session export`, `delete` and `import` move a waiting run: the
// demo stops at its approval, its session is exported to a file and
// deleted, a fresh folder's store (created by the import) and the first
// one get it back, and the demo resumes it from there without asking the
// model again. An import over a stored session (which says the session
// exists and to delete it first), a file that is not an export, and an
// export edited to another session id are refused and write nothing
// (SPEC S5); deleting a session that is not stored says so.
func TestSession_ExportDeleteImportMovesAWaitingRun(t *testing.T) {
	ctx := context.Background()
	ws, store := waitingDemo(t)

	code, exported, se := cli("export", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	file := filepath.Join(t.TempDir(), "demo.json")
	require.NoError(t, os.WriteFile(file, []byte(exported), 0o600))

	code, so, se := cli("delete", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	assert.Equal(t, "deleted session demo: 1 record\n", so)
	code, so, _ = cli("list", "-dir", store)
	require.Equal(t, 0, code)
	assert.NotContains(t, so, "demo")
	code, _, se = cli("delete", "-dir", store, "demo")
	assert.Equal(t, 1, code)
	assert.Contains(t, se, `session "demo": not found`)

	other := filepath.Join(t.TempDir(), "store")
	for _, dir := range []string{other, store} {
		code, so, se = cli("import", "-dir", dir, file)
		require.Equal(t, 0, code, se)
		assert.Equal(t, "imported session demo: 1 record\n", so)
		code, so, se = cli("export", "-dir", dir, "demo")
		require.Equal(t, 0, code, se)
		assert.Equal(t, recordsOf(t, exported), recordsOf(t, so), "the records as exported (versions start again)")
	}

	code, _, se = cli("import", "-dir", other, file)
	assert.Equal(t, 1, code)
	assert.Contains(t, se, `braid session: session "demo": the session already exists in the store`)
	assert.Contains(t, se, "delete it first with braid session delete -dir "+shellWord(other)+" demo")
	assert.NotContains(t, se, "another writer")
	moved := filepath.Join(t.TempDir(), "moved.json")
	require.NoError(t, os.WriteFile(moved, []byte(strings.Replace(exported, `"sessionId": "demo"`, `"sessionId": "copy"`, 1)), 0o600))
	notExport := filepath.Join(t.TempDir(), "other.json")
	require.NoError(t, os.WriteFile(notExport, []byte(`{"session":"demo","records":[]}`), 0o600))
	trailing := filepath.Join(t.TempDir(), "trailing.json")
	require.NoError(t, os.WriteFile(trailing, []byte(exported+"\n{not json"), 0o600))
	for file, want := range map[string]string{moved: `is of session "demo"`, notExport: "not an exported session",
		trailing: "more after the session's JSON"} {
		code, _, se = cli("import", "-dir", other, file)
		assert.Equal(t, 1, code)
		assert.Contains(t, se, want)
		fresh := filepath.Join(t.TempDir(), "fresh")
		code, _, _ = cli("import", "-dir", fresh, file)
		assert.Equal(t, 1, code)
		assert.NoDirExists(t, fresh, "a refused import creates no store")
	}
	code, so, _ = cli("list", "-dir", other)
	require.Equal(t, 0, code)
	assert.NotContains(t, so, "copy", "the refused import wrote nothing")

	var out bytes.Buffer
	require.NoError(t, runDemo(ctx, []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "resuming the run saved in")
	assert.Contains(t, out.String(), "this invocation: 1 model call, 1 tool run")
	assert.Contains(t, out.String(), "Done: the old files are deleted.")
}

// recordsOf returns an export's records without their versions and times,
// which an import starts again.
func recordsOf(t *testing.T, text string) []export.Record {
	t.Helper()
	var exp export.Session
	require.NoError(t, json.Unmarshal([]byte(text), &exp), text)
	for i := range exp.Records {
		exp.Records[i].Version, exp.Records[i].UpdatedAt = 0, time.Time{}
		exp.Records[i].Data = compactJSON(t, exp.Records[i].Data)
	}
	return exp.Records
}

func compactJSON(t *testing.T, b json.RawMessage) json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, b))
	return buf.Bytes()
}

// `braid session list -status` tells a session waiting for answers, one
// whose run is done, one cut off short of its end (in a tool cycle, or
// before the model answered its prompt), and a damaged one, without
// failing on the damage.
func TestSession_ListStatusTellsWaitingIdleIncompleteAndDamaged(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(ctx, []string{"-later", "-dir", ws}, strings.NewReader(""), &out))
	dir := filepath.Join(ws, ".braid")
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	save := func(session, data string) {
		t.Helper()
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
			Key: persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(data)})
		require.NoError(t, err)
	}
	save("cut", `{"state":{},"interrupts":{"activated":false,"interrupts":[]},"pending":{"kind":"tools"}}`)
	save("broken", `{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)
	// a prompt the model has not answered (a crash during the model call)
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key: persistence.Key{SessionID: "asked", Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`),
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"text":"hi"}]}`)}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	execSQL(t, dir, `UPDATE braid_records SET data = '{"state":' WHERE session_id = 'broken'`)

	list := func() string {
		t.Helper()
		var so, se bytes.Buffer
		require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &so, &se), se.String())
		return so.String()
	}
	got := list()
	assert.Regexp(t, `(?m)^SESSION\s+RECORDS\s+UPDATED\s+STATUS$`, got)
	assert.Regexp(t, `(?m)^demo\s+1\s.*\swaiting$`, got)
	assert.Regexp(t, `(?m)^cut\s+1\s.*\sincomplete$`, got)
	assert.Regexp(t, `(?m)^asked\s+1\s.*\sincomplete$`, got)
	assert.Regexp(t, `(?m)^broken\s+1\s.*\sdamaged$`, got)

	require.NoError(t, runDemo(ctx, []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Regexp(t, `(?m)^demo\s+1\s.*\sidle$`, list())
}

// `braid session list` lists a store with a damaged session, marking it,
// and `braid session delete` clears the damaged session and deletes a
// sound one beside it.
func TestSession_DeleteWorksWhateverTheDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	for _, id := range []string{"bad", "good"} {
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
			Key:  persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
			Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	execSQL(t, dir, `UPDATE braid_records SET updated_at = 'yesterday', data = '{' WHERE session_id = 'bad'`)

	var listed, le bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &listed, &le), le.String())
	assert.Regexp(t, `(?m)^bad\s+1\s+\(damaged\)\s+damaged$`, listed.String())
	assert.Regexp(t, `(?m)^good\s+1\s+\d{4}-.*\sidle$`, listed.String())
	for _, id := range []string{"good", "bad"} {
		var so, se bytes.Buffer
		require.Equal(t, 0, run(ctx, []string{"session", "delete", "-dir", dir, id}, nil, &so, &se), se.String())
		assert.Equal(t, "deleted session "+id+": 1 record\n", so.String())
	}
	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-dir", dir}, nil, &so, &se), se.String())
	assert.Equal(t, 1, strings.Count(so.String(), "\n"), "only the header: %s", so.String())
}

// execSQL runs stmt on the SQLite store in dir by hand, as another
// program would (to damage it).
func execSQL(t *testing.T, dir, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, sqlite.FileName))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(stmt)
	require.NoError(t, err)
}

// SPEC S5: `braid session show`, `export` and `list -status` read an
// agent's record as the session manager loads it: data it would refuse
// (an unknown key, whether or not the rest is sound) is a damaged record
// named by session, owner and part, exit status 1, with nothing printed on
// stdout; `import` refuses such an export, or one with a damaged message,
// and writes nothing (no store created, no session added).
func TestSession_ShowExportImportRefuseDamagedRecords(t *testing.T) {
	_, store := waitingDemo(t)
	code, exported, se := cli("export", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	var exp export.Session
	require.NoError(t, json.Unmarshal([]byte(exported), &exp))
	require.Len(t, exp.Records, 1)
	sound := string(compactJSON(t, exp.Records[0].Data))

	for _, data := range []string{`{"bogus":1}`, strings.TrimSuffix(sound, "}") + `,"bogus":1}`} {
		execSQL(t, store, `UPDATE braid_records SET data = '`+data+`' WHERE session_id = 'demo'`)
		for _, sub := range []string{"show", "export"} {
			code, so, se := cli(sub, "-dir", store, "demo")
			assert.Equal(t, exitFailure, code, "%s %s", sub, data)
			assert.Contains(t, se, `braid session: session "demo" agent "default": data: damaged session data`, "%s %s", sub, data)
			assert.Contains(t, se, `"bogus"`, "%s %s", sub, data)
			assert.Empty(t, so, "%s %s", sub, data)
		}
		code, so, se := cli("list", "-status", "-dir", store)
		require.Equal(t, 0, code, se)
		assert.Regexp(t, `(?m)^demo\s+1\s.*\sdamaged$`, so, data)
	}

	other := filepath.Join(t.TempDir(), "other")
	for part, edit := range map[string]func(*export.Record){
		"data": func(r *export.Record) { r.Data = json.RawMessage(`{"bogus":1}`) },
		"message 0": func(r *export.Record) {
			r.Messages[0] = json.RawMessage(`{"role":"user","content":[{"text":"hi"}],"bogus":1}`)
		},
	} {
		damaged := exp
		damaged.Records = []export.Record{exp.Records[0]}
		damaged.Records[0].Messages = append([]json.RawMessage(nil), exp.Records[0].Messages...)
		edit(&damaged.Records[0])
		b, err := json.Marshal(damaged)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "damaged.json")
		require.NoError(t, os.WriteFile(file, b, 0o600))

		code, _, se := cli("import", "-dir", other, file)
		assert.Equal(t, exitFailure, code, part)
		assert.Contains(t, se, `session "demo" agent "default": `+part+`: damaged session data`, part)
		assert.NoDirExists(t, other, "%s: a refused import creates no store", part)
	}
}

// `braid session show` refuses an orchestrator's record that does not read
// as a run, naming it, exit status 1; `list -status` calls it damaged.
func TestSession_ShowRefusesARunRecordThatDoesNotRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key: persistence.Key{SessionID: "gs", Kind: persistence.KindMultiAgent, ID: "g"}, Data: json.RawMessage(`{"bogus":1}`)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	var so, se bytes.Buffer
	assert.Equal(t, exitFailure, run(ctx, []string{"session", "show", "-dir", dir, "gs"}, nil, &so, &se))
	assert.Contains(t, se.String(), `braid session: session "gs" multi_agent "g": data: damaged session data: run record: does not read back as written`)
	so.Reset()
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &so, &se), se.String())
	assert.Regexp(t, `(?m)^gs\s+1\s.*\sdamaged$`, so.String())
}

// `braid session show` clips long text at a character boundary: the cut
// text is valid UTF-8 (cutting at byte 97 split "é" in two), 100
// characters with the "...", and short text is left whole.
func TestClip_CutsAtACharacterBoundary(t *testing.T) {
	for _, s := range []string{strings.Repeat("é", 150), "a" + strings.Repeat("日本", 80), strings.Repeat("x", 99) + "ü😀 end"} {
		got := clip(s)
		assert.True(t, utf8.ValidString(got), "%q", got)
		assert.Equal(t, 100, utf8.RuneCountInString(got), "%q", got)
		assert.True(t, strings.HasSuffix(got, "..."), "%q", got)
		assert.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, "...")), "%q", got)
	}
	assert.Equal(t, "short é line two", clip("short é\nline two"))
	exact := strings.Repeat("é", 100)
	assert.Equal(t, exact, clip(exact), "100 characters are not cut")
}

// Only a store that does not exist is "no store in DIR"; one that cannot
// be looked at is reported as it is: a -dir under a regular file (stat
// fails with ENOTDIR, whoever runs the test), and, when not root (root
// reads any folder), a folder of mode 0 (permission denied).
func TestSession_AnUnreadableStoreIsNotCalledMissing(t *testing.T) {
	cli := func(dir string) (int, string) {
		var so, se bytes.Buffer
		return run(context.Background(), []string{"session", "list", "-dir", dir}, nil, &so, &se), se.String()
	}
	code, se := cli(filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "no store in")
	assert.Contains(t, se, "-dir takes a folder that holds a braid.db", "what -dir wants, not to give the -dir the user gave")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	code, se = cli(filepath.Join(file, "store"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "not a directory")
	assert.NotContains(t, se, "no store")

	if os.Geteuid() == 0 || runtime.GOOS == "windows" { // Windows: no Unix modes
		return
	}
	locked := t.TempDir()
	require.NoError(t, os.Chmod(locked, 0))
	t.Cleanup(func() { _ = os.Chmod(locked, 0o700) })
	code, se = cli(locked)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "permission denied")
	assert.NotContains(t, se, "no store")
}

// `braid session list -status`: a run that ended FAILED waits for nothing,
// even when a node's agent under it holds an interrupt (its tool asked
// for approval while a sibling node failed); show says the node was
// interrupted, not that the run waits.
func TestSession_ListStatusCallsAFailedRunIdleWhateverItsNodesHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	m, err := persistence.NewSessionManager(st, "fs")
	require.NoError(t, err)
	ask := tool.New("ask", "asks for approval", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if _, err := tc.Interrupt("approval", nil); err != nil {
			return "", err
		}
		return "approved", nil
	})
	asker := agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.Scripted(
		model.ToolTurn(model.Call("t1", "ask", nil)), model.TextTurn("done"))})
	fails := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) { return nil, errors.New("boom") })
	info := agentnode.Agent(agent.Config{Model: model.Scripted(model.TextTurn("info"))})
	g, err := graph.NewBuilder().AddNode("info", info).AddNode("fails", fails).AddNode("asks", asker).
		AddEdge("info", "fails").AddEdge("info", "asks").
		Build(ctx, graph.Config{ID: "g", Session: m, System: sys})
	require.NoError(t, err)
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusFailed, res.Status)
	require.Equal(t, multiagent.StatusInterrupted, res.Node("asks").Status)
	require.NoError(t, sys.Close(ctx))
	require.NoError(t, st.Close())

	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &so, &se), se.String())
	assert.Regexp(t, `(?m)^fs\s+\d+\s.*\sidle$`, so.String())
	so.Reset()
	require.Equal(t, 0, run(ctx, []string{"session", "show", "-dir", dir, "fs"}, nil, &so, &se), se.String())
	assert.Contains(t, so.String(), "graph g: FAILED")
}

// `braid session list -status`: a run that has not ended (running now,
// or cut off by a crash) is incomplete, even when a node's agent under it
// already waits in its tool. Cut off there, the graph built again lists
// no interrupt and refuses that agent's answer (ErrNotInterrupted) until
// the run is carried on with the empty input; "waiting" sent the operator
// to answer it. The store is read while a sibling node still runs: what
// a crash at that point leaves.
func TestSession_ListStatusCallsARunningRunIncompleteWhateverItsNodesHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	defer sys.Close(ctx)
	m, err := persistence.NewSessionManager(st, "rs")
	require.NoError(t, err)
	ask := tool.New("ask", "asks for approval", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if _, err := tc.Interrupt("approval", nil); err != nil {
			return "", err
		}
		return "approved", nil
	})
	asker := agentnode.Agent(agent.Config{Tools: []tool.Tool{ask}, Model: model.Scripted(
		model.ToolTurn(model.Call("t1", "ask", nil)), model.TextTurn("done"))})
	release := make(chan struct{})
	slow := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		<-release
		return []model.ContentBlock{model.Text("slow")}, nil
	})
	g, err := graph.NewBuilder().AddNode("asks", asker).AddNode("slow", slow).
		Build(ctx, graph.Config{ID: "g", Session: m, System: sys})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { _, err := g.Invoke(ctx, agent.Text("go")); done <- err }()
	defer func() {
		close(release)
		require.NoError(t, <-done)
	}()
	// Wait until the asks agent's record waits for its answer (it
	// commits with the run's record), while slow still runs.
	require.Eventually(t, func() bool {
		exp, err := export.Read(ctx, st, "rs")
		if err != nil {
			return false
		}
		for _, r := range exp.Records {
			if r.Kind == persistence.KindAgent && strings.Contains(string(r.Data), `"activated":true`) {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-status", "-dir", dir}, nil, &so, &se), se.String())
	assert.Regexp(t, `(?m)^rs\s+\d+\s.*\sincomplete$`, so.String())
}

// waitingDemo runs the demo up to its approval in a new workspace, and
// returns the workspace and its store's folder.
func waitingDemo(t *testing.T) (ws, store string) {
	t.Helper()
	ws = t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-later", "-dir", ws}, strings.NewReader(""), &out))
	return ws, filepath.Join(ws, ".braid")
}

// cli runs `braid session args...` and returns its exit status, stdout and
// stderr.
func cli(args ...string) (int, string, string) {
	var so, se bytes.Buffer
	code := run(context.Background(), append([]string{"session"}, args...), nil, &so, &se)
	return code, so.String(), se.String()
}

// SPEC S5: `braid session list -status` marks a session damaged whose
// record holds a value of the wrong type (text in SQLite's version
// column, put there by hand) and goes on listing the others; `show`
// names the record.
func TestSession_ListStatusMarksAColumnOfTheWrongTypeDamaged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	for _, id := range []string{"bad", "good"} {
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
			Key:  persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
			Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	execSQL(t, dir, `UPDATE braid_records SET version = 'two' WHERE session_id = 'bad'`)

	code, so, se := cli("list", "-status", "-dir", dir)
	require.Equal(t, 0, code, se)
	assert.Regexp(t, `(?m)^bad\s+1\s.*\sdamaged$`, so)
	assert.Regexp(t, `(?m)^good\s+1\s.*\sidle$`, so)
	code, so, se = cli("show", "-dir", dir, "bad")
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, so)
	assert.Contains(t, se, `session "bad" agent "a": record: damaged session data`)
}

// An id that holds a character a terminal does not show as itself (a
// bidirectional override, a line separator; SPEC S2 allows both) is
// printed quoted, with Go's escapes, by list and show: it cannot pass for
// another id or rearrange the line. Plain ids print as they are.
func TestSession_ListAndShowQuoteIdsATerminalWouldNotShowAsThemselves(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	for _, id := range []string{"plain", "evil\u202egnp.exe", "two\u2028lines"} {
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
			Key: persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a\u202eb"}, Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())

	var so, se bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"session", "list", "-dir", dir}, nil, &so, &se), se.String())
	got := so.String()
	assert.Regexp(t, `(?m)^plain\s`, got)
	assert.Contains(t, got, `"evil\u202egnp.exe"`)
	assert.Contains(t, got, `"two\u2028lines"`)
	assert.NotContains(t, got, "\u202e")
	assert.NotContains(t, got, "\u2028")

	so.Reset()
	require.Equal(t, 0, run(ctx, []string{"session", "show", "-dir", dir, "evil\u202egnp.exe"}, nil, &so, &se), se.String())
	assert.Contains(t, so.String(), `session "evil\u202egnp.exe"`)
	assert.Contains(t, so.String(), `"a\u202eb"`)
	assert.NotContains(t, so.String(), "\u202e")
}

// A -dir naming a demo's workspace instead of its store (DIR, not
// DIR/.braid) fails saying where that folder's store is, so a newcomer
// who gave the folder they passed to `braid demo -dir` learns what to
// give instead.
func TestSession_AWorkspaceDirPointsToItsStore(t *testing.T) {
	for _, name := range []string{"ws", "my work's space"} {
		ws := filepath.Join(t.TempDir(), name)
		store, err := sqlite.Open(context.Background(), sqlite.Config{Dir: filepath.Join(ws, sessionsDir)})
		require.NoError(t, err)
		require.NoError(t, store.Close())

		var so, se bytes.Buffer
		code := run(context.Background(), []string{"session", "list", "-dir", ws}, nil, &so, &se)
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, se.String(), "no store in "+ws)
		want := filepath.Join(ws, sessionsDir)
		if name != "ws" || runtime.GOOS == "windows" && strings.ContainsAny(want, " '") {
			want = shellWord(want) // one shell word, to copy
		}
		assert.Contains(t, se.String(), "-dir "+want)
	}
}

// An import given a demo's workspace as -dir (DIR, whose store is
// DIR/.braid) is refused, saying where that folder's store is, and creates
// no store in DIR: the demo, which looks in DIR/.braid, would never find
// a session imported beside it.
func TestSession_ImportIntoAWorkspaceDirPointsToItsStore(t *testing.T) {
	ws, store := waitingDemo(t)
	code, exported, se := cli("export", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	file := filepath.Join(t.TempDir(), "demo.json")
	require.NoError(t, os.WriteFile(file, []byte(exported), 0o600))
	code, _, se = cli("delete", "-dir", store, "demo")
	require.Equal(t, 0, code, se)

	code, _, se = cli("import", "-dir", ws, file)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "-dir "+store)
	assert.NoFileExists(t, filepath.Join(ws, sqlite.FileName), "no second store beside the workspace's")
	code, so, se := cli("list", "-dir", store)
	require.Equal(t, 0, code, se)
	assert.NotContains(t, so, "demo", "nothing imported")
}

// SPEC S5: a session stored under an id no save writes (rows copied by
// hand with SQL: a '/', a byte that is not UTF-8, a control character) or
// holding a record of a kind no save writes is listed as damaged (list
// -status too, which goes on with the others), and can be shown (exit 1,
// saying it is damaged, why, and the command that removes it) and deleted
// by the id as list prints it; deleting one removes its rows alone: every
// other session, the one it was copied from included, keeps its records
// and messages. A record of a newer schema version is not called damage
// to delete: a newer build reads it.
func TestSession_ShowAndDeleteReachSessionsUnderIdsNoSaveWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key:      persistence.Key{SessionID: "keep", Kind: persistence.KindAgent, ID: "a"},
		Data:     json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`),
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"text":"hi"}]}`)}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	_, kept, se := cli("export", "-dir", dir, "keep")
	require.Empty(t, se)
	for _, id := range []string{`'a/b'`, `CAST(X'ff' AS TEXT)`, `'ctl' || char(7)`} {
		for _, table := range []string{"braid_records", "braid_messages"} {
			execSQL(t, dir, `INSERT INTO `+table+` SELECT `+id+`, kind, id, `+
				map[string]string{"braid_records": "schema_version, version, updated_at, data, messages, incarnation", "braid_messages": "seq, data"}[table]+
				` FROM `+table+` WHERE session_id = 'keep'`)
		}
	}
	execSQL(t, dir, `INSERT INTO braid_records SELECT 'kinds', 'tool', id, schema_version, version, updated_at, data, 0, incarnation FROM braid_records WHERE session_id = 'keep'`)
	execSQL(t, dir, `INSERT INTO braid_records SELECT 'newer', kind, id, 2, version, updated_at, data, 0, incarnation FROM braid_records WHERE session_id = 'keep'`)

	shown := []string{"a/b", `"\xff"`, `"ctl\a"`, "kinds"}
	code, so, se := cli("list", "-status", "-dir", dir)
	require.Equal(t, 0, code, se)
	for _, id := range shown {
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(id)+`\s+1\s+\(damaged\)\s+damaged$`, so)
	}
	assert.Regexp(t, `(?m)^keep\s+1\s.*\sincomplete$`, so)

	for _, id := range shown {
		for _, sub := range []string{"show", "export"} {
			code, so, se = cli(sub, "-dir", dir, id)
			assert.Equal(t, 1, code, "%s %s: %s", sub, id, se)
			assert.Empty(t, so)
			assert.Contains(t, se, "damaged", "%s %s", sub, id)
			assert.Contains(t, se, "braid session delete -dir "+shellWord(dir)+" "+shellWord(id), "%s %s", sub, id)
		}
	}
	_, _, se = cli("show", "-dir", dir, `"\xff"`)
	assert.Contains(t, se, "not valid UTF-8")
	_, _, se = cli("show", "-dir", dir, "kinds")
	assert.Contains(t, se, `kind id "tool"`)
	// A record of a newer schema version is a newer build's to read, not
	// damage to delete.
	code, _, se = cli("show", "-dir", dir, "newer")
	assert.Equal(t, 1, code)
	assert.Contains(t, se, "schema version 2")
	assert.Contains(t, se, "newer Braid")
	assert.NotContains(t, se, "braid session delete")

	for _, id := range shown {
		code, so, se = cli("delete", "-dir", dir, id)
		require.Equal(t, 0, code, "%s: %s", id, se)
		assert.Equal(t, "deleted session "+id+": 1 record\n", so)
		code, _, se = cli("delete", "-dir", dir, id)
		assert.Equal(t, 1, code)
		assert.Contains(t, se, "not found")
		assert.Contains(t, se, "in the store in "+dir)
	}
	code, so, se = cli("list", "-dir", dir)
	require.Equal(t, 0, code, se)
	assert.Equal(t, 3, strings.Count(so, "\n"), "the header, keep and newer: %s", so)
	_, exported, se := cli("export", "-dir", dir, "keep")
	assert.Empty(t, se)
	assert.Equal(t, kept, exported, "keep's records and messages are as they were")
}

// `braid session list`, `show` and `export` open the store read-only: in
// a folder whose braid.db holds no tables (an empty file) they say there
// is no store and leave the file as it was, and they read beside a writer
// that holds SQLite's write lock, without waiting for it.
func TestSession_InspectionOpensTheStoreReadOnly(t *testing.T) {
	empty := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(empty, sqlite.FileName), nil, 0o600))
	code, _, se := cli("list", "-dir", empty)
	assert.Equal(t, 1, code)
	assert.Contains(t, se, "no store in "+empty)
	fi, err := os.Stat(filepath.Join(empty, sqlite.FileName))
	require.NoError(t, err)
	assert.Zero(t, fi.Size(), "no tables created")

	_, store := waitingDemo(t)
	db, err := sql.Open("sqlite", filepath.Join(store, sqlite.FileName))
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE") // another writer's write lock
	require.NoError(t, err)
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // under the 10s busy timeout
	defer cancel()
	for _, args := range [][]string{{"list", "-status"}, {"show", "demo"}, {"export", "demo"}} {
		var so, se bytes.Buffer
		assert.Equal(t, 0, run(ctx, append([]string{"session", args[0], "-dir", store}, args[1:]...), nil, &so, &se), "%v: %s", args, se.String())
		assert.Contains(t, so.String(), "demo", "%v", args)
	}
}

// SPEC S2, S5: an id that saves write may itself be in double quotes
// ("a", with the quotes, is a valid session id). Such an argument names
// that session, as it did before quoted ids were read back: only the form
// list prints for an id (shownID) is read as a Go string literal. show
// and delete of "a" reach "a", never the session a; the quoted form list
// prints for "a" reaches it too.
func TestSession_AQuotedIdThatSavesWriteNamesThatSessionNotAnother(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	for _, id := range []string{"a", `"a"`, `"b"`} {
		_, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
			Key:      persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "x"},
			Data:     json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`),
			Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"text":"hi"}]}`)}})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	_, keptA, se := cli("export", "-dir", dir, "a")
	require.Empty(t, se)

	code, so, se := cli("export", "-dir", dir, `"a"`)
	require.Equal(t, 0, code, se)
	assert.Contains(t, so, `"\"a\""`, "the export is of the session \"a\"")

	code, so, se = cli("delete", "-dir", dir, `"a"`)
	require.Equal(t, 0, code, se)
	assert.Equal(t, `deleted session "\"a\"": 1 record`+"\n", so)
	code, _, se = cli("delete", "-dir", dir, `"\"b\""`)
	require.Equal(t, 0, code, "the form list prints for \"b\" names it: %s", se)

	code, so, se = cli("list", "-dir", dir)
	require.Equal(t, 0, code, se)
	assert.Equal(t, 2, strings.Count(so, "\n"), "the header and a: %s", so)
	_, exported, se := cli("export", "-dir", dir, "a")
	assert.Empty(t, se)
	assert.Equal(t, keptA, exported, "the session a is as it was")
}

// SPEC S5: a session stored by hand under the empty id, which no save
// writes, is listed with its id as "" (quoted, so that the line shows it),
// and that form reaches it: show says it is damaged and how to remove it,
// delete removes its rows alone.
func TestSession_ShowAndDeleteReachASessionUnderTheEmptyID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	_, err = st.Save(ctx, persistence.SaveOptions{}, persistence.Change{
		Key:      persistence.Key{SessionID: "keep", Kind: persistence.KindAgent, ID: "a"},
		Data:     json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`),
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":[{"text":"hi"}]}`)}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	_, kept, se := cli("export", "-dir", dir, "keep")
	require.Empty(t, se)
	execSQL(t, dir, `INSERT INTO braid_records SELECT '', kind, id, schema_version, version, updated_at, data, messages, incarnation FROM braid_records WHERE session_id = 'keep'`)
	execSQL(t, dir, `INSERT INTO braid_messages SELECT '', kind, id, seq, data FROM braid_messages WHERE session_id = 'keep'`)

	code, so, se := cli("list", "-status", "-dir", dir)
	require.Equal(t, 0, code, se)
	assert.Regexp(t, `(?m)^""\s+1\s+\(damaged\)\s+damaged$`, so)

	code, so, se = cli("show", "-dir", dir, `""`)
	assert.Equal(t, 1, code, se)
	assert.Empty(t, so)
	assert.Contains(t, se, "damaged")
	assert.Contains(t, se, "braid session delete -dir "+shellWord(dir)+" "+shellWord(`""`))

	code, so, se = cli("delete", "-dir", dir, `""`)
	require.Equal(t, 0, code, se)
	assert.Equal(t, `deleted session "": 1 record`+"\n", so)
	_, exported, se := cli("export", "-dir", dir, "keep")
	assert.Empty(t, se)
	assert.Equal(t, kept, exported, "keep's records and messages are as they were")
}

// A path or id a message asks the user to type is one word of the
// system's command line: in single quotes for a POSIX shell, in double
// quotes on Windows (escaped as a Windows program splits its command
// line), and bare when nothing in it needs quoting.
func TestShellWord_IsOneWordOfTheSystemsCommandLine(t *testing.T) {
	for _, c := range []struct{ goos, in, want string }{
		{"linux", "/tmp/ws/.braid", "/tmp/ws/.braid"},
		{"linux", "a%41", "a%41"},
		{"linux", "my work's space", `'my work'\''s space'`},
		{"linux", "", "''"},
		{"windows", `C:\Users\a\.braid`, `C:\Users\a\.braid`},
		{"windows", `C:\Users\my work's space\.braid`, `"C:\Users\my work's space\.braid"`},
		{"windows", `a"b`, `"a\"b"`},
		{"windows", `a\"b`, `"a\\\"b"`},
		{"windows", `x y\`, `"x y\\"`},
		{"windows", `""`, `"\"\""`},
		{"windows", "", `""`},
		{"windows", "a%41", `"a%41"`},
	} {
		assert.Equal(t, c.want, shellWordFor(c.goos, c.in), "%s %q", c.goos, c.in)
	}
}

// The `braid session delete` command that a refused import or a damaged
// session's show suggests names the store the refused command used, so
// that copied as it is it deletes the session there, not one of that id
// in the default store (.braid, or $BRAID_STORE_DIR).
func TestSession_SuggestedDeleteNamesTheStoreUsed(t *testing.T) {
	_, store := waitingDemo(t)
	code, exported, se := cli("export", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	file := filepath.Join(t.TempDir(), "demo.json")
	require.NoError(t, os.WriteFile(file, []byte(exported), 0o600))

	code, _, se = cli("import", "-dir", store, file)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "braid session delete -dir "+shellWord(store)+" demo")

	dir := filepath.Join(t.TempDir(), "with space")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir})
	require.NoError(t, err)
	for _, id := range []string{"bad", "-bad"} {
		_, err = st.Save(context.Background(), persistence.SaveOptions{}, persistence.Change{
			Key:  persistence.Key{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
			Data: json.RawMessage(`{"state":{},"interrupts":{"activated":false,"interrupts":[]}}`)})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	execSQL(t, dir, `UPDATE braid_records SET data = '{"nope":1}'`)
	code, _, se = cli("show", "-dir", dir, "bad")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "braid session delete -dir "+shellWord(dir)+" bad removes the session", se)
	// An id that begins with '-' is suggested after "--", which the
	// command reads as the id, not as a flag.
	code, _, se = cli("show", "-dir", dir, "--", "-bad")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, se, "braid session delete -dir "+shellWord(dir)+" -- -bad removes the session", se)
	code, so, se := cli("delete", "-dir", dir, "--", "-bad")
	assert.Equal(t, 0, code, se)
	assert.Equal(t, "deleted session -bad: 1 record\n", so)
}

// A -dir that names the SQLite database file itself (DIR/braid.db)
// rather than its folder is refused, by every subcommand, with the -dir
// to give instead, and nothing is created.
func TestSession_DirNamingTheDatabaseFileSaysToGiveItsFolder(t *testing.T) {
	_, store := waitingDemo(t)
	code, exported, se := cli("export", "-dir", store, "demo")
	require.Equal(t, 0, code, se)
	file := filepath.Join(t.TempDir(), "demo.json")
	require.NoError(t, os.WriteFile(file, []byte(exported), 0o600))
	db := filepath.Join(store, sqlite.FileName)
	for _, args := range [][]string{{"list"}, {"show", "demo"}, {"export", "demo"}, {"delete", "demo"}, {"import", file}} {
		code, so, se := cli(append(args, "-dir", db)...)
		assert.Equal(t, exitFailure, code, "%v", args)
		assert.Empty(t, so, "%v", args)
		assert.Contains(t, se, "give -dir "+shellWord(store), "%v: %s", args, se)
	}
	code, so, se := cli("list", "-dir", store)
	require.Equal(t, 0, code, se)
	assert.Contains(t, so, "demo", "the session is still there")
}
