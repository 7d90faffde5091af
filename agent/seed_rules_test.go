package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// SPEC I5 (the seed's tool rule "a single tool can raise multiple
// interrupts but only one at a time"): a tool interrupts, is answered,
// runs again from its start, gets that answer and interrupts with another
// name; the second answer completes it. The model is called once before
// and once after.
func TestSequentialInterrupts_InOneTool(t *testing.T) {
	runs := &counter{}
	tl := tool.New("one", "test tool one", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		runs.inc("one")
		r1, err := tc.Interrupt("first", nil)
		if err != nil {
			return "", err
		}
		s1, _ := r1.String()
		r2, err := tc.Interrupt("second", "after "+s1)
		if err != nil {
			return "", err
		}
		s2, _ := r2.String()
		return s1 + "+" + s2, nil
	})
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tl}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "first", res.Interrupts[0].Name)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "r1")))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 1, "only the new, unanswered one")
	assert.Equal(t, "second", res.Interrupts[0].Name)
	assert.JSONEq(t, `"after r1"`, string(res.Interrupts[0].Reason))
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "r2")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 3, runs.get("one"), "the tool body runs once per pass")
	assert.Equal(t, 2, m.Calls())
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	assert.Equal(t, "r1+r2", msgs[2].ToolResults()[0].Text())
}

// SPEC A5, A7, I5: a batch approval answered on one pass stays answered
// when a per-tool hook interrupts in that pass: the next resume runs the
// batch hook again, which gets its answer and does not ask again.
func TestBeforeToolsAnswer_KeptWhenAToolHookInterruptsInTheSamePass(t *testing.T) {
	rec := &recorder{}
	tl, runs := countingTool("one")
	batch := hook.Func(func(_ context.Context, ev *agent.BeforeToolsEvent) error {
		_, err := ev.Interrupt("batch", nil)
		if err != nil {
			rec.add("batch raised")
		}
		return err
	})
	per := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("per-tool", nil)
		return err
	})
	m := toolThenText("done", model.Call("t1", "one", nil))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{tl}, Hooks: []hook.Provider{batch, per}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "batch", res.Interrupts[0].Name)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "per-tool", res.Interrupts[0].Name)
	res, err = a.Invoke(ctx, agent.Resume(respond(res.Interrupts[0], "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 1, runs.total())
	assert.Equal(t, []string{"batch raised"}, rec.list(), "the batch is asked about once")
	assert.Equal(t, 2, m.Calls())
}

// SPEC I1, I6: JSON null in the Strands resume bytes is an answer: the
// tool gets null and completes, it is not asked again.
func TestNullAnswer_InStrandsResumeJSONIsAnAnswer(t *testing.T) {
	var got []string
	tl := tool.New("one", "test tool one", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		ans, err := tc.Interrupt("q", nil)
		if err != nil {
			return "", err
		}
		got = append(got, string(ans.Raw()))
		return "ok", nil
	})
	a := newAgent(t, agent.Config{Model: toolThenText("done", model.Call("t1", "one", nil)), Tools: []tool.Tool{tl}})
	ctx := context.Background()
	res, err := a.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	in, err := agent.ParseInput([]byte(`[{"interruptResponse":{"interruptId":"` + res.Interrupts[0].ID + `","response":null}}]`))
	require.NoError(t, err)
	res, err = a.Invoke(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, []string{"null"}, got)
}

// SPEC I2, I4, A6 (the seed's tool components: a tool interrupt's name
// "must be unique only among interrupt calls configured in the same tool
// definition"): two tools, and two uses of one of them, all running
// concurrently, each ask under the same name. That is no name clash: the
// cycle stops with three interrupts, one per tool use, each with its own
// id, and each answer reaches the tool use it was raised by.
func TestToolInterruptNames_NeedBeUniqueOnlyWithinATool(t *testing.T) {
	ctx := context.Background()
	mk := func(name string) tool.Tool {
		return tool.New(name, "asks first", func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
			ans, err := tc.Interrupt("myapp-approval", map[string]any{"paths": in.Paths})
			if err != nil {
				return "", err
			}
			s, _ := ans.String()
			return name + " " + in.Paths[0] + ": " + s, nil
		})
	}
	m := toolThenText("done",
		model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}),
		model.Call("t2", "delete_files", pathsIn{Paths: []string{"b"}}),
		model.Call("t3", "archive_files", pathsIn{Paths: []string{"c"}}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{mk("delete_files"), mk("archive_files")}})

	res, err := a.Invoke(ctx, agent.Text("clean up"))
	require.NoError(t, err, "one name in several tools is not a clash")
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	require.Len(t, res.Interrupts, 3)
	want := []string{
		interrupt.ToolCallID("t1", "myapp-approval"),
		interrupt.ToolCallID("t2", "myapp-approval"),
		interrupt.ToolCallID("t3", "myapp-approval"),
	}
	assert.ElementsMatch(t, want, ids(res.Interrupts))
	for _, in := range res.Interrupts {
		assert.Equal(t, "myapp-approval", in.Name)
		assert.Equal(t, interrupt.SourceTool, in.Source)
	}

	res, err = a.Invoke(ctx, agent.Resume(
		interrupt.Respond(want[2], "later"), interrupt.Respond(want[0], "y"), interrupt.Respond(want[1], "n")))
	require.NoError(t, err)
	require.Equal(t, agent.StopEndTurn, res.StopReason)
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	rs := msgs[2].ToolResults()
	require.Len(t, rs, 3)
	assert.Equal(t, "delete_files a: y", rs[0].Text())
	assert.Equal(t, "delete_files b: n", rs[1].Text())
	assert.Equal(t, "archive_files c: later", rs[2].Text())
	assert.Equal(t, 2, m.Calls())
}

// SPEC I7, S1 (the seed: "the response must be JSON-serializable"): a
// resume with one answer that cannot be encoded as JSON is rejected whole,
// with ErrAnswer naming that id: the good answer beside it is not taken,
// nothing runs, and the agent (and its session, read by a new process)
// still waits for both interrupts; a resume with encodable answers then
// completes.
func TestResume_AnAnswerThatIsNotJSONIsRejectedAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	del, runs := countingTool("delete_files")
	build := func() *agent.Agent {
		sm, err := persistence.NewSessionManager(store, "myapp")
		require.NoError(t, err)
		return newAgent(t, agent.Config{
			Model: toolThenText("done",
				model.Call("t1", "delete_files", pathsIn{Paths: []string{"a"}}),
				model.Call("t2", "delete_files", pathsIn{Paths: []string{"b"}})),
			Tools: []tool.Tool{del}, Hooks: []hook.Provider{approveHook("delete_files", "myapp-approval")},
			Session: sm, System: actorstest.System(t)})
	}
	a := build()
	res, err := a.Invoke(ctx, agent.Text("delete a and b"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	first, second := res.Interrupts[0], res.Interrupts[1]

	_, err = a.Invoke(ctx, agent.Resume(respond(first, "y"), respond(second, make(chan int))))
	require.ErrorIs(t, err, interrupt.ErrAnswer)
	var idErr *interrupt.IDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, second.ID, idErr.ID)
	assert.Contains(t, err.Error(), second.ID)
	assert.Equal(t, 0, runs.total(), "nothing runs")
	for _, got := range [][]interrupt.Interrupt{agenttest.Interrupts(t, a), agenttest.Interrupts(t, build())} {
		require.Len(t, got, 2)
		for _, in := range got {
			assert.False(t, in.Answered, "%s: the good answer beside the bad one is not taken", in.ID)
		}
	}

	res, err = build().Invoke(ctx, agent.Resume(respond(first, "y"), respond(second, "y")))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	assert.Equal(t, 2, runs.total())
}
