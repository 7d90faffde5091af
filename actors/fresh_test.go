package actors_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC I7, M5, M11: a nested orchestrator's parent gives it a fresh prompt
// in process (NestedRunner); a MultiAgentInvoke comes from any other actor
// or process that can address the nested orchestrator's identity. Its
// fresh flag must not drop the nested run while the parent's run still
// waits on it: the prompt is refused, the run and its interrupt stay, and
// the parent's own fresh prompt (in process) still starts a fresh run.
func TestOrchestrator_NestedWaitingRunRefusesAWireFreshPromptFromAnotherCaller(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	gates := 0
	gate := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if _, err := ev.Interrupt("approval", nil); err != nil {
			gates++
			return err
		}
		return nil
	})
	hooks, err := multiagent.NewHooks("test", "o", "outer/mid", gate)
	require.NoError(t, err)
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o", OwnerPath: "outer/mid",
		Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: &resetPanics{}, Hooks: hooks})
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close(context.Background()) })
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	runner := &actors.NestedRunner{O: o}
	first := runner.RunNode(ctx, &braidv1.NodeRun{NodeId: "mid", Input: task})
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, first.GetStatus())
	waiting := first.GetInterrupts()[0].GetId()

	inbox := actors.NewInbox(sys)
	defer inbox.Close()
	o.Binding().Request(&braidv1.MultiAgentInvoke{Input: task}, inbox)
	rep, err := inbox.Receive(ctx)
	require.NoError(t, err)
	e, ok := rep.(*braidv1.Error)
	require.True(t, ok, "a wire prompt is refused: %T", rep)
	assert.ErrorIs(t, agent.ErrorFromWire(e), interrupt.ErrResumeRequired)
	assert.Equal(t, 1, gates, "the waiting run was not dropped")
	st, err := o.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.GetInterrupts(), 1)
	assert.Equal(t, waiting, st.GetInterrupts()[0].GetId())

	// The parent's own fresh prompt (its run is over) still drops it.
	again := runner.RunNode(ctx, &braidv1.NodeRun{NodeId: "mid", Input: task})
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, again.GetStatus())
	assert.Equal(t, 2, gates, "the parent's fresh run is gated again")
}
