package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC S4: of two agents (two processes: two runtimes) that loaded one
// interrupted run, the one whose resume loses to the other gets
// ErrConflict before anything runs, and goes on from the stored run: it
// is idle with the other's finished history, and takes the next prompt.
// Before, it kept its stale run, with the refused answer in it (Status
// said INCOMPLETE), refused a prompt with "resume with interrupt
// responses", and failed every later call with ErrConflict until it was
// built again.
func TestSession_S4_AnAgentWhoseResumeLostToAnotherWriterGoesOnFromTheStoredRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := &counter{}
	build := func() *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "raced")
		require.NoError(t, err)
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			runs.inc(tc.ToolUse.ToolUseID)
			return "deleted", nil
		})
		return newAgent(t, agent.Config{Session: sm, System: actorstest.System(t), Tools: []tool.Tool{del},
			Model: toolThenText("done", model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}})),
			Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
	}
	first := build()
	res, err := first.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	in := res.Interrupts[0]
	second := build() // loads the interrupted run

	res, err = first.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)

	_, err = second.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, 1, runs.get("t1"), "the losing resume runs nothing")

	status, err := second.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, status.State, "the stored run is finished")
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"},
		describeAll(agenttest.Messages(t, second)))

	res, err = second.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err, "the next prompt is taken")
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	res, err = second.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, runs.get("t1"))
	requireValidHistory(t, agenttest.Messages(t, second))
}
