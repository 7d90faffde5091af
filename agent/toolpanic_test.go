package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// brokenOnceTool is a custom tool whose RunsAtMostOnce panics.
type brokenOnceTool struct{}

func (brokenOnceTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (brokenOnceTool) Run(context.Context, *tool.Context, json.RawMessage) ([]model.ToolResultContent, error) {
	return nil, nil
}

func (brokenOnceTool) RunsAtMostOnce() bool { panic("declaration bug") }

// SPEC R6, A13: a panic in a tool's own code outside its Run (here its
// RunsAtMostOnce), on a goroutine of the concurrent executor while another
// tool runs, fails the invocation with agent.ErrPanic: it does not take the
// process down, and the agent stays usable with its history as before.
func TestToolPanic_R6_APanicOutsideRunUnderTheConcurrentExecutorFailsTheInvocation(t *testing.T) {
	one, _ := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil), model.Call("t2", "broken", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one, brokenOnceTool{}}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, agent.ErrPanic)
	assert.Contains(t, err.Error(), "declaration bug")
	assert.Empty(t, agenttest.Messages(t, a), "the failed invocation took its prompt back")
	_, err = a.Snapshot(context.Background())
	require.NoError(t, err, "the agent survives")
}

// brokenKeyTool is a custom tool whose ExclusiveKey panics.
type brokenKeyTool struct{ brokenOnceTool }

func (brokenKeyTool) RunsAtMostOnce() bool { return false }
func (brokenKeyTool) ExclusiveKey() string { panic("key bug") }

// SPEC R6: a panic in a custom tool's ExclusiveKey, asked by an executor on
// a goroutine of its own, fails the invocation with agent.ErrPanic.
func TestToolPanic_R6_APanicInExclusiveKeyOnAnExecutorGoroutineFailsTheInvocation(t *testing.T) {
	m := toolThenText("done", model.Call("t1", "broken", nil))
	keyOnGoroutine := faultyExecutor(func(ctx context.Context, tasks []tool.Task) {
		for _, t := range tasks {
			run, _ := t.Prepare(ctx)
			done := make(chan string)
			go func() { done <- tool.TaskKey(t) }()
			<-done
			if run {
				t.Run(ctx)
			}
		}
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{brokenKeyTool{}}, Executor: keyOnGoroutine})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, agent.ErrPanic)
	assert.Contains(t, err.Error(), "key bug")
	assert.Empty(t, agenttest.Messages(t, a))
}
