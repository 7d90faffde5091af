package multiagent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
)

// SPEC M2: every status has a protobuf form and comes back as itself.
func TestStatus_RoundTripsThroughTheWire(t *testing.T) {
	for _, s := range []multiagent.Status{multiagent.StatusPending, multiagent.StatusExecuting, multiagent.StatusCompleted,
		multiagent.StatusFailed, multiagent.StatusCancelled, multiagent.StatusInterrupted} {
		assert.Equal(t, s, multiagent.StatusFromWire(s.ToWire()))
	}
	assert.Equal(t, multiagent.StatusPending, multiagent.StatusFromWire(braidv1.NodeStatus_NODE_STATUS_UNSPECIFIED))
}

// SPEC M7: node results of every kind (agent, nested run, function
// content, failure) come back from the wire with their text and error.
func TestResult_FromWireCarriesEveryKindOfNodeResult(t *testing.T) {
	msg, err := json.Marshal(model.Message{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text("agent out")}})
	require.NoError(t, err)
	content, err := json.Marshal([]model.ContentBlock{model.Text("fn out")})
	require.NoError(t, err)
	inner := &braidv1.MultiAgentResult{Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Results: []*braidv1.NodeResult{
		{NodeId: "x", Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Result: &braidv1.NodeResult_Content{Content: content}}}}
	w := &braidv1.MultiAgentResult{Status: braidv1.NodeStatus_NODE_STATUS_FAILED, ExecutionOrder: []string{"a", "n", "f"}, ExecutionCount: 3,
		Results: []*braidv1.NodeResult{
			{NodeId: "a", Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Result: &braidv1.NodeResult_Agent{Agent: &braidv1.AgentResult{StopReason: "end_turn", Message: msg}},
				Usage: &braidv1.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}},
			{NodeId: "n", Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED, Result: &braidv1.NodeResult_MultiAgent{MultiAgent: inner}},
			{NodeId: "f", Status: braidv1.NodeStatus_NODE_STATUS_FAILED, Error: agent.ErrorToWire(agent.ErrEmptyInput)},
		}}
	r, err := multiagent.ResultFromWire(w)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, r.Status)
	assert.Equal(t, "agent out", r.Node("a").Text())
	assert.Equal(t, 3, r.Node("a").Usage.TotalTokens)
	assert.Equal(t, "fn out", r.Node("n").Text(), "a nested run's text is its last completed node's")
	assert.ErrorIs(t, r.Node("f").Err, agent.ErrEmptyInput, "a typed error survives the trip")
	assert.Equal(t, "fn out", r.Text(), "the run's text is the last completed node's")
	assert.Nil(t, r.Node("zz"))
}
