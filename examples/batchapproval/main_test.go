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

func TestBatchApprovalExample(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "y"}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "Approve running [delete_files delete_files]? (y/N): y")
	assert.Contains(t, out.String(), "MESSAGE: tooluse_1: success true; tooluse_2: success true")
	assert.Contains(t, out.String(), "deleted: [a/b/c.txt d/e/f.txt]")

	out.Reset()
	require.NoError(t, run(context.Background(), nil, strings.NewReader("no\n"), &out))
	assert.Contains(t, out.String(), "MESSAGE: tooluse_1: error Batch cancelled by user; tooluse_2: error Batch cancelled by user")
	assert.Contains(t, out.String(), "deleted: []")
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}
