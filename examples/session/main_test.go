package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/internal/seed"
	"github.com/braidhq/braid/examples/internal/seedtest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// SPEC A11, S1: "t" is asked once and remembered across fresh agents (each
// request builds a new agent from the file session); "y" is asked each time.
func TestSessionExample(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "t", "-dir", t.TempDir()}, strings.NewReader(""), &out))
	assert.Equal(t, 1, strings.Count(out.String(), "Do you want to delete"), out.String())
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt]")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-answer", "y", "-dir", t.TempDir()}, strings.NewReader(""), &out))
	assert.Equal(t, 2, strings.Count(out.String(), "Do you want to delete"), out.String())

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-dir", t.TempDir()}, strings.NewReader("n\nt\n"), &out))
	assert.Contains(t, out.String(), "User denied permission", out.String())
	assert.Contains(t, out.String(), "deleted: [d/e/f.txt]")
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}

// SPEC S6: a request cut off by a crash while its at-most-once
// delete_files ran leaves the session incomplete. The next client carries
// that run on before it sends its own prompt, and is asked whether to run
// the cut-off delete again (braid.recovery) instead of failing with
// agent.ErrIncompleteRun. The crash is a Close of the agent while the
// tool runs, which cuts the run off as a crash does.
func TestSessionExample_CarriesOnARequestACrashCutOff(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	require.NoError(t, err)
	sess, err := persistence.NewSessionManager(store, "myapp")
	require.NoError(t, err)
	started := make(chan struct{})
	deleteFiles := tool.New("delete_files", "Delete files at the given paths",
		func(ctx context.Context, tc *tool.Context, in seed.Paths) (bool, error) {
			close(started)
			<-ctx.Done()
			return false, ctx.Err()
		}, tool.AtMostOnce())
	a, err := agent.New(ctx, agent.Config{
		Model:   model.Scripted(model.ToolTurn(model.Call("tooluse_1", "delete_files", seed.Paths{Paths: []string{"x/old.txt"}}))),
		Tools:   []tool.Tool{deleteFiles},
		Session: sess,
	})
	require.NoError(t, err)
	invoked := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Text("paths=<[x/old.txt]>"))
		invoked <- err
	}()
	<-started
	require.NoError(t, a.Close(ctx))
	<-invoked
	require.NoError(t, store.Close())

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"-answer", "y", "-dir", dir}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "delete_files [x/old.txt] was cut off by a crash", out.String())
	assert.Contains(t, out.String(), "deleted: [x/old.txt a/b/c.txt d/e/f.txt]", out.String())
}
