package actors_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// resetPanics is a one-node stateful policy whose ResetPolicy, which the
// orchestrator's actor calls when a fresh run starts, panics once armed.
type resetPanics struct{ armed bool }

func (p *resetPanics) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	return []actors.NodeStart{{Node: "n", Input: v.Task()}}, nil
}
func (p *resetPanics) Next(*actors.RunView, string) ([]actors.NodeStart, string) { return nil, "" }
func (p *resetPanics) MarshalPolicy() (json.RawMessage, error)                   { return json.RawMessage(`{}`), nil }
func (p *resetPanics) UnmarshalPolicy(json.RawMessage) error                     { return nil }
func (p *resetPanics) ResetPolicy() {
	if p.armed {
		panic("boom in ResetPolicy")
	}
}

// SPEC R6: an orchestrator without a session whose actor stops after a
// fault in its own Receive is never re-activated with a fresh, empty run
// behind its callers' backs: the caller of the failed step gets an error
// naming the fault, and every later call ErrOrchestratorFaulted.
func TestOrchestrator_WithoutSessionFaultedIsNotRestartedWithFreshState(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	pol := &resetPanics{}
	node := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o",
		Nodes: []actors.NodeSpec{{ID: "n", Node: node}}, Policy: pol})
	require.NoError(t, err)
	defer o.Close(ctx)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	res, err := o.Invoke(ctx, task)
	require.NoError(t, err)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())

	pol.armed = true
	_, err = o.Invoke(ctx, task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom in ResetPolicy")
	assert.NotErrorIs(t, err, actors.ErrOrchestratorClosed, "nobody closed it")

	// At once: a call sent while the faulted actor stops reaches the next
	// activation (SPEC R5: nothing is lost in the meantime).
	_, err = o.Status(ctx)
	assert.ErrorIs(t, err, actors.ErrOrchestratorFaulted, "not a fresh, empty run")
	_, err = o.Invoke(ctx, task)
	assert.ErrorIs(t, err, actors.ErrOrchestratorFaulted)
}
