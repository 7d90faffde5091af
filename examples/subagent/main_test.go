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
	"github.com/braidhq/braid/interrupt"
)

func TestMain(m *testing.M) {
	seedtest.MainIfAsked(main)
	os.Exit(m.Run())
}

// SPEC M11, S1, I2: step 1 stops at the cleaner's approval, which
// surfaces at the assistant named by the cleaner's interrupt id, and its
// process ends; step 2, a second OS process, builds both agents on the
// same SQLite session and resumes the assistant: the answer reaches the
// cleaner, which resumes (its inspection is not run again) and deletes,
// and the assistant answers with the cleaner's report.
func TestSubAgentExample_SecondProcessAnswersTheSubAgentsQuestion(t *testing.T) {
	dir := t.TempDir()
	pid1, out1 := seedtest.Program(t, "-dir", dir)
	inner := interrupt.OwnedID("assistant/cleanup", interrupt.BeforeToolCallID("delete-1", approvalName))
	assert.Contains(t, out1, "waits for "+inner+"@2 from tool (id "+interrupt.ToolCallID("cleanup-1", inner+"@2")+")",
		"named by the cleaner's interrupt, asked after its first cycle")
	assert.Contains(t, out1, fmt.Sprintf("the cleaner asks, through the assistant's cleanup tool: delete %v?", old),
		"step 1 says what is asked, not only the ids")
	assert.Contains(t, out1, "-dir "+dir+" -resume -answer y")
	log, err := os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("pid %d: inspect_files: %v, old: %v\n", pid1, files, old), string(log), "step 1 inspected, and deleted nothing")

	pid2, out2 := seedtest.Program(t, "-dir", dir, "-resume", "-answer", "y")
	require.NotEqual(t, pid1, pid2)
	assert.Contains(t, out2, "waits for 1 answer(s)")
	assert.Contains(t, out2, fmt.Sprintf("Do you want to delete %v (y/N): y", old))
	assert.Contains(t, out2, "assistant: The cleaner reports: Deleted "+strings.Join(old, ", ")+".")
	log, err = os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("pid %d: inspect_files: %v, old: %v\npid %d: delete_files: deleted %v\n", pid1, files, old, pid2, old), string(log),
		"step 2 only deleted: the cleaner resumed, it did not start again")
}

// A "no" in step 2 reaches the cleaner's hook, which cancels the call:
// nothing is deleted, and the assistant says so.
func TestSubAgentExample_SecondProcessDenies(t *testing.T) {
	dir := t.TempDir()
	seedtest.Program(t, "-dir", dir)
	_, out := seedtest.Program(t, "-dir", dir, "-resume", "-answer", "n")
	assert.Contains(t, out, "assistant: The cleaner reports: Deleted nothing: User denied permission to delete files.")
	assert.NotContains(t, out, "delete_files: deleted")
}

// Each step refuses the state the other one expects, with a clear error,
// and -dir is required.
func TestSubAgentExample_StepErrors(t *testing.T) {
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
	assert.Contains(t, out.String(), "assistant: The cleaner reports: Deleted")
	assert.ErrorIs(t, run(ctx, []string{"-dir", dir, "-resume", "-answer", "y"}, strings.NewReader(""), &out), seed.ErrNothingToResume)
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
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
