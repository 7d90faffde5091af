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

// SPEC R2, I7, M11: a prompt to an orchestrator that waits for answers is
// refused. MultiAgentInvoke.fresh drops the waiting run and runs the
// prompt only for a nested orchestrator (one with an owner path: its
// parent's run is over); a top-level one ignores it and still refuses.
func TestOrchestrator_FreshPromptDropsAWaitingRunOnlyWhenNested(t *testing.T) {
	for _, ownerPath := range []string{"", "outer/mid"} {
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
		hooks, err := multiagent.NewHooks("test", "o", ownerPath, gate)
		require.NoError(t, err)
		node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
			return []model.ContentBlock{model.Text("done")}, nil
		})
		o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o", OwnerPath: ownerPath,
			Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: &resetPanics{}, Hooks: hooks})
		require.NoError(t, err)
		task, err := agent.InputToWire(agent.Text("go"))
		require.NoError(t, err)
		ask := func(m *braidv1.MultiAgentInvoke) any {
			inbox := actors.NewInbox(sys)
			defer inbox.Close()
			o.Binding().Request(m, inbox)
			rep, err := inbox.Receive(ctx)
			require.NoError(t, err)
			return rep
		}
		res, ok := ask(&braidv1.MultiAgentInvoke{Input: task}).(*braidv1.MultiAgentResult)
		require.True(t, ok)
		require.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus())

		rep := ask(&braidv1.MultiAgentInvoke{Input: task, Fresh: true})
		if ownerPath == "" {
			e, ok := rep.(*braidv1.Error)
			require.True(t, ok, "top level: %T", rep)
			assert.ErrorIs(t, agent.ErrorFromWire(e), interrupt.ErrResumeRequired, "top level: fresh is ignored")
			assert.Equal(t, 1, gates)
		} else {
			res, ok := rep.(*braidv1.MultiAgentResult)
			require.True(t, ok, "nested: %T", rep)
			assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus(), "nested: a fresh run, gated again")
			assert.Equal(t, 2, gates, "nested: the fresh run's gate asked")
		}
		require.NoError(t, o.Close(ctx))
	}
}
