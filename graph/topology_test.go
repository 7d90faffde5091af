package graph_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// fn is a function node that records its runs under "fn:<id>" and answers
// "<id> out", or fails with err.
func fn(r *recorder, id string, err error) actors.Node {
	return agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
		r.add("fn:" + id)
		if err != nil {
			return nil, err
		}
		return []model.ContentBlock{model.Text(id + " out")}, nil
	})
}

// SPEC M8: conditional edges are taken when their condition holds on the
// run's state.
func TestGraph_ConditionalEdgesFollowTheRunState(t *testing.T) {
	r := newRecorder()
	b := graph.NewBuilder().AddNode("route", fn(r, "route", nil)).AddNode("yes", fn(r, "yes", nil)).AddNode("no", fn(r, "no", nil)).
		AddEdge("route", "yes", func(s *graph.State) bool { return strings.Contains(s.Text("route"), "out") }).
		AddEdge("route", "no", func(s *graph.State) bool { return !strings.Contains(s.Text("route"), "out") })
	res, err := build(t, b, graph.Config{}).Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"route", "yes"}, res.ExecutionOrder)
	assert.Equal(t, 0, r.count("fn:no"))
}

// SPEC M8: a fan-in node runs once, after every predecessor that will run
// has finished; an edge whose source failed does not block it.
func TestGraph_FanInRunsOnceAfterEveryPredecessor(t *testing.T) {
	r := newRecorder()
	b := graph.NewBuilder().AddNode("start", fn(r, "start", nil)).
		AddNode("p1", fn(r, "p1", nil)).AddNode("p2", fn(r, "p2", nil)).AddNode("bad", fn(r, "bad", errors.New("boom"))).
		AddNode("mid", fn(r, "mid", nil)).AddNode("join", textAgent(r, "join")).
		AddEdge("start", "p1").AddEdge("start", "p2").AddEdge("start", "bad").AddEdge("p2", "mid").
		AddEdge("p1", "join").AddEdge("mid", "join").AddEdge("bad", "join")
	res, err := build(t, b, graph.Config{}).Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status, "the worst node status (SPEC M2)")
	assert.Equal(t, 1, r.count("model:join"))
	assert.Equal(t, "join", res.ExecutionOrder[len(res.ExecutionOrder)-1], "after every predecessor")
	prompt := r.prompts("join")[0]
	assert.Contains(t, prompt, "From p1:")
	assert.Contains(t, prompt, "From mid:")
	assert.NotContains(t, prompt, "From bad:")
	bad := res.Node("bad")
	require.NotNil(t, bad)
	assert.Equal(t, multiagent.StatusFailed, bad.Status)
	require.Error(t, bad.Err)
	assert.Contains(t, bad.Err.Error(), "boom")
}

// SPEC M8: a back edge re-runs its target; the node execution limit ends
// the run FAILED with a message that names it.
func TestGraph_CycleStopsAtMaxNodeExecutions(t *testing.T) {
	r := newRecorder()
	b := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", fn(r, "b", nil)).
		AddEdge("a", "b").AddEdge("b", "a").SetEntryPoint("a")
	res, err := build(t, b, graph.Config{MaxNodeExecutions: 5}).Invoke(context.Background(), agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	assert.Equal(t, "Max node executions reached: 5", res.Message)
	assert.Equal(t, []string{"a", "b", "a", "b", "a"}, res.ExecutionOrder)
	assert.Equal(t, 3, r.count("fn:a"))
}

// SPEC M8: build errors are clear.
func TestGraph_BuildErrors(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	cases := map[string]struct {
		b    *graph.Builder
		want string
	}{
		"empty":     {graph.NewBuilder(), "Graph must contain at least one node"},
		"duplicate": {graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("a", fn(r, "a", nil)), "Node 'a' already exists"},
		"unknown":   {graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddEdge("a", "zz"), "Node 'zz' not found"},
		"no entry": {graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddNode("b", fn(r, "b", nil)).AddEdge("a", "b").AddEdge("b", "a"),
			"No entry points found"},
		"bad id":    {graph.NewBuilder().AddNode("a/b", fn(r, "a", nil)), "node id"},
		"bad entry": {graph.NewBuilder().AddNode("a", fn(r, "a", nil)).SetEntryPoint("q"), "Node 'q' not found"},
		"nil node":  {graph.NewBuilder().AddNode("a", nil), "no executor"},
		"two conds": {graph.NewBuilder().AddNode("a", fn(r, "a", nil)).AddEdge("a", "a", nil, nil), "one condition"},
		"agent with a path": {graph.NewBuilder().AddNode("a", agentnode.Agent(agent.Config{Model: model.Scripted(), OwnerPath: "x"})),
			"set by the orchestrator"},
		// The message names the field set and where the session goes.
		"agent with a session": {graph.NewBuilder().AddNode("a", agentnode.Agent(agent.Config{Model: model.Scripted(), Session: nodeSession(t)})),
			"sets Session: leave it empty (give the session to graph.Config.Session or swarm.Config.Session)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.b.Build(ctx, graph.Config{System: actorstest.System(t)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	// An agent's approval given to the graph would never run: the node's
	// tool would run unapproved.
	approval := hook.Func(func(ctx context.Context, ev *agent.BeforeToolCallEvent) error {
		_, err := ev.Interrupt("approval", nil)
		return err
	})
	_, err := graph.NewBuilder().AddNode("a", fn(r, "a", nil)).Build(ctx, graph.Config{System: actorstest.System(t), Hooks: []hook.Provider{approval}})
	require.ErrorIs(t, err, graph.ErrBuild)
	require.ErrorIs(t, err, hook.ErrNotFired)
	assert.Contains(t, err.Error(), "agent.BeforeToolCallEvent")
	assert.Contains(t, err.Error(), "a graph fires none (an agent's events go to the Hooks of the node's agent.Config)")
	_, err = graph.NewBuilder().Build(ctx, graph.Config{System: actorstest.System(t)})
	assert.ErrorIs(t, err, graph.ErrBuild)
	// The graph's id is a segment of its nodes' owner paths, and of its
	// records' ids (SPEC S2: no "\\", no control character, at most 255
	// bytes), with a session or without.
	for _, id := range []string{"a/b", "a:b", `a\b`, "a\x01b", strings.Repeat("g", 256)} {
		for _, sess := range []bool{false, true} {
			cfg := graph.Config{ID: id, System: actorstest.System(t)}
			if sess {
				cfg.Session = manager(t, memory.New(), "s")
			}
			_, err = graph.NewBuilder().AddNode("a", fn(r, "a", nil)).Build(ctx, cfg)
			require.ErrorIs(t, err, graph.ErrBuild, "%q, session %v", id, sess)
			assert.Contains(t, err.Error(), "graph id")
		}
	}
	// So is a node's id.
	for _, id := range []string{`a\b`, "a\x01b", strings.Repeat("n", 256)} {
		for _, sess := range []bool{false, true} {
			cfg := graph.Config{System: actorstest.System(t)}
			if sess {
				cfg.Session = manager(t, memory.New(), "s")
			}
			_, err = graph.NewBuilder().AddNode(id, fn(r, "a", nil)).Build(ctx, cfg)
			require.ErrorIs(t, err, graph.ErrBuild, "%q, session %v", id, sess)
		}
	}
}

// SPEC R6: a node whose executor panics is FAILED with the panic value;
// the graph's actor survives and runs again.
func TestGraph_PanickingNodeFailsThatNodeOnly(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	boom := agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) { panic("kaboom") })
	b := graph.NewBuilder().AddNode("boom", boom).AddNode("ok", fn(r, "ok", nil))
	g := build(t, b, graph.Config{})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status)
	require.Error(t, res.Node("boom").Err)
	assert.Contains(t, res.Node("boom").Err.Error(), "kaboom")
	assert.Equal(t, multiagent.StatusCompleted, res.Node("ok").Status)
	res, err = g.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status, "the actor survived and ran the graph again")
	assert.Equal(t, 2, r.count("fn:ok"))
}

// SPEC M8: with ResetOnRevisit a node that runs again starts from its
// agent's initial history; without it, it carries its conversation on.
func TestGraph_ResetOnRevisitStartsTheAgentAfresh(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(strconv.FormatBool(reset), func(t *testing.T) {
			var seen []int // history length at each model call of "loop"
			var mu sync.Mutex
			loop := agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
				mu.Lock()
				seen = append(seen, len(req.Messages))
				mu.Unlock()
				return model.TextTurn("again"), nil
			})})
			r := newRecorder()
			b := graph.NewBuilder().AddNode("loop", loop).AddNode("back", fn(r, "back", nil)).
				AddEdge("loop", "back").AddEdge("back", "loop").SetEntryPoint("loop").ResetOnRevisit(reset)
			res, err := build(t, b, graph.Config{MaxNodeExecutions: 5}).Invoke(context.Background(), agent.Text("go"))
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusFailed, res.Status)
			mu.Lock()
			defer mu.Unlock()
			if reset {
				assert.Equal(t, []int{1, 1, 1}, seen)
			} else {
				assert.Equal(t, []int{1, 3, 5}, seen)
			}
		})
	}
}

// nodeSession is a session manager over a memory store, for a node's
// agent config that wrongly sets one.
func nodeSession(t *testing.T) *persistence.SessionManager {
	t.Helper()
	sm, err := persistence.NewSessionManager(memory.New(), "s")
	require.NoError(t, err)
	return sm
}
