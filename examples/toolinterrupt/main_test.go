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

func TestToolInterruptExample(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "y"}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "interrupt myapp-approval from tool")
	assert.Contains(t, out.String(), "MESSAGE: delete_files returned true")
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt], inspect_files ran 1 time(s)")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-answer", "n"}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "MESSAGE: delete_files returned false")
	assert.Contains(t, out.String(), "deleted: [], inspect_files ran 1 time(s)")
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}
