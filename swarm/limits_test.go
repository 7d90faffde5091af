package swarm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
)

// pingPong is a swarm of a and b handing off to each other for ever (and
// c, who is never asked).
func pingPong(r *recorder) *swarm.Builder {
	return swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "back to you"})).
		AddAgent(teamAgent(r, "b", handoff{to: "a", message: "back to you"})).AddAgent(teamAgent(r, "c", handoff{}))
}

// SPEC M9: each limit ends the run FAILED with a message that names it;
// the node runs made before are kept, COMPLETED.
func TestSwarm_LimitsEndTheRunFailedNamingTheLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cfg   swarm.Config
		want  string
		order []string
	}{
		{name: "max handoffs", cfg: swarm.Config{MaxHandoffs: 3, MaxIterations: 10},
			want: "Max handoffs reached: 3", order: []string{"a", "b", "a", "b"}},
		{name: "max iterations", cfg: swarm.Config{MaxHandoffs: 10, MaxIterations: 2},
			want: "Max iterations reached: 2", order: []string{"a", "b"}},
		{name: "repetitive handoff", cfg: swarm.Config{RepetitiveHandoffDetectionWindow: 4, RepetitiveHandoffMinUniqueAgents: 3},
			want: "Repetitive handoff: 2 unique nodes out of 4 recent iterations", order: []string{"a", "b", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			res, err := build(t, pingPong(r), tc.cfg).Invoke(ctx, agent.Text("go"))
			require.NoError(t, err, "a limit is a result, not an error")
			assert.Equal(t, multiagent.StatusFailed, res.Status)
			assert.Equal(t, tc.want, res.Message)
			assert.Equal(t, tc.order, res.ExecutionOrder)
			for _, n := range res.Results {
				assert.Equal(t, multiagent.StatusCompleted, n.Status, n.NodeID)
			}
		})
	}
}

// SPEC M9: a run that has executed longer than its execution timeout
// ends FAILED before the next node starts.
func TestSwarm_ExecutionTimeoutEndsTheRunFailed(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	const limit = 100 * time.Millisecond
	slow := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn("a done"), nil
		}
		// The run must really take longer than its timeout.
		<-time.After(limit + 50*time.Millisecond)
		return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "yours"})), nil
	})
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: slow}).AddAgent(teamAgent(r, "b", handoff{}))
	res, err := build(t, b, swarm.Config{ExecutionTimeout: limit}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Equal(t, "Execution timed out: 0.1s", res.Message)
	assert.Equal(t, []string{"a"}, res.ExecutionOrder)
	assert.Equal(t, 0, r.count("model:b"))
}

// SPEC M9: a node that runs longer than the node timeout fails, and so
// does the run, with a message that names the limit.
func TestSwarm_NodeTimeoutFailsTheNodeAndTheRun(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	blocked := &blockingModel{started: make(chan struct{}, 1)}
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: blocked}).AddAgent(teamAgent(r, "b", handoff{}))
	res, err := build(t, b, swarm.Config{NodeTimeout: 50 * time.Millisecond}).Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	n := res.Node("a")
	require.NotNil(t, n)
	assert.Equal(t, multiagent.StatusFailed, n.Status)
	require.Error(t, n.Err)
	assert.ErrorIs(t, n.Err, actors.ErrNodeTimeout)
	assert.Contains(t, n.Err.Error(), "Node 'a' execution timed out after 0.05s")
	assert.Equal(t, "Node 'a' execution timed out after 0.05s", res.Message)
	assert.Equal(t, 0, r.count("model:b"))
}
