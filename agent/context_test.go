package agent_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

type traceKey struct{}

// valueModel records the trace value its calls see, and asks for the tool
// "probe" once before it answers.
type valueModel struct {
	mu   sync.Mutex
	seen []any
	next *model.ScriptedModel
}

func (m *valueModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	m.mu.Lock()
	m.seen = append(m.seen, ctx.Value(traceKey{}))
	m.mu.Unlock()
	return m.next.Stream(ctx, req)
}

// The values of the context a caller invokes an agent with (a trace, a
// request id) reach its hooks, its model and its tools, for Invoke and
// Stream; the caller's cancellation still reaches the invocation only
// through the actor.
func TestAgent_HooksModelAndToolsSeeTheCallersContextValues(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		var mu sync.Mutex
		var seen []any
		see := func(v any) {
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
		}
		m := &valueModel{next: toolThenText("done", model.Call("t1", "probe", nil))}
		probe := tool.New("probe", "reads the trace", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			see(ctx.Value(traceKey{}))
			return "ok", nil
		})
		before := hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
			see(ctx.Value(traceKey{}))
			return nil
		})
		a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{probe}, Hooks: []hook.Provider{before}})
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), traceKey{}, "trace-1"), 10*time.Second)
		if streamed {
			var res *agent.Result
			for ev, err := range a.Stream(ctx, agent.Text("go")) {
				require.NoError(t, err)
				if r, ok := ev.(*agent.ResultEvent); ok {
					res = r.Result
				}
			}
			require.NotNil(t, res)
			assert.Equal(t, agent.StopEndTurn, res.StopReason)
		} else {
			res, err := a.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, agent.StopEndTurn, res.StopReason)
		}
		cancel()
		assert.Equal(t, []any{"trace-1", "trace-1"}, seen, "hook, tool (streamed %v)", streamed)
		assert.Equal(t, []any{"trace-1", "trace-1"}, m.seen, "both model calls (streamed %v)", streamed)
		// A later call without the value does not see the earlier one's.
		res, err := a.Invoke(context.Background(), agent.Text("again"))
		require.NoError(t, err)
		assert.Equal(t, agent.StopEndTurn, res.StopReason)
		assert.Nil(t, m.seen[len(m.seen)-1])
	}
}

// SPEC R7: an agent whose tool waits on another agent cannot be given
// work by that other agent's hooks or tools (the work would wait for the
// invocation that waits for it): ErrReentrant, not a deadlock.
func TestAgent_WorkAskedBackThroughAnotherAgentIsRefused(t *testing.T) {
	var outer *agent.Agent
	var backErr error
	callBack := tool.New("call_back", "asks the outer agent", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		_, backErr = outer.Invoke(ctx, agent.Text("loop"))
		return "refused", nil
	})
	inner := newAgent(t, agent.Config{ID: "inner", Tools: []tool.Tool{callBack},
		Model: toolThenText("inner done", model.Call("i1", "call_back", nil))})
	outer = newAgent(t, agent.Config{ID: "outer", Tools: []tool.Tool{agent.AsTool(inner, "ask_inner", "asks the inner agent")},
		Model: toolThenText("outer done", model.Call("o1", "ask_inner", map[string]any{"prompt": "hi"}))})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := outer.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, res.StopReason)
	require.ErrorIs(t, backErr, agent.ErrReentrant)
	require.NoError(t, ctx.Err(), "the call back waited until the context ended")
}
