package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/examples/internal/seedtest"
)

func TestMain(m *testing.M) {
	seedtest.MainIfAsked(main)
	os.Exit(m.Run())
}

// SPEC M10, M5, I9: step 1 stops at the tool's interrupt and its process
// ends; step 2, a second OS process, builds the same graph on the same
// SQLite session and resumes it: the inspector node and the tool that
// completed beside the interrupted one are not run again, the
// interrupted tool gets the answer, and the run completes.
func TestGraphSessionExample_SecondProcessResumes(t *testing.T) {
	dir := t.TempDir()
	pid1, out1 := seedtest.Program(t, "-dir", dir)
	assert.Contains(t, out1, "status: INTERRUPTED")
	assert.Contains(t, out1, "inspector COMPLETED: Older than 5 days")
	assert.Contains(t, out1, "cleanup   INTERRUPTED: its agent waits for 1 answer(s)")
	assert.Contains(t, out1, "waits for myapp-approval from tool (id cleanup_graph/cleanup/v1:tool_call:delete-1:")
	assert.Contains(t, out1, "-dir "+dir+" -resume -answer y")
	assert.FileExists(t, filepath.Join(dir, "braid.db"))
	log, err := os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("pid %[1]d: inspect_resources: found %[2]v\npid %[1]d: snapshot_resources: saved %[2]v\n", pid1, old), string(log),
		"step 1 did the work before the interrupt, and no deleting")

	pid2, out2 := seedtest.Program(t, "-dir", dir, "-resume", "-answer", "y")
	require.NotEqual(t, pid1, pid2)
	assert.Contains(t, out2, "waits for 1 answer(s)")
	assert.Contains(t, out2, "interrupt myapp-approval from tool")
	assert.Contains(t, out2, "Do you want to delete [bucket-logs-2026-10 vm-build-17 disk-snapshot-4] (y/N): y")
	assert.Contains(t, out2, "status: COMPLETED")
	assert.Contains(t, out2, "cleanup   COMPLETED: Snapshot taken, then deleted bucket-logs-2026-10, vm-build-17, disk-snapshot-4.")
	log, err = os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("pid %[1]d: inspect_resources: found %[3]v\npid %[1]d: snapshot_resources: saved %[3]v\npid %[2]d: delete_resources: deleted %[3]v\n", pid1, pid2, old), string(log),
		"step 2 only deleted: nothing step 1 finished ran again")
}

// A "no" in step 2 completes the run without deleting.
func TestGraphSessionExample_SecondProcessDenies(t *testing.T) {
	dir := t.TempDir()
	seedtest.Program(t, "-dir", dir)
	pid2, out := seedtest.Program(t, "-dir", dir, "-resume", "-answer", "n")
	assert.Contains(t, out, "cleanup   COMPLETED: Snapshot taken; nothing deleted: false.")
	assert.Contains(t, out, fmt.Sprintf("pid %d: delete_resources: denied, kept %v", pid2, old))
	assert.Equal(t, 1, strings.Count(out, "snapshot_resources"), out)
}

// Each step refuses the state the other one expects, with a clear error,
// and -dir is required.
func TestGraphSessionExample_StepErrors(t *testing.T) {
	ctx := context.Background()
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	assert.ErrorContains(t, run(ctx, nil, strings.NewReader(""), &out), "-dir is required")

	dir := t.TempDir()
	assert.ErrorIs(t, run(ctx, []string{"-dir", dir, "-resume", "-answer", "y"}, strings.NewReader(""), &out), seed.ErrNothingToResume)
	require.NoError(t, run(ctx, []string{"-dir", dir}, strings.NewReader(""), &out))
	assert.ErrorIs(t, run(ctx, []string{"-dir", dir}, strings.NewReader(""), &out), seed.ErrWaiting)
	out.Reset()
	require.NoError(t, run(ctx, []string{"-dir", dir, "-resume"}, strings.NewReader("y\n"), &out), "the answer typed at the terminal")
	assert.Contains(t, out.String(), "status: COMPLETED")
	assert.ErrorIs(t, run(ctx, []string{"-dir", dir, "-resume", "-answer", "y"}, strings.NewReader(""), &out), seed.ErrNothingToResume)
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}

// -dir is part of a correct command line: without it nothing runs, and
// the exit status says it is a usage error.
func TestMissingDirExitsTwo(t *testing.T) {
	status, stderr := seedtest.RunMain(t, main)
	assert.Equal(t, 2, status, "%s", stderr)
	assert.Contains(t, stderr, "-dir is required")
}

// Step 2 given a folder with no store (a mistyped -dir) says there is
// nothing to resume and leaves nothing behind: no folder, no braid.db.
func TestStep2_OnAFolderWithoutAStoreCreatesNothing(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	dir := filepath.Join(t.TempDir(), "typo")
	var out bytes.Buffer
	err := run(context.Background(), []string{"-dir", dir, "-resume", "-answer", "y"}, strings.NewReader(""), &out)
	assert.ErrorIs(t, err, seed.ErrNothingToResume)
	assert.NoDirExists(t, dir)

	empty := t.TempDir()
	err = run(context.Background(), []string{"-dir", empty, "-resume", "-answer", "y"}, strings.NewReader(""), &out)
	assert.ErrorIs(t, err, seed.ErrNothingToResume)
	entries, rerr := os.ReadDir(empty)
	require.NoError(t, rerr)
	assert.Empty(t, entries, "step 2 wrote nothing into the folder")
}
