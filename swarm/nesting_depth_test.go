package swarm_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/swarm"
	"github.com/braidhq/braid/tool"
)

// postgresStore opens a store of its own on the tests' PostgreSQL server,
// closed when the test ends.
func postgresStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := postgres.New(context.Background(), postgres.Config{DSN: persistencetest.PostgresDSN(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func sqliteStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// deepTree is one process's build of top: pre → mid → post, where mid is
// a graph holding the swarm team (a hands off to b, gated), and b's
// agent calls the agent sub as its tool "consult"; sub's tool lookup
// interrupts. sub is a lone agent on the same session.
type deepTree struct {
	top *graph.Graph
	sub *agent.Agent
}

func buildDeepTree(t *testing.T, r *recorder, st persistence.Store, session string, sys *actors.System) deepTree {
	t.Helper()
	ctx := context.Background()
	subModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:sub")
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn("sub says " + trs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("s1", "lookup", map[string]any{})), nil
	})
	sub, err := agent.New(ctx, agent.Config{ID: "sub", Model: subModel, System: sys, Session: manager(t, st, session),
		Tools: []tool.Tool{askTool(r, "sub", "lookup", "which")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close(context.Background()) })

	bModel := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:b")
		last, _ := req.LastMessage()
		if trs := last.ToolResults(); len(trs) > 0 {
			return model.TextTurn("b done: " + trs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("c1", "consult", map[string]any{"prompt": "help"})), nil
	})
	team := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "over to you"})).
		AddAgent(agent.Config{ID: "b", Model: bModel, Tools: []tool.Tool{agent.AsTool(sub, "consult", "asks sub")}})
	mid := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{Hooks: []hook.Provider{gate(r, "b")}}))
	top := graph.NewBuilder().AddNode("pre", agentnode.Agent(teamAgent(r, "pre", handoff{}))).
		AddNode("mid", mid.AsNode(graph.Config{})).
		AddNode("post", agentnode.Agent(teamAgent(r, "post", handoff{}))).
		AddEdge("pre", "mid").AddEdge("mid", "post")
	g, err := top.Build(ctx, graph.Config{ID: "top", Session: manager(t, st, session), System: sys})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return deepTree{top: g, sub: sub}
}

// SPEC M11, I2, M5, M6, M12: graph → graph → swarm → agent → agent-as-tool.
// A gate on the swarm's handoff target and then a tool interrupt inside
// the agent-as-tool surface at the top with ids naming their owners;
// each is answered from the top in a freshly built tree (new actor
// system, same SQLite session); the answer resumes exactly the raising
// agent, and no level above it restarts (model calls and tool runs are
// counted). The stream tags inner events with their whole node path.
// On SQLite and on PostgreSQL (SPEC S3, M10).
func TestNesting_GateAndAgentAsToolInterruptThreeLevelsDownResumeAfterRebuild_M11(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			st, session := sqliteStore(t), "deep"
			if store == "postgres" {
				st, session = postgresStore(t), "deep-"+uuid.NewString()
			}
			gateAndAgentAsToolThreeLevelsDown(t, st, session)
		})
	}
}

func gateAndAgentAsToolThreeLevelsDown(t *testing.T, st persistence.Store, session string) {
	ctx := context.Background()
	r := newRecorder()

	t1 := buildDeepTree(t, r, st, session, actorstest.System(t))
	var gateID string
	paths := map[string]bool{}
	for ev, err := range t1.top.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStartEvent:
			paths["start:"+e.Node] = true
		case *multiagent.NodeEvent:
			paths["event:"+e.Node] = true
		case *multiagent.HandoffEvent:
			paths["handoff:"+e.From+">"+e.To] = true
		case *multiagent.InterruptEvent:
			gateID = e.Interrupt.ID
			paths["interrupt:"+e.Node] = true
		case *multiagent.ResultEvent:
			require.Equal(t, multiagent.StatusInterrupted, e.Result.Status)
		}
	}
	for _, p := range []string{"start:top/pre", "start:top/mid", "start:top/mid/team", "start:top/mid/team/a",
		"event:top/mid/team/a", "handoff:top/mid/team/a>b", "interrupt:top/mid"} {
		assert.True(t, paths[p], "%s not streamed: %v", p, paths)
	}
	assert.Equal(t, interrupt.OwnedID("top/mid/team", interrupt.BeforeNodeCallID("b", "approval")), gateID)
	require.NoError(t, t1.top.Close(ctx))
	require.NoError(t, t1.sub.Close(ctx))

	t2 := buildDeepTree(t, r, st, session, actorstest.System(t))
	res, err := t2.top.Invoke(ctx, agent.Resume(interrupt.Respond(gateID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status, res.Message)
	require.Len(t, res.Interrupts, 1)
	toolID := res.Interrupts[0].ID
	owner, _ := interrupt.SplitOwner(toolID)
	assert.Equal(t, "top/mid/team/b", owner)
	require.NoError(t, t2.top.Close(ctx))
	require.NoError(t, t2.sub.Close(ctx))

	t3 := buildDeepTree(t, r, st, session, actorstest.System(t))
	res, err = t3.top.Invoke(ctx, agent.Resume(interrupt.Respond(toolID, "blue")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("model:pre"), "top level resumed, not restarted")
	assert.Equal(t, 2, r.count("model:a"), "swarm resumed, not restarted: a handed off and answered once")
	assert.Equal(t, 2, r.count("model:b"), "b: its tool-use turn, then its answer")
	assert.Equal(t, 2, r.count("model:sub"), "sub: its tool-use turn, then its answer")
	assert.Equal(t, 1, r.count("tool:sub"))
	assert.Equal(t, 1, r.count("gate:b"), "M6: not gated again")
	assert.Equal(t, 1, r.count("model:post"))
	b := res.Node("mid").Multi.Node("team").Multi.Node("b")
	require.NotNil(t, b)
	assert.Equal(t, "b done: sub says answer blue", b.Text())
}

// SPEC M11, R4, M10: with an idle timeout on the top graph, a tree
// interrupted three levels down (graph → graph → swarm → agent) is
// passivated whole, every level's actor and every agent's; the answer
// from the top re-activates it, resumes exactly the agent that asked, and
// no level restarts.
func TestNesting_AWholeTreePassivatedMidInterruptResumes_M11(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	team := researchSwarm(r)
	mid := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{}))
	top := graph.NewBuilder().AddNode("pre", agentnode.Agent(teamAgent(r, "pre", handoff{}))).
		AddNode("mid", mid.AsNode(graph.Config{})).AddEdge("pre", "mid")
	g, err := top.Build(ctx, graph.Config{ID: "top", Session: manager(t, st, "p"), System: sys, IdleTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	id := res.Interrupts[0].ID
	lc.AwaitNoneLive(t)
	kinds := lc.PassivatedKinds()
	for _, want := range []string{"graph:top", "graph:top/mid/mid", "swarm:top/mid/team/team", "agent:top/mid/team/b/b"} {
		assert.True(t, kinds[want], "%s not passivated: %v", want, kinds)
	}
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "42")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("model:pre"))
	assert.Len(t, r.prompts("a"), 1)
	assert.Len(t, r.prompts("b"), 1)
	assert.Equal(t, 2, r.count("model:b"))
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))
	require.Len(t, r.prompts("c"), 1)
	assert.Contains(t, r.prompts("c")[0], `- a: {"k":"v"}`, "the swarm's shared context came back")
}

// firstBlocks is a model whose first call waits until its context ends
// (closing started when it begins) and fails with the context's error;
// later calls go to then.
type firstBlocks struct {
	mu      sync.Mutex
	calls   int
	started chan struct{}
	then    model.Model
}

func (m *firstBlocks) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	m.mu.Lock()
	m.calls++
	first := m.calls == 1
	m.mu.Unlock()
	if !first {
		return m.then.Stream(ctx, req)
	}
	return func(yield func(model.StreamEvent, error) bool) {
		close(m.started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// SPEC M11, M3: a Cancel at the top while an agent three levels down
// (graph → graph → swarm) is in its model call cancels every level, the
// result says CANCELLED at each, and the next prompt at the top runs a
// fresh run to its end: the swarm's history is the new run's alone.
func TestNesting_CancelAtTheTopStopsAnAgentThreeLevelsDownAndANewRunFinishes_M11(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang only
	defer cancel()
	r := newRecorder()
	cfg := teamAgent(r, "b", handoff{})
	started := make(chan struct{})
	aCfg := teamAgent(r, "a", handoff{to: "b", message: "go on"})
	aCfg.Model = &firstBlocks{started: started, then: aCfg.Model}
	team := swarm.NewBuilder().AddAgent(aCfg).AddAgent(cfg)
	mid := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{}))
	g, err := graph.NewBuilder().AddNode("mid", mid.AsNode(graph.Config{})).
		Build(ctx, graph.Config{ID: "top", Session: manager(t, sqliteStore(t), "c"), System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(ctx, agent.Text("first"))
		assert.NoError(t, err)
		done <- res
	}()
	<-started
	ok, err := g.Cancel(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	midRes := res.Node("mid")
	require.NotNil(t, midRes)
	require.NotNil(t, midRes.Multi)
	teamRes := midRes.Multi.Node("team")
	require.NotNil(t, teamRes)
	require.NotNil(t, teamRes.Multi)
	assert.Equal(t, multiagent.StatusCancelled, teamRes.Multi.Status)
	assert.Zero(t, r.count("model:b"))

	res, err = g.Invoke(ctx, agent.Text("second"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	teamRes = res.Node("mid").Multi.Node("team")
	assert.Equal(t, []string{"a", "b"}, teamRes.Multi.ExecutionOrder)
	assert.Equal(t, "b done", res.Text())
	require.Len(t, r.prompts("a"), 1)
	assert.Contains(t, r.prompts("a")[0], "second")
}

// SPEC M4, M2, M5, M11: a Cancel at the top while a nested swarm waits
// for an answer and a sibling node still runs: the sibling is cancelled,
// the run is INTERRUPTED (it ranks above CANCELLED) and lists the nested
// interrupt, and its answer resumes the nested agent, which runs its tool
// once.
func TestNesting_CancelWhileANestedSwarmWaitsAndASiblingRuns_M4(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang only
	defer cancel()
	r := newRecorder()
	started := make(chan struct{})
	slow := teamAgent(r, "slow", handoff{})
	slow.Model = &firstBlocks{started: started, then: slow.Model}
	team := swarm.NewBuilder().AddAgent(askingAgent(r, "b", handoff{}))
	g, err := graph.NewBuilder().AddNode("team", team.AsNode(swarm.Config{})).AddNode("slow", agentnode.Agent(slow)).
		AddNode("after", agentnode.Agent(teamAgent(r, "after", handoff{}))).AddEdge("team", "after").
		Build(ctx, graph.Config{ID: "top", Session: manager(t, sqliteStore(t), "s"), System: actorstest.System(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	var res *multiagent.Result
	cancelled := false
	for ev, err := range g.Stream(ctx, agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStopEvent:
			if e.Node == "top/team" && !cancelled {
				require.Equal(t, multiagent.StatusInterrupted, e.Result.Status)
				<-started
				ok, err := g.Cancel(ctx)
				require.NoError(t, err)
				require.True(t, ok)
				cancelled = true
			}
		case *multiagent.ResultEvent:
			res = e.Result
		}
	}
	require.NotNil(t, res)
	require.True(t, cancelled)
	assert.Equal(t, multiagent.StatusInterrupted, res.Status)
	assert.Equal(t, multiagent.StatusCancelled, statuses(res)["slow"])
	require.Len(t, res.Interrupts, 1)
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "k")))
	require.NoError(t, err)
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, multiagent.StatusCompleted, statuses(res)["team"])
	assert.Equal(t, 1, r.count("model:after"), "the node after the resumed swarm runs")
	t.Logf("final: %s %v", res.Status, statuses(res))
}

// SPEC M12, M11, I9: a consumer that stops reading the top's stream at
// the first event, before anything three levels down interrupted, leaves
// a run that goes on to its interrupt; a resume given at once (by the id
// the run will raise) waits behind it and finishes it, in the same
// process; and the same after a consumer that stopped at the interrupt
// event, in a freshly built tree.
func TestNesting_AStreamStoppedEarlyAtTheTopLeavesAResumableDeepRun_M12(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang only
	defer cancel()
	st := sqliteStore(t)
	r := newRecorder()
	open := func() *graph.Graph {
		mid := graph.NewBuilder().AddNode("team", researchSwarm(r).AsNode(swarm.Config{}))
		g, err := graph.NewBuilder().AddNode("mid", mid.AsNode(graph.Config{})).
			Build(ctx, graph.Config{ID: "top", Session: manager(t, st, "m"), System: actorstest.System(t)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close(context.Background()) })
		return g
	}
	id := interrupt.OwnedID("top/mid/team/b", interrupt.ToolCallID("t1", "which"))
	g := open()
	for _, err := range g.Stream(ctx, agent.Text("first")) {
		require.NoError(t, err)
		break
	}
	res, err := g.Invoke(ctx, agent.Resume(interrupt.Respond(id, "1")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r.count("tool:b"))
	assert.Equal(t, 1, r.count("model:c"))

	for ev, err := range g.Stream(ctx, agent.Text("second")) {
		require.NoError(t, err)
		if _, ok := ev.(*multiagent.InterruptEvent); ok {
			break
		}
	}
	require.NoError(t, g.Close(ctx))
	res, err = open().Invoke(ctx, agent.Resume(interrupt.Respond(id, "2")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 2, r.count("tool:b"))
	assert.Equal(t, 2, r.count("model:c"))
	assert.Len(t, r.prompts("a"), 2, "one run of a per task")
}

// SPEC M5, M11, I2, I7: a top graph with a gate of its own, a nested
// swarm and a nested graph holding a swarm, whose agents have the same
// ids and raise equal inner ids: the run lists three interrupts with
// three distinct ids; one resume from a freshly built tree answers them
// all, each reaches its owner, and every tool runs once.
func TestNesting_OneResumeAnswersInterruptsAtThreeDepthsInAFreshTree_M5(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r1, r2, rt := newRecorder(), newRecorder(), newRecorder()
	open := func() *graph.Graph {
		s1 := swarm.NewBuilder().AddAgent(askingAgent(r1, "b", handoff{}))
		s2 := swarm.NewBuilder().AddAgent(askingAgent(r2, "b", handoff{}))
		deep := graph.NewBuilder().AddNode("team", s2.AsNode(swarm.Config{ID: "same"}))
		g, err := graph.NewBuilder().AddNode("one", s1.AsNode(swarm.Config{ID: "same"})).AddNode("two", deep.AsNode(graph.Config{})).
			AddNode("gated", agentnode.Agent(teamAgent(rt, "gated", handoff{}))).
			Build(ctx, graph.Config{ID: "top", Session: manager(t, st, "three"), System: actorstest.System(t), Hooks: []hook.Provider{gate(rt, "gated")}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = g.Close(context.Background()) })
		return g
	}
	g := open()
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 3)
	var answers []interrupt.Response
	seen := map[string]bool{}
	for _, in := range res.Interrupts {
		require.False(t, seen[in.ID], "duplicate id %s", in.ID)
		seen[in.ID] = true
		answers = append(answers, interrupt.Respond(in.ID, "y"))
	}
	assert.True(t, seen[interrupt.OwnedID("top/one/b", interrupt.ToolCallID("t1", "which"))], "%v", seen)
	assert.True(t, seen[interrupt.OwnedID("top/two/team/b", interrupt.ToolCallID("t1", "which"))], "%v", seen)
	require.NoError(t, g.Close(ctx))

	res, err = open().Invoke(ctx, agent.Resume(answers...))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
	assert.Equal(t, 1, r1.count("tool:b"))
	assert.Equal(t, 1, r2.count("tool:b"))
	assert.Equal(t, 1, rt.count("model:gated"))
	assert.Len(t, r1.prompts("b"), 1)
	assert.Len(t, r2.prompts("b"), 1)
}
