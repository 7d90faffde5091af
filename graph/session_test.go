package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/swarm"
)

func sqliteStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func manager(t *testing.T, st persistence.Store, id string) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, id)
	require.NoError(t, err)
	return m
}

// sessionGraph is a → {ask, gated} → end: ask's agent interrupts from a
// tool, gated is gated by a hook.
func sessionGraph(r *recorder) *graph.Builder {
	return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("ask", toolAgent(r, "ask", "lookup", "which")).
		AddNode("gated", textAgent(r, "gated")).AddNode("end", textAgent(r, "end")).
		AddEdge("a", "ask").AddEdge("a", "gated").AddEdge("ask", "end").AddEdge("gated", "end")
}

// SPEC M10, M5: an interrupted graph is resumed by a brand-new graph (a
// fresh actor system, as a new process has) built the same way on the
// same session: completed nodes do not run again, the node agent resumes
// (its tool answer arrives, nothing restarts), and the run completes.
func TestGraphSession_FreshRuntimeResumesInterruptedRun(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "gated")}}
	}
	g1 := build(t, sessionGraph(r), cfg())
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 2)
	require.NoError(t, g1.Close(ctx))

	g2 := build(t, sessionGraph(r), cfg())
	st2, err := g2.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, st2.Status)
	require.Len(t, st2.Interrupts, 2)
	var rs []interrupt.Response
	for _, in := range st2.Interrupts {
		rs = append(rs, interrupt.Respond(in.ID, "y"))
	}
	res, err = g2.Invoke(ctx, agent.Resume(rs...))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:a"), "a completed before: not run again")
	assert.Equal(t, 1, r.count("tool:ask"))
	assert.Equal(t, 1, r.count("model:gated"))
	assert.Equal(t, 1, r.count("model:end"), "fan-in runs once")
	assert.Equal(t, "ask done: answer y", res.Node("ask").Text())
	assert.Len(t, res.Results, 4)
}

// SPEC M10: a graph whose nodes changed between save and resume is a clear
// error, not a silent restart.
func TestGraphSession_ChangedTopologyIsAnError(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	g1 := build(t, sessionGraph(r), graph.Config{ID: "g", Session: manager(t, st, "s1"), Hooks: []hook.Provider{gate(r, "gated")}})
	_, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.NoError(t, g1.Close(ctx))

	other := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("end", textAgent(r, "end")).AddEdge("a", "end")
	_, err = other.Build(ctx, graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t)})
	require.Error(t, err)
	assert.ErrorIs(t, err, actors.ErrTopology)
	assert.Contains(t, err.Error(), "ask")
}

// SPEC M10: a graph whose edges changed between save and resume is a
// clear error too, with the same nodes: the stored run waits at b's gate
// behind a → b; resumed as a → c → b, b would run before its new
// predecessor. Building it on the session fails, naming both shapes, and
// the graph as it was (its nodes and edges added in any order) still
// resumes the run.
func TestGraphSession_ChangedEdgesAreAnError(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s1"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "b")}}
	}
	nodes := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddNode("c", textAgent(r, "c"))
	}
	saved := func() *graph.Builder { return nodes().AddEdge("a", "b").AddEdge("a", "c") }
	g1 := build(t, saved(), cfg())
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g1.Close(ctx))

	for name, changed := range map[string]*graph.Builder{
		"an edge moved":       nodes().AddEdge("a", "c").AddEdge("c", "b"),
		"an edge conditional": nodes().AddEdge("a", "b", func(*graph.State) bool { return true }).AddEdge("a", "c"),
		"an entry point set":  nodes().AddEdge("a", "b").AddEdge("a", "c").SetEntryPoint("a").SetEntryPoint("c"),
	} {
		_, err = changed.Build(ctx, cfg())
		require.ErrorIs(t, err, actors.ErrTopology, name)
		assert.Contains(t, err.Error(), `"a"->"b"`, name)
	}
	assert.Equal(t, 0, r.count("model:b"))

	// In a cycle, the order of the edges decides which edge closes it, and
	// so which node waits for which: g → b → c with c → b closing the
	// cycle is another graph than g → c → b with b → c closing it, though
	// the two have the same edges.
	never := func(*graph.State) bool { return false }
	cyclic := func(first, second string) *graph.Builder {
		return nodes().AddNode("g", textAgent(r, "g")).AddEdge("a", "g").AddEdge("g", first).AddEdge("g", second).
			AddEdge("b", "c").AddEdge("c", "b", never)
	}
	cst := memory.New()
	ccfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, cst, "s2"), System: actorstest.System(t), Hooks: []hook.Provider{gate(r, "g")}}
	}
	g0 := build(t, cyclic("b", "c"), ccfg())
	res0, err := g0.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res0.Status)
	require.NoError(t, g0.Close(ctx))
	_, err = cyclic("c", "b").Build(ctx, ccfg())
	require.ErrorIs(t, err, actors.ErrTopology, "the cycle closes elsewhere")
	g0 = build(t, cyclic("b", "c"), ccfg())
	res0, err = g0.Invoke(ctx, agent.Resume(interrupt.Respond(res0.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "g", "b", "c"}, res0.ExecutionOrder)

	// The same graph built in another order (as from a map) is the same
	// graph: it resumes the run.
	reordered := graph.NewBuilder().AddNode("c", textAgent(r, "c")).AddNode("b", textAgent(r, "b")).AddNode("a", textAgent(r, "a")).
		AddEdge("a", "c").AddEdge("a", "b")
	g2 := build(t, reordered, cfg())
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	require.NoError(t, g2.Close(ctx))

	// The run is over: a graph of another shape may start a new one on
	// the session.
	g3 := build(t, nodes().AddEdge("a", "c").AddEdge("c", "b"), cfg())
	res, err = g3.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "b is gated again, now after c")
	assert.Equal(t, multiagent.StatusCompleted, res.Node("c").Status)
}

// SPEC M10, R4: with an idle timeout an interrupted graph is passivated
// whole (its actor and every node's agent) and the resume re-activates
// it from the store.
func TestGraphSession_PassivatedGraphResumes(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	g := build(t, sessionGraph(r), graph.Config{ID: "g", Session: manager(t, st, "s1"), System: sys,
		IdleTimeout: 20 * time.Millisecond, Hooks: []hook.Provider{gate(r, "gated")}})
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	lc.AwaitNoneLive(t)           // nothing sends to the graph until the resume
	whole := lc.PassivatedKinds() // the graph and its four nodes' agents
	assert.Len(t, whole, 5, "%v", whole)
	assert.True(t, whole[graph.Kind+":g"], "%v", whole)
	assert.True(t, whole["agent:g/ask/ask"], "%v", whole)
	var rs []interrupt.Response
	for _, in := range res.Interrupts {
		rs = append(rs, interrupt.Respond(in.ID, "y"))
	}
	res, err = g.Invoke(ctx, agent.Resume(rs...))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("model:a"))
	assert.Equal(t, 1, r.count("model:end"))
}

// SPEC S5, M10: a graph's record loaded by a swarm of the same id (they
// share a record key in a session) is a record of another owner: a
// *DamageError naming the record, that matches ErrTopology too; the graph
// still opens it.
func TestGraphSession_ASwarmOfTheSameIDGetsADamageErrorOnTheGraphsRecord(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{ID: "x", Session: manager(t, st, "s")})
	_, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.NoError(t, g.Close(ctx))

	_, err = swarm.NewBuilder().AddAgent(agent.Config{ID: "a", Model: model.Scripted(model.TextTurn("hi"))}).
		Build(ctx, swarm.Config{ID: "x", Session: manager(t, st, "s"), System: actorstest.System(t)})
	var de *persistence.DamageError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, persistence.Key{SessionID: "s", Kind: persistence.KindMultiAgent, ID: "x"}, de.Key)
	assert.ErrorIs(t, err, actors.ErrTopology)
	assert.Contains(t, err.Error(), `it holds a graph "x", not the swarm "x"`)

	g = build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{ID: "x", Session: manager(t, st, "s"), System: actorstest.System(t)})
	st2, err := g.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, st2.Status)
}
