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
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC S1, S5, A3: a tool cycle whose tool uses share one id (a model may
// repeat an id) interrupted after two of them finished is saved, and a new
// agent on the session (a fresh runtime, as another process) loads it and
// resumes it: the finished tools do not run again, the history has one
// result per use. Before, the stored pending work, with two results of one
// id, was refused as damage ("is there twice"), and the session could not
// be loaded again.
func TestSession_S5_APendingCycleWhoseToolUsesShareAnIDLoadsAndResumes(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := &counter{}
	build := func() *agent.Agent {
		sm, err := persistence.NewSessionManager(st, "dup")
		require.NoError(t, err)
		var tools []tool.Tool
		for _, name := range []string{"one", "two", "three"} {
			tools = append(tools, tool.New(name, name, func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
				runs.inc(name)
				return name + " ok", nil
			}))
		}
		return newAgent(t, agent.Config{Session: sm, System: actorstest.System(t), Tools: tools,
			Model: toolThenText("done", model.Call("t1", "one", pathsIn{}), model.Call("t1", "two", pathsIn{}), model.Call("t1", "three", pathsIn{})),
			Hooks: []hook.Provider{approveHook("three", "approval")}})
	}
	a := build()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	require.NoError(t, a.Close(ctx))

	again := build()
	require.True(t, agenttest.Interrupted(t, again), "the interrupted run loads")
	res, err = again.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	for _, name := range []string{"one", "two", "three"} {
		assert.Equal(t, 1, runs.get(name), name)
	}
	msgs := agenttest.Messages(t, again)
	requireValidHistory(t, msgs)
	var texts []string
	for _, r := range msgs[2].ToolResults() {
		texts = append(texts, r.Text())
	}
	assert.Equal(t, []string{"one ok", "two ok", "three ok"}, texts)
}
