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
	seedtest.CheckCommandLine(t, main)
}
