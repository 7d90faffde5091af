package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

func TestInvoke_TextAnswer(t *testing.T) {
	m := model.Scripted(model.TextTurn("hello"))
	a := newAgent(t, agent.Config{Model: m})
	res, err := a.Invoke(context.Background(), agent.Text("hi"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "hello", res.Message.Text())
	assert.Equal(t, []string{"user:text", "assistant:text"}, describeAll(agenttest.Messages(t, a)))
}

func describeAll(ms []model.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = describe(m)
	}
	return out
}

// SPEC A2: the hook-event order of a two-tool cycle.
func TestHookOrder_TwoToolCycle(t *testing.T) {
	rec := &recorder{}
	t1, _ := countingTool("one")
	t2, _ := countingTool("two")
	m := toolThenText("done", model.Call("t1", "one", nil), model.Call("t2", "two", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1, t2}, Hooks: []hook.Provider{rec}})
	rec.reset()
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	got := rec.list()
	// Concurrent tools may finish in either order; normalise the AfterToolCall pair.
	if got[7] == "AfterToolCall(t2)" {
		got[7], got[8] = got[8], got[7]
	}
	assert.Equal(t, []string{
		"BeforeInvocation",
		"MessageAdded(user:text)",
		"BeforeModelCall",
		"AfterModelCall",
		"BeforeTools",
		"BeforeToolCall(t1)",
		"BeforeToolCall(t2)",
		"AfterToolCall(t1)",
		"AfterToolCall(t2)",
		"AfterTools(t1,t2)",
		"MessageAdded(assistant:toolUse)",
		"MessageAdded(user:toolResult)",
		"BeforeModelCall",
		"AfterModelCall",
		"MessageAdded(assistant:text)",
		"AfterInvocation",
	}, got)
}

// SPEC A1: the callbacks of one event run in registration order for
// Before* events and in reverse for After* events (AfterInvocation,
// AfterModelCall, AfterToolCall, AfterTools), as Strands runs them.
func TestHookOrder_AfterEventsRunInReverseRegistrationOrder(t *testing.T) {
	rec := &recorder{}
	one, _ := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{one}, Hooks: []hook.Provider{tagged{"1", rec}, tagged{"2", rec}}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"1:BeforeInvocation", "2:BeforeInvocation",
		"1:BeforeModelCall", "2:BeforeModelCall", "2:AfterModelCall", "1:AfterModelCall",
		"1:BeforeTools", "2:BeforeTools",
		"1:BeforeToolCall", "2:BeforeToolCall", "2:AfterToolCall", "1:AfterToolCall",
		"2:AfterTools", "1:AfterTools",
		"1:BeforeModelCall", "2:BeforeModelCall", "2:AfterModelCall", "1:AfterModelCall",
		"2:AfterInvocation", "1:AfterInvocation",
	}, rec.list())
}

// tagged records the Before* and After* events it sees as "tag:Event".
type tagged struct {
	tag string
	r   *recorder
}

func (h tagged) RegisterHooks(reg *hook.Registry) {
	add := func(name string) { h.r.add(h.tag + ":" + name) }
	hook.Add(reg, func(context.Context, *agent.BeforeInvocationEvent) error { add("BeforeInvocation"); return nil })
	hook.Add(reg, func(context.Context, *agent.AfterInvocationEvent) error { add("AfterInvocation"); return nil })
	hook.Add(reg, func(context.Context, *agent.BeforeModelCallEvent) error { add("BeforeModelCall"); return nil })
	hook.Add(reg, func(context.Context, *agent.AfterModelCallEvent) error { add("AfterModelCall"); return nil })
	hook.Add(reg, func(context.Context, *agent.BeforeToolsEvent) error { add("BeforeTools"); return nil })
	hook.Add(reg, func(context.Context, *agent.AfterToolsEvent) error { add("AfterTools"); return nil })
	hook.Add(reg, func(context.Context, *agent.BeforeToolCallEvent) error { add("BeforeToolCall"); return nil })
	hook.Add(reg, func(context.Context, *agent.AfterToolCallEvent) error { add("AfterToolCall"); return nil })
}

// SPEC A1: AgentInitialized fires once, at New.
func TestAgentInitialized_FiresOnceAtNew(t *testing.T) {
	rec := &recorder{}
	a := newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("a"), model.TextTurn("b")), Hooks: []hook.Provider{rec}})
	assert.Equal(t, []string{"AgentInitialized"}, rec.list())
	_, err := a.Invoke(context.Background(), agent.Text("1"))
	require.NoError(t, err)
	_, err = a.Invoke(context.Background(), agent.Text("2"))
	require.NoError(t, err)
	assert.Equal(t, 1, rec.count("AgentInitialized"))
	assert.Equal(t, 2, rec.count("BeforeInvocation"))
}

// SPEC A4, A7, I2, I3: a BeforeToolCall interrupt stops that tool; the resume
// replays the stored cycle without a model call and the tool runs once.
func TestBeforeToolCallInterrupt_StopsToolAndResumes(t *testing.T) {
	rec := &recorder{}
	del, runs := countingTool("delete_files")
	m := toolThenText("deleted", model.Call("t1", "delete_files", map[string]any{"paths": []string{"a/b/c.txt"}}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), rec}})
	ctx := context.Background()

	res, err := a.Invoke(ctx, agent.Text("delete old files"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, "v1:before_tool_call:t1:75a96266-45d2-581c-8a6f-043e472e1763", in.ID)
	assert.Equal(t, "myapp-approval", in.Name)
	assert.Equal(t, interrupt.SourceHook, in.Source)
	assert.JSONEq(t, `{"paths":["a/b/c.txt"]}`, string(in.Reason))
	assert.False(t, in.Answered)
	assert.Equal(t, 0, runs.total(), "the interrupted tool must not run")
	assert.Equal(t, 0, rec.count("AfterToolCall(t1)"), "no AfterToolCall for an interrupted tool")
	assert.Equal(t, 1, rec.count("AfterTools()"), "AfterTools fires with the results so far")
	assert.Equal(t, []string{"assistant:toolUse"}, []string{describe(res.Message)}, "result carries the pending tool-use message")
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)), "the pending cycle is not in the history (SPEC A3)")
	assert.True(t, agenttest.Interrupted(t, a))
	assert.Equal(t, 1, m.Calls())

	rec.reset()
	res, err = a.Invoke(ctx, agent.Resume(respond(in, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, "deleted", res.Message.Text())
	assert.Equal(t, 1, runs.get("t1"))
	assert.Equal(t, 2, m.Calls(), "resume must not call the model for the stored cycle")
	assert.Equal(t, 0, rec.count("MessageAdded(user:text)"), "resume adds no user message")
	assert.Equal(t, 1, rec.count("BeforeModelCall"), "only the call after the tools")
	assert.Equal(t, 1, rec.count("BeforeTools"), "BeforeTools fires again on resume")
	assert.False(t, agenttest.Interrupted(t, a))
	assert.Empty(t, agenttest.Interrupts(t, a))
	msgs := agenttest.Messages(t, a)
	assert.Equal(t, []string{"user:text", "assistant:toolUse", "user:toolResult", "assistant:text"}, describeAll(msgs))
	requireValidHistory(t, msgs)
	assert.Equal(t, "delete_files ok", msgs[2].ToolResults()[0].Text())
}

// SPEC A8: a denied approval cancels the tool with the hook's message.
func TestBeforeToolCallInterrupt_DenyCancelsTool(t *testing.T) {
	rec := &recorder{}
	del, runs := countingTool("delete_files")
	m := toolThenText("ok", model.Call("t1", "delete_files", map[string]any{"paths": []string{"x"}}))
	var seen *agent.AfterToolCallEvent
	after := hook.Func(func(_ context.Context, ev *agent.AfterToolCallEvent) error { c := *ev; seen = &c; return nil })
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{del},
		Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval"), rec, after}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "n")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 0, runs.total())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	tr := msgs[2].ToolResults()[0]
	assert.Equal(t, model.ToolError, tr.Status)
	assert.Equal(t, "User denied permission to delete files", tr.Text())
	require.NotNil(t, seen, "AfterToolCall fires for a cancelled tool")
	assert.Equal(t, "User denied permission to delete files", seen.Cancelled)
}

// SPEC A5: a BeforeTools interrupt stops the whole batch; no BeforeToolCall,
// no AfterTools; the resume runs the batch hook again, then the tools.
func TestBeforeToolsInterrupt_StopsBatchAndResumes(t *testing.T) {
	rec := &recorder{}
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	got := map[string]string{}
	batch := func(name string) hook.Provider {
		return hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
			ans, err := ev.Interrupt(name, "approve batch?")
			if err != nil {
				return err
			}
			got[name], _ = ans.String()
			return nil
		})
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{batch("approval_a"), batch("approval_b"), rec}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, []string{
		"v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840",
		"v1:before_tools:fc7d4db5-7c70-583b-86ca-392fc71cadf6",
	}, ids(res.Interrupts))
	assert.Equal(t, 0, rec.count("BeforeToolCall(t1)"))
	assert.Equal(t, 0, rec.count("AfterTools()"))
	assert.Equal(t, 1, m.Calls())

	rec.reset()
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[1], "B"), respond(res.Interrupts[0], "A")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, map[string]string{"approval_a": "A", "approval_b": "B"}, got)
	assert.Equal(t, 1, rec.count("BeforeTools"))
	assert.Equal(t, 1, rec.count("BeforeToolCall(t1)"))
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, 2, m.Calls())
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC I4: every callback runs even after one interrupts; interrupts are
// collected in callback order.
func TestAllHooksRun_WhenOneInterrupts(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("test_tool_id", "one", nil))
	calls := make([]int, 3)
	mk := func(i int, name string) hook.Provider {
		return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			calls[i]++
			if name == "" {
				return nil
			}
			_, err := ev.Interrupt(name, nil)
			return err
		})
	}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{mk(0, "test_name_1"), mk(1, ""), mk(2, "test_name_2")}})
	res, err := a.Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 1}, calls)
	assert.Equal(t, []string{
		"v1:before_tool_call:test_tool_id:da3551f3-154b-5978-827e-50ac387877ee",
		"v1:before_tool_call:test_tool_id:0f5a8068-d1ba-5a48-bf67-c9d33786d8d4",
	}, ids(res.Interrupts))
	assert.Equal(t, 0, runs.total())
}

// SPEC I4: the same name from two callbacks is an error before any further
// work: no extra model call, no tool run, the agent not left interrupted.
func TestDuplicateInterruptNames_RejectedWithoutExtraModelCall(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	same := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("same", nil)
		return err
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{same, same}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.Error(t, err)
	assert.ErrorIs(t, err, interrupt.ErrDuplicateName)
	assert.Contains(t, err.Error(), "interrupt name used more than once")
	assert.Equal(t, 1, m.Calls(), "no model call after the clash")
	assert.Equal(t, 0, runs.total())
	assert.False(t, agenttest.Interrupted(t, a))
	assert.Empty(t, describeAll(agenttest.Messages(t, a)), "SPEC A3: the failed invocation took its prompt back")
}

// SPEC I4: any other error stops the remaining callbacks and fails the invocation.
func TestHookError_StopsRemainingCallbacks(t *testing.T) {
	t1, _ := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	third := 0
	boom := assert.AnError
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, err := ev.Interrupt("first", nil)
			return err
		}),
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { return boom }),
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error { third++; return nil }),
	}})
	_, err := a.Invoke(context.Background(), agent.Text("go"))
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 0, third)
	assert.False(t, agenttest.Interrupted(t, a))
}

// SPEC I5: one callback interrupts, is answered, then interrupts again.
func TestSequentialInterrupts_InOneHook(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	h := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		r1, err := ev.Interrupt("first", nil)
		if err != nil {
			return err
		}
		s, _ := r1.String()
		_, err = ev.Interrupt("second", "after "+s)
		return err
	})
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{h}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "first", res.Interrupts[0].Name)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "r1")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "second", res.Interrupts[0].Name)
	assert.JSONEq(t, `"after r1"`, string(res.Interrupts[0].Reason))
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "r2")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, 2, m.Calls())
}

// SPEC I6, I8: answering only some interrupts; the rest are raised again
// with the same ids, the answered hook keeps its answer.
func TestPartialAnswers(t *testing.T) {
	t1, runs := countingTool("one")
	m := toolThenText("done", model.Call("t1", "one", nil))
	var secSeen []string
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{t1}, Hooks: []hook.Provider{
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			ans, err := ev.Interrupt("sec", "security?")
			if err != nil {
				return err
			}
			s, _ := ans.String()
			secSeen = append(secSeen, s)
			return nil
		}),
		hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			_, err := ev.Interrupt("bud", "budget?")
			return err
		}),
	}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	sec, bud := res.Interrupts[0], res.Interrupts[1]
	res, err = a.Invoke(ctx, agent.Resume(respond(sec, "A")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, []string{bud.ID}, ids(res.Interrupts), "only the unanswered one is listed")
	assert.Equal(t, []string{"A"}, secSeen)
	assert.Equal(t, 0, runs.total())
	res, err = a.Invoke(ctx, agent.Resume(respond(bud, "B")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"A", "A"}, secSeen, "the sec answer is kept across the partial resume")
	assert.Equal(t, 1, runs.total())
}

// SPEC A6, A7: concurrent tools, one interrupts from its context, the other
// completes; the completed one is not run again on resume.
func TestConcurrentTools_InterruptedAndCompleted(t *testing.T) {
	var aRuns, bRuns counter
	ta := tool.New("a", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		aRuns.inc("a")
		ans, err := tc.Interrupt("qa", "may I?")
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "A:" + s, nil
	})
	tb := tool.New("b", "plain", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		bRuns.inc("b")
		return "b ok", nil
	})
	rec := &recorder{}
	m := toolThenText("done", model.Call("t1", "a", nil), model.Call("t2", "b", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{ta, tb}, Hooks: []hook.Provider{rec}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "v1:tool_call:t1:"+interrupt.NameUUID("qa"), res.Interrupts[0].ID)
	assert.Equal(t, interrupt.SourceTool, res.Interrupts[0].Source)
	assert.Equal(t, 1, bRuns.total(), "the sibling runs to completion")
	assert.Equal(t, 1, rec.count("AfterToolCall(t2)"))
	assert.Equal(t, 0, rec.count("AfterToolCall(t1)"))
	assert.Equal(t, 1, rec.count("AfterTools(t2)"))

	rec.reset()
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "yes")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, bRuns.total(), "a completed tool is not run again")
	assert.Equal(t, 2, aRuns.total(), "the interrupted tool runs again from the start")
	assert.Equal(t, 0, rec.count("BeforeToolCall(t2)"), "a completed tool gets no events on resume")
	assert.Equal(t, 0, rec.count("AfterToolCall(t2)"), "a completed tool gets no events on resume")
	assert.Equal(t, 1, rec.count("AfterToolCall(t1)"))
	assert.Equal(t, 1, rec.count("BeforeTools"), "BeforeTools fires again on resume")
	assert.Equal(t, 1, rec.count("AfterTools(t1,t2)"), "AfterTools on resume carries the full set")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	results := msgs[2].ToolResults()
	assert.Equal(t, "A:yes", results[0].Text())
	assert.Equal(t, "b ok", results[1].Text())
	assert.Equal(t, 2, m.Calls())
}

// SPEC A6: the sequential executor stops at the first interrupted tool.
func TestSequentialExecutor_StopsAtFirstInterrupt(t *testing.T) {
	rec := &recorder{}
	var runs counter
	mk := func(name string, ask bool) tool.Tool {
		return tool.New(name, name, func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			runs.inc(name)
			if ask {
				if _, err := tc.Interrupt("q"+name, nil); err != nil {
					return "", err
				}
			}
			return name + " ok", nil
		})
	}
	m := toolThenText("done", model.Call("t1", "A", nil), model.Call("t2", "B", nil), model.Call("t3", "C", nil))
	a := newAgent(t, agent.Config{Model: m, Executor: tool.Sequential{}, Tools: []tool.Tool{mk("A", true), mk("B", false), mk("C", true)}, Hooks: []hook.Provider{rec}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, 1, runs.get("A"))
	assert.Equal(t, 0, runs.get("B"), "later tools do not start")
	assert.Equal(t, 0, rec.count("BeforeToolCall(t2)"))
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "ok")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, "qC", res.Interrupts[0].Name)
	assert.Equal(t, 1, runs.get("B"))
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "ok")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, runs.get("A"))
	assert.Equal(t, 1, runs.get("B"))
	assert.Equal(t, 2, runs.get("C"))
	requireValidHistory(t, agenttest.Messages(t, a))
}

// SPEC A3, I8: three concurrent tools, two interrupt; a partial resume
// re-interrupts; the final history has one result per use, in order.
func TestHistoryValid_AfterSeveralPasses(t *testing.T) {
	var runs counter
	mk := func(name string, ask bool) tool.Tool {
		return tool.New(name, name, func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			runs.inc(name)
			if ask {
				ans, err := tc.Interrupt("q"+name, nil)
				if err != nil {
					return "", err
				}
				s, _ := ans.String()
				return name + ":" + s, nil
			}
			return name + " ok", nil
		})
	}
	m := toolThenText("done", model.Call("t1", "a", nil), model.Call("t2", "b", nil), model.Call("t3", "c", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{mk("a", true), mk("b", false), mk("c", true)}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	byName := map[string]interrupt.Interrupt{}
	for _, in := range res.Interrupts {
		byName[in.Name] = in
	}
	res, err = a.Invoke(ctx, agent.Resume(respond(byName["qa"], "1")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	assert.Equal(t, []string{byName["qc"].ID}, ids(res.Interrupts))
	assert.Equal(t, []string{"user:text"}, describeAll(agenttest.Messages(t, a)), "nothing appended while interrupted")
	res, err = a.Invoke(ctx, agent.Resume(respond(byName["qc"], "3")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	require.Len(t, msgs, 4)
	var texts []string
	for _, r := range msgs[2].ToolResults() {
		texts = append(texts, r.Text())
	}
	assert.Equal(t, []string{"a:1", "b ok", "c:3"}, texts)
	assert.Equal(t, 1, runs.get("b"))
	assert.Equal(t, 2, runs.get("a"), "a runs in pass 1 and pass 2 only")
	assert.Equal(t, 3, runs.get("c"))
	assert.Equal(t, 2, m.Calls())
}

// SPEC A1: an agent refuses, when it is built, a hook for an event it
// never fires (an orchestrator's BeforeNodeCall gate given to an agent),
// which would otherwise never run.
func TestNew_RefusesAHookForAnEventTheAgentNeverFires(t *testing.T) {
	gate := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	_, err := agent.New(context.Background(), agent.Config{Model: model.Scripted(), Hooks: []hook.Provider{gate}})
	require.ErrorIs(t, err, agent.ErrConfig)
	require.ErrorIs(t, err, hook.ErrNotFired)
	assert.Contains(t, err.Error(), "multiagent.BeforeNodeCallEvent")
	assert.Contains(t, err.Error(), "graph.Config.Hooks")

	// Every event of SPEC A1 is accepted.
	ok := hook.ProviderFunc(func(r *hook.Registry) {
		hook.Add(r, func(context.Context, *agent.AgentInitializedEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.BeforeInvocationEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.AfterInvocationEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.MessageAddedEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.BeforeModelCallEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.AfterModelCallEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.BeforeToolsEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.BeforeToolCallEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.AfterToolCallEvent) error { return nil })
		hook.Add(r, func(context.Context, *agent.AfterToolsEvent) error { return nil })
	})
	newAgent(t, agent.Config{Model: model.Scripted(model.TextTurn("hi")), Hooks: []hook.Provider{ok}})
}

// SPEC S2: an agent's id is checked at New with or without a session (it
// is its session record's id once it has one): an id a store cannot keep
// is a config error matching persistence.ErrBadID, where it used to be
// accepted until a session was added.
func TestNew_S2_AnIdAStoreCannotKeepIsRefusedWithOrWithoutASession(t *testing.T) {
	for _, id := range []string{"a/b", "a\\b", "bad\xffutf8", "tab\there", strings.Repeat("x", 256)} {
		_, err := agent.New(context.Background(), agent.Config{ID: id, Model: model.Scripted(), System: actorstest.System(t)})
		require.ErrorIs(t, err, agent.ErrConfig, "%q", id)
		assert.ErrorIs(t, err, persistence.ErrBadID, "%q", id)
	}
	a, err := agent.New(context.Background(), agent.Config{ID: "ok-id", Model: model.Scripted(), System: actorstest.System(t)})
	require.NoError(t, err)
	require.NoError(t, a.Close(context.Background()))
}
