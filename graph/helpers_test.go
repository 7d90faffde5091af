package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/tool"
)

// build builds b with cfg (on a fresh system unless cfg has one) and
// closes the graph when the test ends.
func build(t *testing.T, b *graph.Builder, cfg graph.Config) *graph.Graph {
	t.Helper()
	if cfg.System == nil {
		cfg.System = actorstest.System(t)
	}
	g, err := b.Build(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

// recorder records what the nodes saw, safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	inputs map[string][]string // node -> prompts it was given
	runs   map[string]int      // key -> count
}

func newRecorder() *recorder { return &recorder{inputs: map[string][]string{}, runs: map[string]int{}} }

func (r *recorder) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[key]++
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[key]
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

// textAgent is a node whose agent answers "<id> done" and records the
// prompts it was given.
func textAgent(r *recorder, id string) actors.Node {
	return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		r.prompt(id, last.Text())
		r.add("model:" + id)
		return model.TextTurn(id + " done"), nil
	})})
}

// toolAgent is a node whose agent calls tool name once (tool use id t1)
// and then answers "<id> done". The tool counts its runs under
// "tool:<id>" and, if ask is set, interrupts with that name first.
func toolAgent(r *recorder, id, name, ask string) actors.Node {
	return agentnode.Agent(toolAgentConfig(r, id, name, ask))
}

// toolAgentConfig is the agent of toolAgent, for a swarm's member.
func toolAgentConfig(r *recorder, id, name, ask string) agent.Config {
	tl := tool.New(name, "test tool", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if ask != "" {
			ans, err := tc.Interrupt(ask, map[string]string{"node": id})
			if err != nil {
				return "", err
			}
			s, _ := ans.String()
			r.add("tool:" + id)
			return "answer " + s, nil
		}
		r.add("tool:" + id)
		return name + " ok", nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if len(last.ToolResults()) > 0 {
			return model.TextTurn(id + " done: " + last.ToolResults()[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", name, map[string]any{})), nil
	})
	return agent.Config{Model: m, Tools: []tool.Tool{tl}}
}

// gate returns hooks that interrupt BeforeNodeCall of the given nodes
// with name "approval" and cancel the node unless the answer is "y". It
// counts the raises (first calls without an answer) per node.
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
			ev.CancelNode(fmt.Sprintf("%s denied", ev.NodeID))
		}
		return nil
	})
}

func statuses(res *multiagent.Result) map[string]multiagent.Status {
	out := map[string]multiagent.Status{}
	for _, n := range res.Results {
		out[n.NodeID] = n.Status
	}
	return out
}

// outcome is what an Invoke returned.
type outcome struct {
	res *multiagent.Result
	err error
}

// invokeAsync starts g.Invoke(ctx, in) on a goroutine of its own; the
// channel gets what it returns.
func invokeAsync(ctx context.Context, g *graph.Graph, in agent.Input) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := g.Invoke(ctx, in)
		done <- outcome{res, err}
	}()
	return done
}
