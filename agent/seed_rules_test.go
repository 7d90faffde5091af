package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
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
