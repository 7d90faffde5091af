package graph_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// seenModel keeps the history an agent node's model was sent at every
// call, as "role:text" strings (tool messages as "role:[tool]").
type seenModel struct {
	mu    sync.Mutex
	calls [][]string
}

func (s *seenModel) add(msgs []model.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, history(msgs))
}

func (s *seenModel) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	return s.calls[len(s.calls)-1]
}

func (s *seenModel) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func history(msgs []model.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if len(m.ToolUses()) > 0 || len(m.ToolResults()) > 0 {
			out = append(out, string(m.Role)+":[tool]")
			continue
		}
		out = append(out, string(m.Role)+":"+m.Text())
	}
	return out
}

// askingNode is a node whose agent runs the tool "lookup", which asks
// "which" (and, with sides set, the tool "side" before it in the same
// turn, counted in sides), then answers "done".
func askingNode(seen *seenModel, sides *atomic.Int32) actors.Node {
	lookup := tool.New("lookup", "asks", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt("which", nil)
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		return "answer " + s, nil
	})
	tools := []tool.Tool{lookup}
	if sides != nil {
		tools = append(tools, tool.New("side", "a side effect", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			sides.Add(1)
			return "side ok", nil
		}))
	}
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		seen.add(req.Messages)
		if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
			return model.TextTurn("done"), nil
		}
		calls := []model.ToolCall{model.Call("t1", "lookup", map[string]any{})}
		if sides != nil {
			calls = append([]model.ToolCall{model.Call("t0", "side", map[string]any{})}, calls...)
		}
		return model.ToolTurn(calls...), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: tools})
}

func answerAll(res *multiagent.Result, v string) agent.Input {
	var rs []interrupt.Response
	for _, in := range res.Interrupts {
		rs = append(rs, interrupt.Respond(in.ID, v))
	}
	return agent.Resume(rs...)
}

func sessionName(withSession bool) string {
	if withSession {
		return "session"
	}
	return "no session"
}

// SPEC M8 (reset on revisit), M3: a node revisited with a reset whose
// revisit is gated by BeforeNodeCall is reset when its gate is answered
// and it runs: its agent starts from its initial history, as an ungated
// revisit does.
func TestGraph_GatedRevisitIsResetWhenItsGatePasses(t *testing.T) {
	for _, withSession := range []bool{true, false} {
		t.Run(sessionName(withSession), func(t *testing.T) {
			ctx := context.Background()
			seen := &seenModel{}
			r := newRecorder()
			var loops atomic.Int32
			loop := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
				loops.Add(1)
				return []model.ContentBlock{model.Text("again")}, nil
			})
			talker := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
				seen.add(req.Messages)
				return model.TextTurn("done"), nil
			})})
			cfg := graph.Config{ID: "g", Hooks: []hook.Provider{gate(r, "talk")}}
			if withSession {
				cfg.Session = manager(t, persistence.NewMemoryStore(), "s")
			}
			g := build(t, graph.NewBuilder().
				AddNode("talk", talker).AddNode("loop", loop).
				AddEdge("talk", "loop").
				AddEdge("loop", "talk", func(*graph.State) bool { return loops.Load() == 1 }).
				SetEntryPoint("talk").ResetOnRevisit(true), cfg)
			res, err := g.Invoke(ctx, agent.Text("first"))
			require.NoError(t, err)
			for range 2 { // the first visit's gate, then the revisit's
				require.Len(t, res.Interrupts, 1)
				res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
				require.NoError(t, err)
			}
			require.Equal(t, multiagent.StatusCompleted, res.Status)
			require.Equal(t, 2, seen.count())
			assert.Len(t, seen.last(), 1, "the revisit starts from the initial history: %q", seen.last())
		})
	}
}
