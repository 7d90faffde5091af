package swarm_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// build builds b with cfg (on a fresh system unless cfg has one) and
// closes the swarm when the test ends.
func build(t *testing.T, b *swarm.Builder, cfg swarm.Config) *swarm.Swarm {
	t.Helper()
	if cfg.System == nil {
		cfg.System = actorstest.System(t)
	}
	s, err := b.Build(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func manager(t *testing.T, st persistence.Store, id string) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, id)
	require.NoError(t, err)
	return m
}

// recorder records what the agents saw and did, safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	inputs map[string][]string // node -> prompts it was given
	runs   map[string]int      // key -> count
	log    []string            // every add, in order
}

func newRecorder() *recorder { return &recorder{inputs: map[string][]string{}, runs: map[string]int{}} }

func (r *recorder) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[key]++
	r.log = append(r.log, key)
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[key]
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

func (r *recorder) prompt(node, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs[node] = append(r.inputs[node], text)
}

func (r *recorder) prompts(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.inputs[node]...)
}

// handoff is what a scripted agent hands off: to whom, what it says and
// what it shares.
type handoff struct {
	to, message string
	context     map[string]any
}

// handoffArgs is the handoff tool's input for h.
func (h handoff) args() map[string]any {
	in := map[string]any{"agent_name": h.to, "message": h.message}
	if h.context != nil {
		in["context"] = h.context
	}
	return in
}

// teamAgent is an agent with id id whose model, given a prompt, records
// it and hands off as h says (or answers "<id> done" when h.to is
// empty); once its tool results are in, it answers "<id> done: <results>".
// Its model calls count under "model:<id>".
func teamAgent(r *recorder, id string, h handoff, extra ...tool.Tool) agent.Config {
	var mu sync.Mutex
	calls := 0
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:" + id)
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			var texts []string
			for _, tr := range trs {
				texts = append(texts, tr.Text())
			}
			return model.TextTurn(id + " done: " + strings.Join(texts, "; ")), nil
		}
		r.prompt(id, last.Text())
		if h.to == "" {
			return model.TextTurn(id + " done"), nil
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		return model.ToolTurn(model.Call(fmt.Sprintf("h-%s-%d", id, n), swarm.HandoffTool, h.args())), nil
	})
	return agent.Config{ID: id, Model: m, Tools: extra}
}

// askTool is a tool named name that interrupts with ask, then counts its
// runs under "tool:<id>" and returns "answer <s>".
func askTool(r *recorder, id, name, ask string) tool.Tool {
	return tool.New(name, "test tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		ans, err := tc.Interrupt(ask, map[string]string{"node": id})
		if err != nil {
			return "", err
		}
		s, _ := ans.String()
		r.add("tool:" + id)
		return "answer " + s, nil
	})
}

// askingAgent is an agent whose model, given a prompt, asks in one turn
// for a handoff as h says and for the tool lookup (which interrupts with
// "which"), and then answers with the results.
func askingAgent(r *recorder, id string, h handoff) agent.Config {
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:" + id)
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			var texts []string
			for _, tr := range trs {
				texts = append(texts, tr.Text())
			}
			return model.TextTurn(id + " done: " + strings.Join(texts, "; ")), nil
		}
		r.prompt(id, last.Text())
		calls := []model.ToolCall{model.Call("t1", "lookup", map[string]any{})}
		if h.to != "" {
			calls = append([]model.ToolCall{model.Call("h1", swarm.HandoffTool, h.args())}, calls...)
		}
		return model.ToolTurn(calls...), nil
	})
	return agent.Config{ID: id, Model: m, Tools: []tool.Tool{askTool(r, id, "lookup", "which")}}
}

// gate returns hooks that interrupt BeforeNodeCall of the given nodes
// with name "approval" and cancel the node unless the answer is "y". It
// counts the raises under "gate:<node>".
func gate(r *recorder, nodes ...string) hook.Provider {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	return hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if !want[ev.NodeID] {
			return nil
		}
		ans, err := ev.Interrupt("approval", map[string]string{"node": ev.NodeID})
		if err != nil {
			r.add("gate:" + ev.NodeID)
			return err
		}
		if s, _ := ans.String(); !strings.EqualFold(s, "y") {
			ev.CancelNode(ev.NodeID + " denied")
		}
		return nil
	})
}

// blockingModel answers nothing until its call's context ends, then
// fails with the context's error; started gets a value when it is called.
type blockingModel struct{ started chan struct{} }

func (m *blockingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		select {
		case m.started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

func statuses(res *multiagent.Result) map[string]multiagent.Status {
	out := map[string]multiagent.Status{}
	for _, n := range res.Results {
		out[n.NodeID] = n.Status
	}
	return out
}
