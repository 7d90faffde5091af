package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// faultyExecutor breaks the tool.Executor contract in one way.
type faultyExecutor func(ctx context.Context, tasks []tool.Task)

func (f faultyExecutor) Execute(ctx context.Context, tasks []tool.Task) { f(ctx, tasks) }

// SPEC A3, A4: a custom executor that breaks the task contract (runs a
// tool its BeforeToolCall hooks never saw, runs one twice, prepares one
// twice, or leaves one without a result and without an interrupt) fails
// the invocation with tool.ErrExecutor: no tool runs unapproved or twice,
// and the history never gets a tool use without its result.
func TestExecutor_A3_AnExecutorBreakingTheTaskContractFailsTheInvocation(t *testing.T) {
	cases := map[string]struct {
		exec     faultyExecutor
		maxRuns  int
		maxHooks int
	}{
		"runs a task it did not prepare": {exec: func(ctx context.Context, tasks []tool.Task) {
			for _, t := range tasks {
				t.Run(ctx)
			}
		}, maxRuns: 0, maxHooks: 0},
		"runs a task twice": {exec: func(ctx context.Context, tasks []tool.Task) {
			for _, t := range tasks {
				if run, _ := t.Prepare(ctx); run {
					t.Run(ctx)
					t.Run(ctx)
				}
			}
		}, maxRuns: 1, maxHooks: 1},
		"prepares a task twice": {exec: func(ctx context.Context, tasks []tool.Task) {
			for _, t := range tasks {
				t.Prepare(ctx)
				if run, _ := t.Prepare(ctx); run {
					t.Run(ctx)
				}
			}
		}, maxRuns: 1, maxHooks: 1},
		"forgets a task": {exec: func(ctx context.Context, tasks []tool.Task) {
			if run, _ := tasks[0].Prepare(ctx); run {
				tasks[0].Run(ctx)
			}
		}, maxRuns: 1, maxHooks: 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			one, runs := countingTool("one")
			var before counter
			approve := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
				before.inc(ev.ToolUse.ToolUseID)
				return nil
			})
			m := toolThenText("done", model.Call("t1", "one", nil), model.Call("t2", "one", nil))
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Executor: c.exec, Hooks: []hook.Provider{approve}})
			_, err := a.Invoke(context.Background(), agent.Text("go"))
			require.ErrorIs(t, err, tool.ErrExecutor)
			for _, id := range []string{"t1", "t2"} {
				assert.LessOrEqual(t, runs.get(id), c.maxRuns, "runs of %s", id)
				assert.LessOrEqual(t, before.get(id), c.maxHooks, "BeforeToolCall of %s", id)
				assert.LessOrEqual(t, runs.get(id), before.get(id), "%s ran without its BeforeToolCall", id)
			}
			msgs := agenttest.Messages(t, a)
			requireValidHistory(t, msgs)
			assert.Empty(t, msgs, "the failed invocation took its prompt back")
		})
	}
}
