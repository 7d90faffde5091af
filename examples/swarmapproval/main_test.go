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

// SPEC M3, M9: the hook stops the swarm before its entry agent, cleanup,
// runs; "y" runs the agent and its tool deletes the old resources,
// anything else cancels the node (CANCELLED, nothing deleted).
func TestSwarmApprovalExample_AsksBeforeCleanupAndDeletesOnlyOnYes(t *testing.T) {
	const question = "Do you want to cleanup [bucket-logs-2026-10 vm-build-17 disk-snapshot-4] (y/N): "
	for _, tc := range []struct {
		name, args, stdin string
		want, not         []string
	}{
		{"flag yes", "-answer y", "", []string{
			"interrupt myapp-approval from multiagent-hook (id " + interrupt.BeforeNodeCallID("cleanup", "myapp-approval") + ")",
			question + "y",
			"status: COMPLETED",
			"cleanup COMPLETED: Cleaned up 3 resources older than 5 days",
			`MESSAGE: {"role":"assistant","content":[{"text":"Cleaned up 3 resources older than 5 days: bucket-logs-2026-10, vm-build-17, disk-snapshot-4."}]}`,
			"deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]",
		}, nil},
		{"flag no", "-answer n", "", []string{
			question + "n",
			"status: CANCELLED",
			"cleanup CANCELLED: User denied permission to cleanup resources",
			"deleted: []",
		}, []string{"MESSAGE:", "COMPLETED"}},
		{"terminal yes", "", "Y\n", []string{"status: COMPLETED", "deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]"}, nil},
		{"terminal other answer", "", "sure\n", []string{"cleanup CANCELLED: User denied permission", "deleted: []"}, []string{"MESSAGE:"}},
		{"terminal end of input", "", "", []string{"status: CANCELLED", "deleted: []"}, []string{"MESSAGE:"}},
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

func TestSwarmApprovalExample_EnvAnswerRunsWithoutTerminal(t *testing.T) {
	for _, tc := range []struct{ env, status, deleted string }{
		{"y", "status: COMPLETED", "deleted: [bucket-logs-2026-10 vm-build-17 disk-snapshot-4]"},
		{"n", "status: CANCELLED", "deleted: []"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("BRAID_ANSWER", tc.env)
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), nil, strings.NewReader(""), &out))
			assert.Contains(t, out.String(), "(y/N): "+tc.env+"\n")
			assert.Contains(t, out.String(), tc.status)
			assert.Contains(t, out.String(), tc.deleted)
		})
	}
}

func TestSwarmApprovalExample_FlagOverridesEnvAnswer(t *testing.T) {
	t.Setenv("BRAID_ANSWER", "y")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-answer", "n"}, strings.NewReader(""), &out))
	assert.Contains(t, out.String(), "status: CANCELLED")
	assert.Contains(t, out.String(), "deleted: []")
}

func TestSwarmApprovalExample_RejectsBadModelFlag(t *testing.T) {
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
