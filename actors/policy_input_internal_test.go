package actors

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/proto/braidv1"
)

// badInputPolicy starts node "a" with an input whose message is not JSON.
type badInputPolicy struct{}

func (badInputPolicy) Begin(*RunView) ([]NodeStart, error) {
	return []NodeStart{{Node: "a", Input: &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":`)}}}}, nil
}
func (badInputPolicy) Next(*RunView, string) ([]NodeStart, string) { return nil, "" }

type noHooks struct{}

func (noHooks) BeforeNode(context.Context, string, *interrupt.State) (string, bool, error) {
	return "", false, nil
}
func (noHooks) AfterNode(context.Context, string, *braidv1.NodeResult) error     { return nil }
func (noHooks) BeforeInvocation(context.Context, bool) error                     { return nil }
func (noHooks) AfterInvocation(context.Context, *braidv1.MultiAgentResult) error { return nil }

type countingNode struct{ runs *int }

func (n countingNode) OpenNode(context.Context, NodeEnv) (NodeRunner, error) { return n, nil }
func (n countingNode) RunNode(context.Context, *braidv1.NodeRun) *braidv1.NodeResult {
	*n.runs++
	return &braidv1.NodeResult{Status: braidv1.NodeStatus_NODE_STATUS_COMPLETED}
}
func (countingNode) Progress(context.Context) (int64, error) { return 0, nil }
func (countingNode) Close(context.Context) error             { return nil }

// openOneNode builds, on a fresh system, the orchestrator "o" of session
// "s" in st, with one node "a" that counts its runs in runs.
func openOneNode(t *testing.T, st persistence.Store, runs *int, p Policy, h OrchestratorHooks) *Orchestrator {
	t.Helper()
	ctx := context.Background()
	sys, err := NewSystem(DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	sm, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	o, err := NewOrchestrator(ctx, sys, OrchestratorConfig{Kind: "graph", ID: "o", Nodes: []NodeSpec{{ID: "a", Node: countingNode{runs}}},
		Policy: p, Hooks: h, Session: sm})
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close(ctx) })
	return o
}

// SPEC S5: a policy (of another package: Policy is public) that gives a
// node an input whose JSON is not JSON ends the run FAILED, saying so,
// without running the node; the run's record, which holds the inputs it
// stores, still loads.
func TestOrchestrator_APolicyInputThatIsNotJSONEndsTheRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := 0
	open := func() *Orchestrator { return openOneNode(t, st, &runs, badInputPolicy{}, noHooks{}) }
	res, err := open().Invoke(ctx, &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":"user","content":[{"text":"go"}]}`)}})
	require.NoError(t, err)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, res.GetStatus())
	assert.Contains(t, res.GetMessage(), "not JSON")
	assert.Equal(t, 0, runs, "the node did not run")

	st2, err := open().Status(ctx)
	require.NoError(t, err, "the record loads")
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, st2.GetStatus())
}

// badReasonHooks is a GateHooks (public: another package may write one)
// whose BeforeNode registers an interrupt on node "a" straight into the
// gate, with a reason that is not JSON (an interrupt.Value, the response,
// is JSON by construction).
type badReasonHooks struct{ noHooks }

func (badReasonHooks) BeforeNode(_ context.Context, node string, gate *interrupt.State) (string, bool, error) {
	if node == "a" {
		gate.Register(interrupt.Interrupt{ID: "gate-1", Name: "approve", Reason: json.RawMessage(`{"why":`), Source: interrupt.SourceHook})
	}
	return "", false, nil
}

// SPEC S5: node hooks that record an interrupt whose reason is not JSON
// fail the node, saying which field is not JSON, without running it; the
// run's record, which stores the gate's interrupts, still loads.
func TestOrchestrator_AGateInterruptThatIsNotJSONFailsTheNode(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := 0
	open := func() *Orchestrator { return openOneNode(t, st, &runs, onePolicy{}, badReasonHooks{}) }
	res, err := open().Invoke(ctx, &braidv1.AgentInput{Messages: [][]byte{[]byte(`{"role":"user","content":[{"text":"go"}]}`)}})
	require.NoError(t, err)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, res.GetStatus())
	require.Len(t, res.GetResults(), 1)
	msg := res.GetResults()[0].GetError().GetMessage()
	assert.Contains(t, msg, `node "a"`)
	assert.Contains(t, msg, "reason: not valid JSON")
	assert.Equal(t, 0, runs, "the node did not run")

	st2, err := open().Status(ctx)
	require.NoError(t, err, "the record loads")
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, st2.GetStatus())
}

// onePolicy runs node "a" on the task once.
type onePolicy struct{}

func (onePolicy) Begin(v *RunView) ([]NodeStart, error) {
	return []NodeStart{{Node: "a", Input: v.Task()}}, nil
}
func (onePolicy) Next(*RunView, string) ([]NodeStart, string) { return nil, "" }
