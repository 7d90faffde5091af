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

// SPEC A6, A8: with the sequential executor, a Cancel while a tool runs
// starts no later tool of the batch: they get the error result
// DefaultCancelled ("Tool execution cancelled") without their hooks, as
// the tools of a batch Cancel stops before it starts, and the run ends
// cancelled. Before, every later tool started (its BeforeToolCall hooks
// fired, it ran) after the Cancel.
func TestAgentCancel_A8_SequentialToolsAfterTheCancelDoNotStart(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	slow := tool.New("slow", "ignores its context", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		close(started)
		<-release // a tool that does not watch its context
		return "slow done", nil
	})
	later, runs := countingTool("later")
	rec := &recorder{}
	m := toolThenText("never", model.Call("t1", "slow", nil), model.Call("t2", "later", pathsIn{}))
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{slow, later}, Executor: tool.Sequential{}, Hooks: []hook.Provider{rec}})

	type outcome struct {
		res *agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Invoke(context.Background(), agent.Text("go"))
		done <- outcome{res, err}
	}()
	bhWait(t, started, "the first tool to start")
	assert.True(t, cancelNow(t, a))
	close(release)
	o := bhWait(t, done, "the cancelled invocation to return")
	require.NoError(t, o.err)
	assert.Equal(t, agent.StopCancelled, o.res.StopReason)
	assert.Zero(t, runs.total(), "the later tool did not run")
	assert.Zero(t, rec.count("BeforeToolCall(t2)"), "nor did its hooks fire")
	msgs := agenttest.Messages(t, a)
	requireValidHistory(t, msgs)
	results := msgs[2].ToolResults()
	require.Len(t, results, 2)
	assert.Equal(t, "slow done", results[0].Text(), "the running tool's own result")
	assert.Equal(t, model.ToolError, results[1].Status)
	assert.Equal(t, agent.DefaultCancelled, results[1].Text())
	assert.Equal(t, 1, m.Calls(), "no model call after the cancel")
}

// SPEC A6, A8, S6: under the concurrent executor, a call held back behind
// another call of its exclusive key (tool.Exclusive) has not started when
// the invocation is stopped: after a Cancel it does not start and gets the
// error result DefaultCancelled (AfterToolCall fires with it, as its
// BeforeToolCall did), and after a Close (a cut) it does not start and has
// no result, as a tool cut off by a crash. Before, it started after the
// Cancel or the Close, and its side effect happened.
func TestAgentCancel_A8_AHeldBackExclusiveCallDoesNotStartOnceStopped(t *testing.T) {
	for _, stop := range []string{"cancel", "close"} {
		t.Run(stop, func(t *testing.T) {
			ctx := context.Background()
			started, cut, release := make(chan struct{}, 2), make(chan struct{}, 2), make(chan struct{})
			runs := &counter{}
			deploy := tool.New("deploy", "finishes what it started", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
				runs.inc(tc.ToolUse.ToolUseID)
				started <- struct{}{}
				<-ctx.Done()
				cut <- struct{}{}
				<-release // it sees the stop, and finishes all the same
				return "deployed", nil
			}, tool.Exclusive("deploys"))
			rec := &recorder{}
			m := toolThenText("never", model.Call("t1", "deploy", nil), model.Call("t2", "deploy", nil))
			a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{deploy}, Hooks: []hook.Provider{rec}})

			type outcome struct {
				res *agent.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := a.Invoke(ctx, agent.Text("go"))
				done <- outcome{res, err}
			}()
			bhWait(t, started, "the first call to start")
			closed := make(chan error, 1)
			if stop == "cancel" {
				assert.True(t, cancelNow(t, a))
			} else {
				go func() { closed <- a.Close(ctx) }()
			}
			bhWait(t, cut, "the first call to see the stop")
			close(release)
			o := bhWait(t, done, "the stopped invocation to return")
			assert.Equal(t, 1, runs.get("t1"))
			assert.Zero(t, runs.get("t2"), "the held-back call did not start")
			if stop == "close" {
				require.ErrorIs(t, o.err, agent.ErrClosed)
				require.NoError(t, bhWait(t, closed, "Close to return"))
				return
			}
			require.NoError(t, o.err)
			assert.Equal(t, agent.StopCancelled, o.res.StopReason)
			assert.Equal(t, 1, rec.count("AfterToolCall(t2)"))
			msgs := agenttest.Messages(t, a)
			requireValidHistory(t, msgs)
			results := msgs[2].ToolResults()
			require.Len(t, results, 2)
			assert.Equal(t, "deployed", results[0].Text(), "the running call's own result")
			assert.Equal(t, model.ToolError, results[1].Status)
			assert.Equal(t, agent.DefaultCancelled, results[1].Text())
		})
	}
}
