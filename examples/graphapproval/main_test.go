package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/examples/internal/seedtest"

	"github.com/braidhq/braid/interrupt"
)

// SPEC M3: the hook stops the graph before cleanup; "y" runs the node,
// anything else cancels it (CANCELLED, its tool never runs).
func TestGraphApprovalExample(t *testing.T) {
	const question = "Do you want to cleanup [bucket-logs-2026-10 vm-build-17 disk-snapshot-4] (y/N): "
	for _, tc := range []struct {
		name, args, stdin string
		want, not         []string
	}{
		{"flag yes", "-answer y", "", []string{
			"interrupt myapp-approval from multiagent-hook (id " + interrupt.BeforeNodeCallID("cleanup", "myapp-approval") + ")",
			question + "y",
			"status: COMPLETED",
			"inspector COMPLETED: Found 3 resources older than 5 days",
			`MESSAGE: {"role":"assistant","content":[{"text":"Cleaned up 3 resources older than 5 days: bucket-logs-2026-10, vm-build-17, disk-snapshot-4."}]}`,
			"deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]",
		}, nil},
		{"flag no", "-answer n", "", []string{
			question + "n",
			"status: CANCELLED",
			"inspector COMPLETED: Found 3 resources",
			"cleanup   CANCELLED: User denied permission to cleanup resources",
			"deleted: []",
		}, []string{"MESSAGE:"}},
		{"terminal yes", "", "Y\n", []string{"status: COMPLETED", "deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]"}, nil},
		{"terminal other answer", "", "sure\n", []string{"cleanup   CANCELLED: User denied permission", "deleted: []"}, nil},
		{"terminal end of input", "", "", []string{"status: CANCELLED", "deleted: []"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BRAID_ANSWER", "")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), strings.Fields(tc.args), strings.NewReader(tc.stdin), &out))
			assert.Equal(t, 1, strings.Count(out.String(), "Do you want to cleanup"), "asked once:\n%s", out.String())
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
			for _, w := range tc.not {
				assert.NotContains(t, out.String(), w)
			}
		})
	}
}

func TestGraphApprovalExample_EnvAnswer(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "y")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), nil, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "status: COMPLETED")
}

func TestGraphApprovalExample_BadModelFlag(t *testing.T) {
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
