package swarm_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// SPEC M9: a resumed node run is the iteration it resumes: with
// MaxIterations 3, a → b (interrupted, resumed) → c completes; with
// MaxHandoffs 1, b's handoff after its resume is refused, the run FAILED
// with a message naming the limit.
func TestSwarm_LimitsCountAResumedRunOnce_M9(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		cfg    swarm.Config
		status multiagent.Status
		msg    string
	}{
		"iterations": {swarm.Config{MaxIterations: 3}, multiagent.StatusCompleted, ""},
		"handoffs":   {swarm.Config{MaxHandoffs: 1}, multiagent.StatusFailed, "Max handoffs reached: 1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRecorder()
			s := build(t, researchSwarm(r), tc.cfg)
			res, err := s.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Len(t, res.Interrupts, 1)
			res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "x")))
			require.NoError(t, err)
			assert.Equal(t, tc.status, res.Status, res.Message)
			assert.Equal(t, tc.msg, res.Message)
			assert.Equal(t, 1, r.count("tool:b"))
		})
	}
}

// SPEC M9, M3: with ResetOnRevisit, a revisited agent that a gate stops
// before it runs starts afresh once the gate is answered; one that its
// own tool stops carries on where it stopped when answered.
func TestSwarm_ResetOnRevisitAppliesToAGatedRevisitAndNotToAResume_M9(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	var mu sync.Mutex
	var seen []int // messages a's model saw at each of its prompts
	prompts := 0
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			if trs[0].ToolUseID == "t1" {
				return model.TextTurn("a done: " + trs[0].Text()), nil
			}
			return model.TextTurn("a handed off"), nil
		}
		prompts++
		seen = append(seen, len(req.Messages))
		if prompts == 1 {
			return model.ToolTurn(model.Call("h1", swarm.HandoffTool, map[string]any{"agent_name": "b", "message": "check"})), nil
		}
		return model.ToolTurn(model.Call("t1", "lookup", map[string]any{})), nil
	})
	// gate a only on its revisit (its second gate raise)
	var gmu sync.Mutex
	gates := 0
	revisitGate := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "a" {
			return nil
		}
		gmu.Lock()
		gates++
		n := gates
		gmu.Unlock()
		if n == 1 {
			return nil
		}
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	b := swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: m, Tools: []tool.Tool{askTool(r, "a", "lookup", "which")}}).
		AddAgent(teamAgent(r, "b", handoff{to: "a", message: "checked"})).ResetOnRevisit(true)
	s := build(t, b, swarm.Config{Hooks: []hook.Provider{revisitGate}})
	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, interrupt.SourceMultiAgentHook, res.Interrupts[0].Source)
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "ok")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	require.Equal(t, interrupt.SourceTool, res.Interrupts[0].Source)
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "z")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, "a done: answer z", res.Node("a").Text())
	assert.Equal(t, 1, r.count("tool:a"))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{1, 1}, seen, "the gated revisit started afresh: only its prompt")
}

// SPEC M9, M7: ExecutionTimeout stops new node runs only: an agent whose
// tool took the run past the budget and then asked finishes once
// answered, as it would have had it not stopped (its run started within
// the budget); the answer is not lost to a FAILED run.
func TestSwarm_AResumedRunFinishesPastExecutionTimeout_M9(t *testing.T) {
	ctx := context.Background()
	// a's turn and b's start must fit in the budget on a busy machine:
	// only b's tool is meant to outlast it.
	const budget = time.Second
	r := newRecorder()
	var calls atomic.Int32
	slowAsk := tool.New("lookup", "asks after a while", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if calls.Add(1) == 1 {
			<-time.After(budget + budget/2) // what is measured is time
		}
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	b := askingAgent(r, "b", handoff{})
	b.Tools = []tool.Tool{slowAsk}
	s := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "dig"})).AddAgent(b),
		swarm.Config{ExecutionTimeout: budget})
	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, res.Message)
	require.Greater(t, res.Duration, budget)
	res, err = s.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "x")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, multiagent.StatusCompleted, res.Node("b").Status)
	assert.Equal(t, 2, r.count("model:b"), "b resumed, it did not start again")
}
