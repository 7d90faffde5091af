package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/sqlite"
)

func remaining(t *testing.T, ws string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(ws, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() && info.Name() == ".braid" {
			return filepath.SkipDir // the session
		}
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	}))
	sort.Strings(out)
	return out
}

func TestDemo_ApproveDeletesOnlyOldFiles(t *testing.T) {
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
	assert.Contains(t, out.String(), `!! interrupt "demo-approval"`)
	assert.Contains(t, out.String(), "Do you want to delete [logs/app-2026-11-02.log logs/app-2026-11-27.log tmp/cache.bin] (y/N): y (-yes)")
	assert.Contains(t, out.String(), "Done: the old files are deleted.")
}

func TestDemo_DenyKeepsEverything(t *testing.T) {
	for name, tc := range map[string]struct {
		args  []string
		stdin string
	}{
		"flag":         {[]string{"-no"}, ""},
		"typed n":      {nil, "n\n"},
		"enter":        {nil, "\n"},
		"end of input": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			var out bytes.Buffer
			require.NoError(t, runDemo(context.Background(), append(tc.args, "-dir", ws), strings.NewReader(tc.stdin), &out))
			assert.Len(t, remaining(t, ws), 5)
			assert.Contains(t, out.String(), "I did not delete anything: User denied permission to delete files.")
		})
	}
}

// SPEC S1, I9: with -later the run stops at the approval and the process
// ends; the next run on the same folder (a new store and agent) finds the
// run waiting in the SQLite store and resumes it with the answer, without
// asking the model again. In between, `braid session` shows the waiting run.
func TestDemo_AnswerInALaterRun(t *testing.T) {
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-later", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), `!! interrupt "demo-approval"`)
	assert.Contains(t, out.String(), "braid demo -dir "+ws+" [-yes|-no]")
	assert.Len(t, remaining(t, ws), 5, "nothing deleted yet")
	assert.FileExists(t, filepath.Join(ws, ".braid", "braid.db"))

	store := filepath.Join(ws, ".braid")
	var so, se bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"session", "list", "-dir", store}, nil, &so, &se), se.String())
	assert.Regexp(t, `(?m)^demo\s+1\s`, so.String())
	so.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"session", "show", "-dir", store, "demo"}, nil, &so, &se), se.String())
	shown := so.String()
	so.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"session", "show", "demo", "-dir", store}, nil, &so, &se), se.String())
	assert.Equal(t, shown, so.String(), "flags after the id too")
	assert.Contains(t, so.String(), "agent default")
	assert.Contains(t, so.String(), "waiting for:")
	assert.Contains(t, so.String(), "name=demo-approval source=hook")
	so.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"session", "export", "-dir", store, "demo"}, nil, &so, &se), se.String())
	var exp export.Session
	require.NoError(t, json.Unmarshal(so.Bytes(), &exp), so.String())
	require.Len(t, exp.Records, 1)
	assert.Equal(t, "demo", exp.SessionID)
	assert.Regexp(t, `"activated":\s*true`, string(exp.Records[0].Data))

	out.Reset()
	require.NoError(t, runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "resuming the run saved in")
	assert.NotContains(t, out.String(), "you: ", "no new prompt")
	assert.Contains(t, out.String(), "Done: the old files are deleted.")
	assert.Contains(t, out.String(), "this invocation: 1 model call, 1 tool run")
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
	_, listing, ok := strings.Cut(out.String(), "workspace now:")
	require.True(t, ok)
	assert.NotContains(t, listing, ".braid", "the listing leaves the session out")
}

func TestDemo_TypedYes(t *testing.T) {
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-dir", ws}, strings.NewReader("Y\n"), &out))
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
}

func TestDemo_LaterFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"-later"}, {"-later", "-yes", "-dir", "x"}} {
		var out bytes.Buffer
		assert.Error(t, runDemo(context.Background(), args, strings.NewReader(""), &out), "%v", args)
	}
}

func TestDemo_BadFlags(t *testing.T) {
	var out bytes.Buffer
	err := runDemo(context.Background(), []string{"-yes", "-no"}, strings.NewReader(""), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exclude each other")
}

func TestWorkspacePaths_RejectEscapes(t *testing.T) {
	for _, p := range []string{"../x", "/etc/passwd", "a/../../b"} {
		_, err := inWorkspace("/ws", p)
		assert.Error(t, err, p)
	}
	got, err := inWorkspace("/ws", "logs/a.log")
	require.NoError(t, err)
	assert.Equal(t, filepath.FromSlash("/ws/logs/a.log"), got)
	got, err = inWorkspace("/ws", ".")
	require.NoError(t, err)
	assert.Equal(t, filepath.FromSlash("/ws"), got)
}

// The session commands report a failure (exit status 1) with a clear
// error, and reading creates no store.
func TestSession_CommandErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"session", "list", "-dir", dir}, {"session", "show", "-dir", dir, "x"},
		{"session", "show", "-dir", dir, "--", "-x"}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, exitFailure, run(context.Background(), args, nil, &out, &errOut), "%v", args)
		assert.Contains(t, errOut.String(), "braid session:", "%v", args)
	}
	assert.NoFileExists(t, filepath.Join(dir, "braid.db"))
}

func TestRun_Commands(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), nil, strings.NewReader(""), &out, &errOut))
	assert.Equal(t, 2, run(context.Background(), []string{"nope"}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown command "nope"`)
	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, out.String(), "demo")
	assert.Equal(t, 0, run(context.Background(), []string{"demo", "-no"}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, out.String(), "I did not delete anything", "demo without an argument is the agent demo")
	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, strings.NewReader(""), &out, &errOut))
	assert.Contains(t, out.String(), "demo graph")
}

// SPEC M3: `braid demo graph` streams the seed's Graph example; the hook
// stops the graph before cleanup, and "y" (typed, or -yes) runs the node.
func TestDemoGraph_ApproveRunsCleanup(t *testing.T) {
	for name, tc := range map[string]struct {
		args  []string
		stdin string
	}{
		"flag":    {[]string{"-yes"}, ""},
		"typed y": {nil, "y\n"},
		"typed Y": {nil, "Y\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run(context.Background(), append([]string{"demo", "graph"}, tc.args...), strings.NewReader(tc.stdin), &out, &errOut), errOut.String())
			s := out.String()
			assert.Contains(t, s, "[default_graph/inspector] COMPLETED: Found 3 resources older than 5 days")
			assert.Contains(t, s, "[default_graph/cleanup] INTERRUPTED: waits for 1 answer(s)")
			assert.Contains(t, s, `!! interrupt "myapp-approval" from multiagent-hook before default_graph/cleanup`)
			assert.Contains(t, s, "Do you want to cleanup [bucket-logs-2026-10 vm-build-17 disk-snapshot-4] (y/N): ")
			assert.Contains(t, s, "[default_graph/cleanup]   -> delete_resources")
			assert.Contains(t, s, "[default_graph/cleanup] COMPLETED: Cleaned up 3 resources")
			assert.Contains(t, s, "graph status: COMPLETED (node runs: inspector, cleanup)")
			assert.Contains(t, s, "deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]")
			assert.Equal(t, 1, strings.Count(s, "[default_graph/inspector] started"), "inspector runs once")
			_, afterAnswer, ok := strings.Cut(s, "(y/N): ")
			require.True(t, ok)
			assert.NotContains(t, afterAnswer, "[default_graph/inspector]", "the resume does not run inspector again")
		})
	}
}

// SPEC M3: any other answer, or none, cancels the cleanup node: it ends
// CANCELLED without running, so nothing is deleted.
func TestDemoGraph_DenyCancelsCleanup(t *testing.T) {
	for name, tc := range map[string]struct {
		args  []string
		stdin string
	}{
		"flag":         {[]string{"-no"}, ""},
		"typed n":      {nil, "n\n"},
		"enter":        {nil, "\n"},
		"end of input": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, runDemo(context.Background(), append([]string{"graph"}, tc.args...), strings.NewReader(tc.stdin), &out))
			s := out.String()
			assert.Contains(t, s, "[default_graph/cleanup] CANCELLED: User denied permission to cleanup resources")
			assert.Contains(t, s, "graph status: CANCELLED")
			assert.Contains(t, s, "deleted: []")
			assert.NotContains(t, s, "delete_resources", "the cancelled node's agent never ran")
			assert.NotContains(t, s, "[default_graph/cleanup] started")
		})
	}
}

func TestDemoGraph_BadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"graph", "-yes", "-no"}, "exclude each other"},
		{[]string{"graph", "extra"}, "takes no argument"},
		{[]string{"graph", "-model", "gpt-4o"}, "openai:<model>"},
	} {
		var out bytes.Buffer
		err := runDemo(context.Background(), tc.args, strings.NewReader(""), &out)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// Asking a command or subcommand for help prints its usage and exits 0,
// with no error line; nothing runs and no store is created.
func TestRun_HelpPrintsUsageAndExitsZero(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"session", "help"}, {"session", "--help"},
		{"session", "-h"}, {"session", "list", "-h"}, {"session", "show", "-help"}, {"demo", "-h"}, {"demo", "graph", "--help"}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 0, run(context.Background(), args, strings.NewReader(""), &out, &errOut), "%v", args)
		all := out.String() + errOut.String()
		assert.NotContains(t, all, "help requested", "%v", args)
		assert.NotContains(t, all, "unknown", "%v", args)
		assert.Regexp(t, `usage|Usage`, all, "%v", args)
	}
	assert.NoDirExists(t, filepath.Join(dir, ".braid"))
}

// The demo deletes files, so -dir naming a folder that holds the user's
// files (not one an earlier braid demo made) is refused, exit status 1:
// nothing in it is written, changed or deleted, and no store is created.
func TestDemo_RefusesAFolderItDidNotMake(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644))
	thesis := filepath.Join(ws, "thesis.docx")
	require.NoError(t, os.WriteFile(thesis, []byte("precious\n"), 0o644))
	old := time.Now().Add(-20 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(thesis, old, old))

	var out bytes.Buffer
	err := runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &out)
	require.ErrorIs(t, err, errNotDemoWorkspace)
	assert.Contains(t, err.Error(), "notes.txt, thesis.docx")

	var so, se bytes.Buffer
	assert.Equal(t, exitFailure, run(context.Background(), []string{"demo", "-yes", "-dir", ws}, strings.NewReader(""), &so, &se))
	assert.Contains(t, se.String(), "braid demo: -dir "+ws+": the folder holds files that braid demo did not create")

	assert.Equal(t, []string{"notes.txt", "thesis.docx"}, remaining(t, ws))
	for file, want := range map[string]string{"notes.txt": "mine\n", "thesis.docx": "precious\n"} {
		b, err := os.ReadFile(filepath.Join(ws, file))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), file)
	}
	assert.NoDirExists(t, filepath.Join(ws, ".braid"))
}

// -dir naming a folder that does not exist yet creates it and runs there;
// a later run on it (the folder the demo made) runs again.
func TestDemo_CreatesANewFolderAndRunsAgainInIt(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "a", "ws")
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-no", "-dir", ws}, strings.NewReader(""), &out))
	assert.Len(t, remaining(t, ws), 5)
	out.Reset()
	require.NoError(t, runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "Done: the old files are deleted.")
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
}

// Files the user puts into a demo workspace are not the demo's: the agent
// neither lists nor deletes them, however old, and delete_files refuses
// any path but a sample file's (deleting none of the paths it was given).
func TestDemo_ToolsTouchOnlyTheSampleFiles(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), []string{"-no", "-dir", ws}, strings.NewReader(""), &out))
	old := time.Now().Add(-20 * 24 * time.Hour)
	for _, p := range []string{"thesis.docx", "logs/mine.log"} {
		full := filepath.Join(ws, p)
		require.NoError(t, os.WriteFile(full, []byte("precious\n"), 0o644))
		require.NoError(t, os.Chtimes(full, old, old))
	}

	out.Reset()
	require.NoError(t, runDemo(context.Background(), []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "Do you want to delete [logs/app-2026-11-02.log logs/app-2026-11-27.log tmp/cache.bin] (y/N): y (-yes)")
	assert.Equal(t, []string{"logs/app-today.log", "logs/mine.log", "notes.txt", "thesis.docx"}, remaining(t, ws))

	_, err := deleteTool(ws).Run(context.Background(), nil, json.RawMessage(`{"paths":["notes.txt","thesis.docx"]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"thesis.docx" is not one of the demo's sample files`)
	assert.FileExists(t, filepath.Join(ws, "notes.txt"), "a refused call deletes none of its paths")
	assert.FileExists(t, filepath.Join(ws, "thesis.docx"))
}

// SPEC S1, A3: a demo run cut off before the model answered (its history
// ends with the prompt: a crash during the model call) is carried on by
// the next `braid demo` on the folder, not prompted again (which the
// agent refuses, ErrIncompleteRun).
func TestDemo_CarriesOnARunCutOffBeforeItFinished(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(ctx, []string{"-later", "-dir", ws}, strings.NewReader(""), &out))
	// What a crash during the first model call leaves: the prompt alone.
	store, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(ws, ".braid")})
	require.NoError(t, err)
	_, err = store.DeleteSession(ctx, "demo")
	require.NoError(t, err)
	sm, err := persistence.NewSessionManager(store, "demo")
	require.NoError(t, err)
	a, err := agent.New(ctx, agent.Config{Model: model.Scripted(), Session: sm})
	require.NoError(t, err)
	require.NoError(t, a.SetMessages(ctx, []model.Message{model.UserText("Delete the files in my workspace that are older than 5 days")}))
	require.NoError(t, a.Close(ctx))
	require.NoError(t, store.Close())

	out.Reset()
	require.NoError(t, runDemo(ctx, []string{"-yes", "-dir", ws}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "carrying on the run saved in")
	assert.NotContains(t, out.String(), "you: ", "no new prompt")
	assert.Contains(t, out.String(), "Done: the old files are deleted.")
	assert.Equal(t, []string{"logs/app-today.log", "notes.txt"}, remaining(t, ws))
}

// SPEC S5: a damaged stored run makes the demo fail with the damage and
// the command that clears it.
func TestDemo_ADamagedRunSaysHowToStartOver(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, runDemo(ctx, []string{"-later", "-dir", ws}, strings.NewReader(""), &out))
	db, err := sql.Open("sqlite", filepath.Join(ws, ".braid", "braid.db"))
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE braid_records SET data = '{"no":"such record"}'`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	err = runDemo(ctx, []string{"-yes", "-dir", ws}, strings.NewReader(""), &out)
	require.ErrorIs(t, err, persistence.ErrDamaged)
	assert.Contains(t, err.Error(), "braid session delete demo -dir "+filepath.Join(ws, ".braid"))
}
