package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// SPEC A13: a call whose input the tool's schema refuses (here a required
// parameter missing and one the schema does not name) does not run the
// tool: the model gets an error result saying what was wrong, and the
// loop goes on.
func TestToolInput_A13_InputTheSchemaRefusesIsAnErrorResultNotARun(t *testing.T) {
	type transferIn struct {
		Account string `json:"account"`
		Amount  int    `json:"amount"`
	}
	var runs atomic.Int32
	transfer := tool.New("transfer", "moves money", func(ctx context.Context, tc *tool.Context, in transferIn) (string, error) {
		runs.Add(1)
		return "moved", nil
	})
	m := toolThenText("done", model.Call("t1", "transfer", map[string]any{"account": "a", "amount_cents": 5}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{transfer}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Zero(t, runs.Load(), "the tool did not run on input its schema refuses")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	results := msgs[2].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, model.ToolError, results[0].Status)
	assert.Contains(t, results[0].Text(), "amount")
	assert.Contains(t, results[0].Text(), "amount_cents")
}
