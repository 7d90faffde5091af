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

// SPEC M4, M5, I8: the two gated nodes interrupt while time, beside them,
// completes; both interrupts come back together; answering both runs the
// gated nodes once each, and nothing runs again.
func TestGraphGatesExample_BothApprovedCompletesWithFourResults(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "y"}, strings.NewReader(""), &out))
	first, rest, ok := strings.Cut(out.String(), "Do you want to run day (y/N): y\n")
	require.True(t, ok, out.String())
	assert.Contains(t, first, "status: INTERRUPTED (4 node results, 2 interrupts)")
	assert.Contains(t, first, "info     COMPLETED: I will look up")
	assert.Contains(t, first, "day      INTERRUPTED: waits for myapp-approval")
	assert.Contains(t, first, "time     COMPLETED: It is 14:05.", "the concurrent node runs to completion")
	assert.Contains(t, first, "weather  INTERRUPTED: waits for myapp-approval")

	assert.Contains(t, rest, "Do you want to run weather (y/N): y\nresume with 2 answer(s)\n")
	assert.Contains(t, rest, "status: COMPLETED (4 node results, 0 interrupts)")
	assert.Contains(t, rest, "day      COMPLETED: It is Tuesday.")
	assert.Contains(t, rest, "weather  COMPLETED: Sunny, 21 degrees.")
	assert.Contains(t, rest, "model calls: info 1, day 1, time 1, weather 1")
	assert.Equal(t, 2, strings.Count(out.String(), "Do you want to run"), "each gate asks once")
}

// SPEC M3: a denied gate cancels its node only; the other gated node runs.
func TestGraphGatesExample_DeniedNodeIsCancelled(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, strings.NewReader("y\nn\n"), &out))
	assert.Contains(t, out.String(), "status: CANCELLED (4 node results, 0 interrupts)")
	assert.Contains(t, out.String(), "day      COMPLETED: It is Tuesday.")
	assert.Contains(t, out.String(), "weather  CANCELLED: User denied weather")
	assert.Contains(t, out.String(), "model calls: info 1, day 1, time 1, weather 0")
}

func TestGraphGatesExample_BadModelFlag(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-answer", "y", "-model", "gpt-4o"}, strings.NewReader(""), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openai:<model>")
}

// What a user of the command sees: -h prints the usage and exits 0,
// without an error; a mistyped flag, or an answer given as an argument
// instead of with -answer, exits 2 (a usage error: nothing ran).
func TestHelpExitsZeroAndBadCommandLineExitsTwo(t *testing.T) {
	seedtest.CheckCommandLine(t, main)
}
