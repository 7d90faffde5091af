package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// newAgent builds an agent and closes it when the test ends.
func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

type pathsIn struct {
	Paths []string `json:"paths,omitempty" jsonschema:"files to act on"`
}

// countingTool returns a tool that counts its runs and answers "<name> ok".
func countingTool(name string) (*tool.FuncTool[pathsIn, string], *counter) {
	c := &counter{}
	t := tool.New(name, "test tool "+name, func(ctx context.Context, tc *tool.Context, in pathsIn) (string, error) {
		c.inc(tc.ToolUse.ToolUseID)
		return name + " ok", nil
	})
	return t, c
}

// counter counts calls per key, safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := 0
	for _, v := range c.n {
		s += v
	}
	return s
}

// toolThenText is a model that asks for calls while the last message is a
// user prompt, and answers text once the results are in.
func toolThenText(text string, calls ...model.ToolCall) *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, fmt.Errorf("empty conversation")
		}
		if len(last.ToolResults()) > 0 {
			return model.TextTurn(text), nil
		}
		return model.ToolTurn(calls...), nil
	})
}

// recorder records hook events as strings like "BeforeToolCall(t1)".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

func (r *recorder) count(s string) int {
	n := 0
	for _, e := range r.list() {
		if e == s {
			n++
		}
	}
	return n
}

func describe(m model.Message) string {
	switch {
	case len(m.ToolUses()) > 0:
		return string(m.Role) + ":toolUse"
	case len(m.ToolResults()) > 0:
		return string(m.Role) + ":toolResult"
	default:
		return string(m.Role) + ":text"
	}
}

// RegisterHooks records every agent event.
func (r *recorder) RegisterHooks(reg *hook.Registry) {
	hook.Add(reg, func(_ context.Context, e *agent.AgentInitializedEvent) error { r.add("AgentInitialized"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.BeforeInvocationEvent) error { r.add("BeforeInvocation"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.AfterInvocationEvent) error { r.add("AfterInvocation"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.MessageAddedEvent) error {
		r.add("MessageAdded(" + describe(e.Message) + ")")
		return nil
	})
	hook.Add(reg, func(_ context.Context, e *agent.BeforeModelCallEvent) error { r.add("BeforeModelCall"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.AfterModelCallEvent) error { r.add("AfterModelCall"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.BeforeToolsEvent) error { r.add("BeforeTools"); return nil })
	hook.Add(reg, func(_ context.Context, e *agent.BeforeToolCallEvent) error {
		r.add("BeforeToolCall(" + e.ToolUse.ToolUseID + ")")
		return nil
	})
	hook.Add(reg, func(_ context.Context, e *agent.AfterToolCallEvent) error {
		r.add("AfterToolCall(" + e.ToolUse.ToolUseID + ")")
		return nil
	})
	hook.Add(reg, func(_ context.Context, e *agent.AfterToolsEvent) error {
		ids := ""
		for _, tr := range e.Message.ToolResults() {
			ids += "," + tr.ToolUseID
		}
		if ids != "" {
			ids = ids[1:]
		}
		r.add("AfterTools(" + ids + ")")
		return nil
	})
}

// approveHook interrupts BeforeToolCall for the named tool and cancels it
// unless the answer is "y".
func approveHook(toolName, name string) hook.Provider {
	return hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
		if ev.ToolUse.Name != toolName {
			return nil
		}
		ans, err := ev.Interrupt(name, map[string]any{"paths": ev.ToolUse.InputMap()["paths"]})
		if err != nil {
			return err
		}
		if s, _ := ans.String(); s != "y" {
			ev.CancelTool("User denied permission to delete files")
		}
		return nil
	})
}

// requireValidHistory checks SPEC A3: every assistant tool-use message is
// followed by one user message with exactly one result per use, in order,
// and nothing dangles.
func requireValidHistory(t *testing.T, msgs []model.Message) {
	t.Helper()
	for i, m := range msgs {
		uses := m.ToolUses()
		if len(uses) == 0 {
			require.Empty(t, m.ToolResults()[0:0])
			if m.Role == model.RoleUser && len(m.ToolResults()) > 0 {
				require.Greater(t, i, 0, "tool results without a tool use")
				require.NotEmpty(t, msgs[i-1].ToolUses(), "tool results at %d do not follow a tool use", i)
			}
			continue
		}
		require.Equal(t, model.RoleAssistant, m.Role)
		require.Less(t, i+1, len(msgs), "tool use at %d has no results", i)
		results := msgs[i+1].ToolResults()
		require.Len(t, results, len(uses), "message %d", i+1)
		for k := range uses {
			require.Equal(t, uses[k].ToolUseID, results[k].ToolUseID, "result %d of message %d", k, i+1)
		}
	}
}

func respond(in interrupt.Interrupt, answer any) interrupt.Response {
	return interrupt.Respond(in.ID, answer)
}

func ids(ins []interrupt.Interrupt) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}
