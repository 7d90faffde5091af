package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// depthRig builds three agents on one session: "a" has "b" as its tool
// "helper_b", "b" has "c" as its tool "helper_c", and c's tool "act" is
// gated: by an approval hook of c (byTool false) or by the tool itself
// asking (byTool true). models counts model calls per agent, runs the
// runs of act.
type depthRig struct {
	models, runs *counter
	byTool       bool
	ungated      bool
	opts         []tool.Option // options of act
	// crash, when set, is called while act runs (before it asks).
	crash func(ctx context.Context)
	// helperOpts are options of the AsTool tools.
	helperOpts []tool.Option
	// sys and idle, when set: the runtime, and the agents' IdleTimeout.
	sys  *actors.System
	idle time.Duration
}

func (r *depthRig) counted(name, text string, call model.ToolCall) *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.models.inc(name)
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn(text), nil
		}
		return model.ToolTurn(call), nil
	})
}

func (r *depthRig) build(t *testing.T, st persistence.Store) (a, b, c *agent.Agent) {
	t.Helper()
	sys := r.sys
	if sys == nil {
		sys = actorstest.System(t)
	}
	sm, err := persistence.NewSessionManager(st, "deep")
	require.NoError(t, err)
	act := tool.New("act", "acts", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		if r.crash != nil {
			r.crash(ctx)
		}
		if r.byTool && !r.ungated {
			ans, err := tc.Interrupt("confirm", "act?")
			if err != nil {
				return "", err
			}
			if s, _ := ans.String(); s != "y" {
				return "refused", nil
			}
		}
		r.runs.inc("act")
		return "acted", nil
	}, r.opts...)
	var cHooks []hook.Provider
	if !r.byTool && !r.ungated {
		cHooks = append(cHooks, approveHook("act", "approval"))
	}
	c = newAgent(t, agent.Config{ID: "c", OwnerPath: "a/b/c", IdleTimeout: r.idle, System: sys, Session: sm,
		Model: r.counted("c", "c done", model.Call("c1", "act", pathsIn{Paths: []string{"x"}})),
		Tools: []tool.Tool{act}, Hooks: cHooks})
	b = newAgent(t, agent.Config{ID: "b", OwnerPath: "a/b", IdleTimeout: r.idle, System: sys, Session: sm,
		Model: r.counted("b", "b done", model.Call("b1", "helper_c", agent.ToolInput{Prompt: "do c"})),
		Tools: []tool.Tool{agent.AsTool(c, "helper_c", "agent c", r.helperOpts...)}})
	a = newAgent(t, agent.Config{ID: "a", IdleTimeout: r.idle, System: sys, Session: sm,
		Model: r.counted("a", "a done", model.Call("a1", "helper_b", agent.ToolInput{Prompt: "do b"})),
		Tools: []tool.Tool{agent.AsTool(b, "helper_b", "agent b", r.helperOpts...)}})
	return a, b, c
}

// SPEC M11, I2, S1: A uses B as a tool and B uses C; C's tool is gated,
// by C's hook or by the tool itself. The question surfaces at A; answered
// on a fresh runtime from the same store, every level resumes: each
// model is called twice in all (once before the stop, once after), act
// runs once, and every history holds one prompt.
func TestAgentAsTool_M11_AnInterruptTwoLevelsDownResumesEveryLevel(t *testing.T) {
	for _, byTool := range []bool{false, true} {
		for _, kind := range []string{"memory", "sqlite"} {
			name := kind + "/hook"
			if byTool {
				name = kind + "/tool"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				var st persistence.Store = memory.New()
				if kind == "sqlite" {
					st = openSQLite(t)
				}
				r := &depthRig{models: &counter{}, runs: &counter{}, byTool: byTool}
				a, _, _ := r.build(t, st)
				res, err := a.Invoke(ctx, agent.Text("go"))
				require.NoError(t, err)
				require.Equal(t, agent.StopInterrupt, res.StopReason)
				require.Len(t, res.Interrupts, 1)
				in := res.Interrupts[0]
				assert.Equal(t, interrupt.SourceTool, in.Source)
				assert.Equal(t, 0, r.runs.get("act"))
				require.NoError(t, a.Close(ctx))

				r2 := &depthRig{models: &counter{}, runs: &counter{}, byTool: byTool}
				a2, b2, c2 := r2.build(t, st)
				res, err = a2.Invoke(ctx, agent.Resume(respond(in, "y")))
				require.NoError(t, err)
				require.Equal(t, agent.StopEndTurn, res.StopReason, "%v", res.Interrupts)
				assert.Equal(t, "a done", res.Message.Text())
				assert.Equal(t, 1, r2.runs.get("act"))
				for _, lvl := range []string{"a", "b", "c"} {
					assert.Equal(t, 1, r.models.get(lvl), "level %s before the stop", lvl)
					assert.Equal(t, 1, r2.models.get(lvl), "level %s resumed, not restarted", lvl)
				}
				requireOneFinishedCall(t, a2, b2, c2)
			})
		}
	}
}

// SPEC M11, S6: the process dies while C's tool runs, two levels below
// A (the store is copied). On a fresh runtime from the copy, A carries its
// run on: an at-least-once tool runs again; an at-most-once one asks
// (braid.recovery, surfaced at A) and runs again only on "rerun". No level
// restarts: each model is called once more, to answer.
func TestAgentAsTool_S6_ACrashTwoLevelsDownCarriesEveryLevelOn(t *testing.T) {
	for _, mode := range []string{"at-least-once", "rerun", "skip"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			st := openSQLite(t)
			var mu sync.Mutex
			var crash *export.Session
			var opts []tool.Option
			if mode != "at-least-once" {
				opts = append(opts, tool.AtMostOnce())
			}
			r := &depthRig{models: &counter{}, runs: &counter{}, ungated: true, opts: opts}
			r.crash = func(ctx context.Context) {
				mu.Lock()
				defer mu.Unlock()
				if crash == nil {
					exp, err := export.Read(ctx, st, "deep")
					require.NoError(t, err)
					crash = exp
				}
			}
			a, _, _ := r.build(t, st)
			res, err := a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason)
			require.NotNil(t, crash)
			require.NoError(t, a.Close(ctx))

			st2 := openSQLite(t)
			require.NoError(t, export.Write(ctx, st2, crash))
			r2 := &depthRig{models: &counter{}, runs: &counter{}, ungated: true, opts: opts}
			a2, b2, c2 := r2.build(t, st2)
			s, err := a2.Status(ctx)
			require.NoError(t, err)
			require.True(t, s.Incomplete(), "%+v", s)
			res, err = a2.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			if mode != "at-least-once" {
				require.Equal(t, agent.StopInterrupt, res.StopReason)
				require.Len(t, res.Interrupts, 1)
				assert.Equal(t, 0, r2.runs.get("act"), "not run again without an answer")
				ans := "skip"
				if mode == "rerun" {
					ans = agent.RecoveryRerun
				}
				var reason agent.RecoveryReason
				require.NoError(t, res.Interrupts[0].DecodeReason(&reason))
				assert.Equal(t, "act", reason.Tool)
				res, err = a2.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], ans)))
				require.NoError(t, err)
			}
			require.Equal(t, agent.StopEndTurn, res.StopReason, "%v", res.Interrupts)
			want := 1
			if mode == "skip" {
				want = 0
			}
			assert.Equal(t, want, r2.runs.get("act"))
			for _, lvl := range []string{"a", "b", "c"} {
				assert.Equal(t, 1, r2.models.get(lvl), "level %s carried on, not restarted", lvl)
			}
			requireOneFinishedCall(t, a2, b2, c2)
			snap, err := c2.Snapshot(ctx)
			require.NoError(t, err)
			rs := snap.Messages[2].ToolResults()
			require.Len(t, rs, 1)
			if mode == "skip" {
				assert.Equal(t, model.ToolError, rs[0].Status)
				assert.Contains(t, rs[0].Text(), "cut off by a crash")
			} else {
				assert.Equal(t, "acted", rs[0].Text())
			}
		})
	}
}

// SPEC M11, A4, I6, I8: in one cycle the outer agent's own BeforeToolCall
// hook stops the second of two calls of a sub agent while the first call's
// sub agent asks. Both questions surface; answered at once, in either
// order one at a time, every answer reaches its asker, each file is
// deleted once.
func TestAgentAsTool_M11_AnOuterHookAndASubAgentAskInOneCycle(t *testing.T) {
	for _, order := range []string{"both", "gate first", "sub first"} {
		t.Run(order, func(t *testing.T) {
			ctx := context.Background()
			gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
				if ev.ToolUse.ToolUseID != "o2" {
					return nil
				}
				_, err := ev.Interrupt("gate", nil)
				return err
			})
			runs := &counter{}
			sub, outer := twoCallsRig(t, runs, gate)
			innerID := interrupt.OwnedID("outer/helper", interrupt.BeforeToolCallID("s1", "approval"))
			gateID := interrupt.BeforeToolCallID("o2", "gate")
			subID := interrupt.ToolCallID("o1", innerID)
			res, err := outer.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.ElementsMatch(t, []string{gateID, subID}, ids(res.Interrupts))
			byID := map[string]interrupt.Interrupt{}
			for _, in := range res.Interrupts {
				byID[in.ID] = in
			}
			switch order {
			case "both":
				res, err = outer.Invoke(ctx, agent.Resume(respond(byID[gateID], "y"), respond(byID[subID], "y")))
			case "gate first":
				res, err = outer.Invoke(ctx, agent.Resume(respond(byID[gateID], "y")))
				require.NoError(t, err)
				require.Equal(t, []string{subID}, ids(res.Interrupts))
				assert.Equal(t, 0, runs.total())
				res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
			case "sub first":
				res, err = outer.Invoke(ctx, agent.Resume(respond(byID[subID], "y")))
				require.NoError(t, err)
				require.Equal(t, []string{gateID}, ids(res.Interrupts))
				assert.Equal(t, 1, runs.get("a"))
				res, err = outer.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
			}
			require.NoError(t, err)
			stops := answerAll(t, outer, res)
			assert.Equal(t, [][]string{{interrupt.ToolCallID("o2", innerID)}}, stops)
			requireBothCallsAnswered(t, sub, outer, runs)
		})
	}
}

// SPEC I7, M11: bad resumes of a question two levels down are refused
// whole, and the run can still be answered: an unknown id under the
// inner agents' prefixes, C's own id (not the one surfaced at A); an
// answer of another type reaches C's hook as it is; after A moved on, a
// resume is refused.
func TestAgentAsTool_I7_BadResumesOfADeepQuestion(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	r := &depthRig{models: &counter{}, runs: &counter{}}
	a, b, c := r.build(t, st)
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	cID := interrupt.OwnedID("a/b/c", interrupt.BeforeToolCallID("c1", "approval"))
	bID := interrupt.OwnedID("a/b", interrupt.ToolCallID("b1", cID))
	assert.Equal(t, interrupt.ToolCallID("a1", bID), in.ID)
	for _, bad := range []string{
		cID, bID,
		interrupt.ToolCallID("a1", interrupt.OwnedID("a/b", interrupt.ToolCallID("b1", "bogus"))),
		interrupt.ToolCallID("a1", interrupt.OwnedID("a/b", "bogus")),
	} {
		_, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(bad, "y")))
		require.ErrorIs(t, err, interrupt.ErrUnknownID, bad)
		assert.Contains(t, err.Error(), bad)
	}
	for _, ag := range []*agent.Agent{a, b, c} {
		s, err := ag.Status(ctx)
		require.NoError(t, err)
		assert.True(t, s.Interrupted())
	}
	res, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, map[string]any{"ok": true})))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, r.runs.get("act"), "an answer that is not \"y\" denies")
	snap, err := c.Snapshot(ctx)
	require.NoError(t, err)
	rs := snap.Messages[2].ToolResults()
	require.Len(t, rs, 1)
	assert.Contains(t, rs[0].Text(), "denied")
	_, err = a.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
	require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
	assert.Equal(t, 0, r.runs.get("act"))
}

// SPEC M11, S6: C's gated tool, two levels below A, is answered, then the
// process dies while it runs. On a fresh runtime from the copy, A
// carries its run on: the question is not asked again, the tool runs
// again (at least once) and no level restarts.
func TestAgentAsTool_S6_ACrashAfterADeepAnswerDoesNotAskAgain(t *testing.T) {
	for _, byTool := range []bool{false, true} {
		t.Run(map[bool]string{false: "hook", true: "tool"}[byTool], func(t *testing.T) {
			ctx := context.Background()
			st := openSQLite(t)
			var mu sync.Mutex
			armed := false
			var crash *export.Session
			cut := func(ctx context.Context) {
				mu.Lock()
				defer mu.Unlock()
				if armed && crash == nil {
					exp, err := export.Read(ctx, st, "deep")
					require.NoError(t, err)
					crash = exp
				}
			}
			r := &depthRig{models: &counter{}, runs: &counter{}, byTool: byTool, crash: cut}
			a, _, _ := r.build(t, st)
			res, err := a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Len(t, res.Interrupts, 1)
			in := res.Interrupts[0]
			mu.Lock()
			armed = true
			mu.Unlock()
			res, err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason)
			require.NotNil(t, crash)
			require.NoError(t, a.Close(ctx))

			st2 := openSQLite(t)
			require.NoError(t, export.Write(ctx, st2, crash))
			r2 := &depthRig{models: &counter{}, runs: &counter{}, byTool: byTool}
			a2, b2, c2 := r2.build(t, st2)
			s, err := a2.Status(ctx)
			require.NoError(t, err)
			require.True(t, s.Incomplete(), "%+v", s)
			res, err = a2.Invoke(ctx, agent.Input{})
			require.NoError(t, err)
			require.Equal(t, agent.StopEndTurn, res.StopReason, "not asked again: %v", res.Interrupts)
			assert.Equal(t, 1, r2.runs.get("act"))
			for _, lvl := range []string{"a", "b", "c"} {
				assert.Equal(t, 1, r2.models.get(lvl), "level %s carried on, not restarted", lvl)
			}
			requireOneFinishedCall(t, a2, b2, c2)
		})
	}
}

// SPEC M11, R4: A uses B as a tool and B uses C; C's tool is gated. With
// an idle timeout, all three actors are passivated while the question
// waits; the answer re-activates them, and every level resumes.
func TestAgentAsTool_R4_ADeepQuestionResumesAfterTheTreeWasPassivated(t *testing.T) {
	ctx := context.Background()
	passivated := make(chan struct{}, 64)
	sys, err := actors.NewSystem(actors.Config{Observer: func(_ actors.Identity, l actors.Lifecycle) {
		if l == actors.Passivated {
			passivated <- struct{}{}
		}
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	r := &depthRig{models: &counter{}, runs: &counter{}, sys: sys, idle: 5 * time.Millisecond}
	a, b, c := r.build(t, openSQLite(t))
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	// Each agent live now passivates, and says so, in its idle timeout.
	for {
		anyLive := false
		for _, ag := range []*agent.Agent{a, b, c} {
			live, err := ag.Binding().Live(ctx)
			require.NoError(t, err)
			anyLive = anyLive || live
		}
		if !anyLive {
			break
		}
		select {
		case <-passivated:
		case <-time.After(10 * time.Second):
			t.Fatal("the tree was not passivated")
		}
	}
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason, "%v", res.Interrupts)
	assert.Equal(t, 1, r.runs.get("act"))
	for _, lvl := range []string{"a", "b", "c"} {
		assert.Equal(t, 2, r.models.get(lvl), "level %s resumed, not restarted", lvl)
	}
	for i, ag := range []*agent.Agent{a, b, c} {
		snap, err := ag.Snapshot(ctx)
		require.NoError(t, err)
		requireValidHistory(t, snap.Messages)
		assert.Len(t, snap.Messages, 4, "agent %d", i)
	}
}

// SPEC S6, M11: every tool of the three levels is at-most-once, and the
// process dies while C's tool runs. Carried on, each level asks
// braid.recovery for its cut-off tool, one after the other, top down;
// "rerun" at every level runs C's tool again once, and no level restarts.
func TestAgentAsTool_S6_AtMostOnceAtEveryLevelAsksOncePerLevel(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	var mu sync.Mutex
	var crash *export.Session
	once := []tool.Option{tool.AtMostOnce()}
	r := &depthRig{models: &counter{}, runs: &counter{}, ungated: true, opts: once, helperOpts: once}
	r.crash = func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if crash == nil {
			exp, err := export.Read(ctx, st, "deep")
			require.NoError(t, err)
			crash = exp
		}
	}
	a, _, _ := r.build(t, st)
	_, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.NotNil(t, crash)
	require.NoError(t, a.Close(ctx))

	st2 := openSQLite(t)
	require.NoError(t, export.Write(ctx, st2, crash))
	r2 := &depthRig{models: &counter{}, runs: &counter{}, ungated: true, opts: once, helperOpts: once}
	a2, b2, c2 := r2.build(t, st2)
	res, err := a2.Invoke(ctx, agent.Input{})
	require.NoError(t, err)
	var tools []string
	for res.StopReason == agent.StopInterrupt {
		require.Len(t, res.Interrupts, 1)
		require.Less(t, len(tools), 5)
		var reason agent.RecoveryReason
		require.NoError(t, res.Interrupts[0].DecodeReason(&reason))
		tools = append(tools, reason.Tool)
		res, err = a2.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], agent.RecoveryRerun)))
		require.NoError(t, err)
	}
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"helper_b", "helper_c", "act"}, tools)
	assert.Equal(t, 1, r2.runs.get("act"))
	for _, lvl := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, r2.models.get(lvl), "level %s carried on, not restarted", lvl)
	}
	for i, ag := range []*agent.Agent{a2, b2, c2} {
		snap, err := ag.Snapshot(ctx)
		require.NoError(t, err)
		requireValidHistory(t, snap.Messages)
		assert.Len(t, snap.Messages, 4, "agent %d", i)
	}
}

// SPEC M11, A6, I6, I8: two sub agents, each the tool of one outer agent,
// each with two gated tools, are called in one turn under the concurrent
// executor: all four questions surface at once, in the order they were
// raised per call. Answered one call's questions first (one of them, then
// the other), then the rest at once, each tool runs once and each call
// gets its sub agent's answer.
func TestAgentAsTool_M11_QuestionsOfTwoSubAgentsAreAnsweredInAnyGrouping(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	sm, err := persistence.NewSessionManager(openSQLite(t), "two")
	require.NoError(t, err)
	runs := &counter{}
	mkSub := func(id string) *agent.Agent {
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			runs.inc(id + "/" + tc.ToolUse.ToolUseID)
			return "deleted", nil
		})
		m := toolThenText(id+" done", model.Call("s1", "delete_files", pathsIn{Paths: []string{"x"}}),
			model.Call("s2", "delete_files", pathsIn{Paths: []string{"y"}}))
		return newAgent(t, agent.Config{ID: id, OwnerPath: "outer/" + id, System: sys, Session: sm, Model: m,
			Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "approval")}})
	}
	one, two := mkSub("one"), mkSub("two")
	outer := newAgent(t, agent.Config{ID: "outer", System: sys, Session: sm, Executor: tool.Concurrent{},
		Model: toolThenText("outer done", model.Call("o1", "h1", agent.ToolInput{Prompt: "p"}),
			model.Call("o2", "h2", agent.ToolInput{Prompt: "q"})),
		Tools: []tool.Tool{agent.AsTool(one, "h1", "one"), agent.AsTool(two, "h2", "two")}})
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 4)
	var o1, o2 []interrupt.Interrupt
	for _, in := range res.Interrupts {
		if in.ID[:len("v1:tool_call:o1")] == "v1:tool_call:o1" {
			o1 = append(o1, in)
		} else {
			o2 = append(o2, in)
		}
	}
	require.Len(t, o1, 2)
	require.Len(t, o2, 2)
	res, err = outer.Invoke(ctx, agent.Resume(respond(o1[0], "y")))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{o1[1].ID, o2[0].ID, o2[1].ID}, ids(res.Interrupts), "the rest still wait")
	assert.Equal(t, 0, runs.total(), "a sub agent resumes only with all its answers")
	res, err = outer.Invoke(ctx, agent.Resume(respond(o1[1], "y")))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{o2[0].ID, o2[1].ID}, ids(res.Interrupts))
	assert.Equal(t, 1, runs.get("one/s1"))
	assert.Equal(t, 1, runs.get("one/s2"))
	res, err = outer.Invoke(ctx, agent.Resume(respond(o2[0], "y"), respond(o2[1], "n")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.get("two/s1"))
	assert.Equal(t, 0, runs.get("two/s2"), "denied")
	assert.Equal(t, 2, runs.get("one/s1")+runs.get("one/s2"))
	snap, err := outer.Snapshot(ctx)
	require.NoError(t, err)
	requireValidHistory(t, snap.Messages)
	rs := snap.Messages[2].ToolResults()
	require.Len(t, rs, 2)
	assert.Equal(t, "one done", rs[0].Text())
	assert.Equal(t, "two done", rs[1].Text())
}

// requireOneFinishedCall checks that each level of a tree of agents holds
// a valid history of one call, finished: one prompt, one tool use and its
// result, one answer.
func requireOneFinishedCall(t *testing.T, levels ...*agent.Agent) {
	t.Helper()
	for i, ag := range levels {
		snap, err := ag.Snapshot(context.Background())
		require.NoError(t, err)
		requireValidHistory(t, snap.Messages)
		assert.Equal(t, 1, countUser(snap.Messages), "agent %d", i)
		assert.Len(t, snap.Messages, 4, "agent %d", i)
	}
}
