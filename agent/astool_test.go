package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// subAndOuter builds a sub agent whose tool is gated by an approval hook,
// and an outer agent that has the sub agent as its tool "helper".
func subAndOuter(t *testing.T, store persistence.Store, runs *counter) (*agent.Agent, *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(store, "nested")
	require.NoError(t, err)
	delTool := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc("run")
		return "deleted", nil
	})
	sub := newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm,
		Model: toolThenText("sub done", model.Call("s1", "delete_files", pathsIn{Paths: []string{"a"}})),
		Tools: []tool.Tool{delTool}, Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
	outer := newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm,
		Model: toolThenText("outer done", model.Call("o1", "helper", agent.ToolInput{Prompt: "clean up"})),
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})
	return sub, outer
}

// SPEC M11: an agent is a tool of another; an interrupt of the inner
// agent surfaces at the outer one (its reason kept, its id naming the
// inner interrupt), and the outer resume reaches the inner agent, which
// resumes: its tool runs once, then both answer. It works again after
// both were rebuilt on a fresh runtime from their sessions.
func TestAgentAsTool_InnerInterruptSurfacesAndResumesTheInnerAgent(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := &counter{}
	_, outer := subAndOuter(t, st, runs)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))
	assert.Equal(t, innerID, in.Name, "named by the inner interrupt's id")
	assert.Equal(t, interrupt.ToolCallID("o1", innerID), in.ID)
	var reason map[string]any
	require.NoError(t, in.DecodeReason(&reason))
	assert.Equal(t, []any{"a"}, reason["paths"], "the inner interrupt's reason")
	require.NoError(t, outer.Close(ctx))

	runs2 := &counter{}
	sub2, outer2 := subAndOuter(t, st, runs2)
	res, err = outer2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "outer done", res.Message.Text())
	assert.Equal(t, 1, runs2.get("run"), "the inner tool ran once, after the answer")
	msgs, err := sub2.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, "sub done", msgs.Messages[len(msgs.Messages)-1].Text())
	assert.Equal(t, 1, countUser(msgs.Messages), "the inner agent resumed, it did not start again")
}

func countUser(ms []model.Message) int {
	n := 0
	for _, m := range ms {
		if m.Role == model.RoleUser && len(m.ToolResults()) == 0 {
			n++
		}
	}
	return n
}

// SPEC M11, S6: a sub agent whose run a Close cut off (its tool cut, its
// run incomplete) takes no prompt until that run is carried on. Called
// again with the same prompt (the outer agent carrying its own cut-off
// run on), the tool carries the sub agent's run on; called with another
// prompt (a new call), it drops that dead run and answers the new one.
// Before, every later call failed with ErrIncompleteRun.
func TestAgentAsTool_S6_ASubAgentCutOffIsCarriedOnByTheSameCallAndDroppedByAnother(t *testing.T) {
	for _, prompt := range []string{"go", "another request"} {
		t.Run(prompt, func(t *testing.T) {
			ctx := context.Background()
			r := &closeCutRig{st: memory.New(), started: make(chan struct{}, 1)}
			sub := r.closedMidTool(t) // cut off while answering "go"
			outer := newAgent(t, agent.Config{Model: model.Scripted(), System: actorstest.System(t),
				Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})
			res, err := outer.CallTool(ctx, "helper", agent.ToolInput{Prompt: prompt})
			require.NoError(t, err)
			assert.Equal(t, "saw: fetched", res.Text())
			snap, err := sub.Snapshot(ctx)
			require.NoError(t, err)
			requireValidHistory(t, snap.Messages)
			var prompts []string
			for _, m := range snap.Messages {
				if m.Role == model.RoleUser && len(m.ToolResults()) == 0 {
					prompts = append(prompts, m.Text())
				}
			}
			assert.Equal(t, []string{prompt}, prompts, "the sub agent's history holds this call's prompt alone")
			assert.Equal(t, int32(2), r.runs.Load())
		})
	}
}

// gatedTwice builds, on a fresh runtime and the session "nested" of st, a
// sub agent whose model asks for its tool "act" in two cycles, each gated
// by a BeforeTools approval (the same interrupt id, v1:before_tools:..,
// raised again in the second cycle, SPEC A7), and an outer agent that has
// the sub agent as its tool "helper".
func gatedTwice(t *testing.T, st persistence.Store, runs *counter) (*agent.Agent, *agent.Agent) {
	t.Helper()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(st, "nested")
	require.NoError(t, err)
	act := tool.New("act", "acts", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc(tc.ToolUse.ToolUseID)
		return "acted", nil
	})
	subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		cycles := 0
		for _, m := range req.Messages {
			if len(m.ToolResults()) > 0 {
				cycles++
			}
		}
		switch cycles {
		case 0:
			return model.ToolTurn(model.Call("s1", "act", pathsIn{})), nil
		case 1:
			return model.ToolTurn(model.Call("s2", "act", pathsIn{})), nil
		}
		return model.TextTurn("sub done"), nil
	})
	gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		ans, err := ev.Interrupt("approval", "run this batch?")
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.Cancel("denied")
		}
		return nil
	})
	sub := newAgent(t, agent.Config{ID: "sub", OwnerPath: "outer/helper", System: sys, Session: sm,
		Model: subModel, Tools: []tool.Tool{act}, Hooks: []hook.Provider{gate}})
	outer := newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm,
		Model: toolThenText("outer done", model.Call("o1", "helper", agent.ToolInput{Prompt: "do both"})),
		Tools: []tool.Tool{agent.AsTool(sub, "helper", "a helper agent")}})
	return sub, outer
}

// SPEC M11, A7, I3: a sub agent used as a tool that asks again with an
// interrupt id it raised earlier in the same call (its BeforeTools gate, on
// its second cycle) stops the outer agent again with a new question, whose
// answer resumes the sub agent, also after both were rebuilt on a fresh
// runtime. Before, the outer tool found the answer to the first question
// under that id, gave the outer model an empty result as the helper's
// answer and went on, while the sub agent stayed interrupted and its
// second batch never ran.
func TestAgentAsTool_M11_ASubInterruptRaisedAgainInOneCallIsAskedAgain(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	runs := &counter{}
	_, outer := gatedTwice(t, st, runs)
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	first := res.Interrupts[0]

	res, err = outer.Invoke(ctx, agent.Resume(interrupt.Respond(first.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason, "the sub agent's second batch is asked for")
	require.Len(t, res.Interrupts, 1)
	second := res.Interrupts[0]
	assert.NotEqual(t, first.ID, second.ID)
	assert.Equal(t, 1, runs.get("s1"))
	assert.Equal(t, 0, runs.get("s2"), "not before its approval")
	require.NoError(t, outer.Close(ctx))

	runs2 := &counter{}
	sub2, outer2 := gatedTwice(t, st, runs2)
	res, err = outer2.Invoke(ctx, agent.Resume(interrupt.Respond(second.ID, "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "outer done", res.Message.Text())
	assert.Equal(t, 0, runs2.get("s1"), "the first batch is not run again")
	assert.Equal(t, 1, runs2.get("s2"))
	snap, err := outer2.Snapshot(ctx)
	require.NoError(t, err)
	results := snap.Messages[2].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, "sub done", results[0].Text(), "the helper's answer is the sub agent's")
	st2, err := sub2.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.ActivityIdle, st2.State)
}
