package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/examples/internal/seedtest"
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
	status, stderr := seedtest.RunMain(t, main, "-h")
	assert.Equal(t, 0, status, "-h: %s", stderr)
	assert.Empty(t, stderr, "-h is no error")

	status, stderr = seedtest.RunMain(t, main, "-bogus")
	assert.Equal(t, 2, status, "-bogus: %s", stderr)
	assert.Contains(t, stderr, "flag provided but not defined: -bogus")

	status, stderr = seedtest.RunMain(t, main, "-answer", "y", "y")
	assert.Equal(t, 2, status, "an extra argument: %s", stderr)
	assert.Contains(t, stderr, `got the argument "y"`)
}
