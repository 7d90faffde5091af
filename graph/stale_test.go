package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/twostores"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// gatedChain is a → b → c, with b and c gated by a BeforeNodeCall hook,
// built on session "shared" of st, in a System of its own (a process of
// its own).
func gatedChain(t *testing.T, r *recorder, st persistence.Store) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddNode("c", textAgent(r, "c")).
		AddEdge("a", "b").AddEdge("b", "c")
	return build(t, b, graph.Config{ID: "g", Session: manager(t, st, "shared"), System: actorstest.System(t),
		Hooks: []hook.Provider{gate(r, "b", "c")}})
}

// requireGraphConflict checks that err is the conflict of a writer of the
// graph's record based on version expected, while st holds another.
func requireGraphConflict(t *testing.T, st persistence.Store, err error, expected int64) {
	t.Helper()
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.NotErrorIs(t, err, interrupt.ErrNotInterrupted, "a conflict, not the stale run's refusal")
	assert.NotErrorIs(t, err, interrupt.ErrUnknownID, "a conflict, not the stale run's refusal")
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	key := persistence.Key{SessionID: "shared", Kind: persistence.KindMultiAgent, ID: "g"}
	assert.Equal(t, key, ce.Key)
	assert.Equal(t, expected, ce.Expected)
	assert.Equal(t, graphVersion(t, st), ce.Actual)
	assert.NotEqual(t, ce.Expected, ce.Actual)
}

func graphVersion(t *testing.T, st persistence.Store) int64 {
	t.Helper()
	rec, err := st.Load(context.Background(), persistence.Key{SessionID: "shared", Kind: persistence.KindMultiAgent, ID: "g"})
	require.NoError(t, err)
	return rec.Version
}

// inTwoRuntimes runs body for each pair of stores of one session
// (twostores): g1 and g2 are the graph b makes with id "g", on session
// "shared" of st1 and st2, each in a System of its own (two processes),
// both built before either runs.
func inTwoRuntimes(t *testing.T, b func(r *recorder) *graph.Builder,
	body func(t *testing.T, r *recorder, g1, g2 *graph.Graph, st1, st2 persistence.Store)) {
	for _, stores := range twostores.Pairs() {
		t.Run(stores.Name, func(t *testing.T) {
			st1, st2 := stores.Open(t)
			r := newRecorder()
			mk := func(st persistence.Store) *graph.Graph {
				return build(t, b(r), graph.Config{ID: "g", Session: manager(t, st, "shared"), System: actorstest.System(t)})
			}
			g1, g2 := mk(st1), mk(st2)
			body(t, r, g1, g2, st1, st2)
		})
	}
}

// SPEC S4, M5, R4: two runtimes (two processes) built the same graph of
// one session before anything ran. The first stops at b's gate; the
// second, holding the empty run it loaded, is given the answer. It finds
// its run stale instead of refusing the resume as "not interrupted" for
// ever: the call fails with the *ConflictError a lost save gives (no node
// runs), the graph takes the stored run, and an id that run does not have
// is then refused as unknown. The retried resume runs b once, and stops
// at c's gate, which the first runtime, stale in its turn, must not
// answer as unknown either: it gets ErrConflict, then finishes the run.
// Every node runs exactly once overall.
func TestGraphSession_S4_AStaleGraphRefusingAResumeTakesTheStoredRunSoTheRetryProceeds(t *testing.T) {
	for _, stores := range twostores.Pairs() {
		t.Run(stores.Name, func(t *testing.T) {
			ctx := context.Background()
			st1, st2 := stores.Open(t)
			r := newRecorder()
			g1, g2 := gatedChain(t, r, st1), gatedChain(t, r, st2)

			res, err := g1.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			gateB := res.Interrupts[0]

			_, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(gateB.ID, "y")))
			requireGraphConflict(t, st2, err, 0)
			assert.Equal(t, 0, r.count("model:b"), "no node runs on a stale run")

			// Up to date: an id the stored run does not have is wrong.
			_, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond("no-such-id", "y")))
			require.ErrorIs(t, err, interrupt.ErrUnknownID)
			assert.NotErrorIs(t, err, persistence.ErrConflict)

			stale := graphVersion(t, st1) // g1's: the run it saved at b's gate
			res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(gateB.ID, "y")))
			require.NoError(t, err, "the retry resumes the stored run")
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			gateC := res.Interrupts[0]
			require.NotEqual(t, gateB.ID, gateC.ID)
			assert.Equal(t, 1, r.count("model:b"))

			// g1 still waits for b's gate: c's is unknown to its run.
			_, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(gateC.ID, "y")))
			requireGraphConflict(t, st1, err, stale)
			res, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(gateC.ID, "y")))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusCompleted, res.Status)

			// Up to date, and waiting for nothing: a resume is wrong.
			_, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(gateC.ID, "y")))
			require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
			assert.NotErrorIs(t, err, persistence.ErrConflict)

			for _, n := range []string{"a", "b", "c"} {
				assert.Equal(t, 1, r.count("model:"+n), "node %s ran exactly once", n)
			}
		})
	}
}

// SPEC S4, I7: a graph holding a run that waits for an answer, which
// another runtime gave since (the stored run is over), gets ErrConflict
// for a prompt instead of "resume with interrupt responses" for ever, and
// takes the next prompt.
func TestGraphSession_S4_AStaleInterruptedGraphTakesAPromptAfterTheConflict(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	b := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	}
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "shared"), System: actorstest.System(t),
			Hooks: []hook.Provider{gate(r, "b")}}
	}
	g1 := build(t, b(), cfg())
	res, err := g1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	g2 := build(t, b(), cfg()) // loads the interrupted run
	stale := graphVersion(t, st)
	res, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)

	_, err = g2.Invoke(ctx, agent.Text("again"))
	requireGraphConflict(t, st, err, stale)
	assert.NotErrorIs(t, err, interrupt.ErrResumeRequired)
	res, err = g2.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err, "the stored run is over: the prompt is taken")
	assert.Equal(t, multiagent.StatusInterrupted, res.Status, "b's gate asks again")
	assert.Equal(t, 2, r.count("model:a"))
	assert.Equal(t, 1, r.count("model:b"))
}

// SPEC S4, M5, M10: two runtimes built the same graph of one session
// before anything ran; in the first, node ask's agent stops for an answer
// from its tool. The second, whose run and node agent are both the empty
// ones they loaded, is given the answer: the call fails with ErrConflict
// (nothing runs) and the graph takes the stored run; the retry routes the
// answer to ask's agent, which, stale too, takes its stored state rather
// than refusing or failing the node, and resumes. The tool runs exactly
// once overall; the first runtime, stale in its turn, gets ErrConflict,
// and then is refused as waiting for nothing.
func TestGraphSession_S4_AStaleGraphAndNodeAgentTakeTheStoredRunSoTheRetryResumesTheAgent(t *testing.T) {
	inTwoRuntimes(t, func(r *recorder) *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("ask", toolAgent(r, "ask", "lookup", "which")).
			AddEdge("a", "ask")
	}, func(t *testing.T, r *recorder, g1, g2 *graph.Graph, _, st2 persistence.Store) {
		ctx := context.Background()
		res, err := g1.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status)
		require.Len(t, res.Interrupts, 1)
		in := res.Interrupts[0]

		_, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		requireGraphConflict(t, st2, err, 0)
		res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status, "%+v", res.Results)
		assert.Equal(t, 1, r.count("tool:ask"))

		_, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		require.ErrorIs(t, err, persistence.ErrConflict)
		_, err = g1.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		require.ErrorIs(t, err, interrupt.ErrNotInterrupted)
		assert.NotErrorIs(t, err, persistence.ErrConflict)
		assert.Equal(t, 1, r.count("tool:ask"), "the answered tool ran exactly once")
		assert.Equal(t, 1, r.count("model:a"))
	})
}

// SPEC S4, M10: two runtimes built the same graph of one session before
// anything ran; the first runs it to the end. The second, whose run and
// node agents are the empty ones they loaded, is given a prompt: its
// launch save fails with ErrConflict and the graph takes the stored run.
// The retry must run: the nodes' agents, stale like the run was, take
// their stored histories rather than failing the node on their first
// save, and every agent's history holds both runs, each prompt once.
func TestGraphSession_S4_AStaleGraphsRetriedPromptRunsOnItsNodeAgentsStoredHistories(t *testing.T) {
	inTwoRuntimes(t, func(r *recorder) *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	}, func(t *testing.T, r *recorder, g1, g2 *graph.Graph, st1, st2 persistence.Store) {
		ctx := context.Background()
		res, err := g1.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status)

		_, err = g2.Invoke(ctx, agent.Text("again"))
		requireGraphConflict(t, st2, err, 0)
		res, err = g2.Invoke(ctx, agent.Text("again"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status, "%+v", res.Results)
		assert.Equal(t, 2, r.count("model:a"))
		assert.Equal(t, 2, r.count("model:b"))
		for _, id := range []string{"a", "b"} {
			rec, err := st1.Load(ctx, persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "g:" + id + ":" + id})
			require.NoError(t, err, id)
			assert.Len(t, rec.Messages, 4, "node %s's agent holds both runs", id)
		}
	})
}

// SPEC S4, M10, M11: the same for a nested graph. Two runtimes built
// top: a → inner{x → y} of one session; the first runs it to the end.
// The second, stale at every level, gets ErrConflict for a prompt and
// takes the stored run; the retried prompt runs at every level: the
// nested graph and its agents take their stored runs and histories
// rather than failing the node on their first save.
func TestGraphSession_S4_AStaleNestedGraphsRetriedPromptRunsAtEveryLevel(t *testing.T) {
	inTwoRuntimes(t, func(r *recorder) *graph.Builder {
		inner := graph.NewBuilder().AddNode("x", textAgent(r, "x")).AddNode("y", textAgent(r, "y")).AddEdge("x", "y")
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("inner", inner.AsNode(graph.Config{})).AddEdge("a", "inner")
	}, func(t *testing.T, r *recorder, g1, g2 *graph.Graph, _, st2 persistence.Store) {
		ctx := context.Background()
		res, err := g1.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status)

		_, err = g2.Invoke(ctx, agent.Text("again"))
		requireGraphConflict(t, st2, err, 0)
		res, err = g2.Invoke(ctx, agent.Text("again"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status, "%+v", res.Results)
		for _, n := range []string{"a", "x", "y"} {
			assert.Equal(t, 2, r.count("model:"+n), "node %s ran once a run", n)
		}
	})
}

// SPEC S4, M5, M11: the same for a resume routed into a nested graph. Two
// runtimes built top: a → inner{ask} of one session; in the first, ask's
// agent stops for an answer from its tool. The second, stale at every
// level, gets ErrConflict for the answer and takes the stored run; the
// retry routes the answer into the nested graph, which, stale too, takes
// its stored run rather than failing the node as "not interrupted", and
// ask's agent resumes. The tool runs exactly once.
func TestGraphSession_S4_AStaleNestedGraphTakesItsStoredRunSoTheRetriedAnswerResumes(t *testing.T) {
	inTwoRuntimes(t, func(r *recorder) *graph.Builder {
		inner := graph.NewBuilder().AddNode("ask", toolAgent(r, "ask", "lookup", "which"))
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("inner", inner.AsNode(graph.Config{})).AddEdge("a", "inner")
	}, func(t *testing.T, r *recorder, g1, g2 *graph.Graph, _, st2 persistence.Store) {
		ctx := context.Background()
		res, err := g1.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusInterrupted, res.Status)
		require.Len(t, res.Interrupts, 1)
		in := res.Interrupts[0]

		_, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		requireGraphConflict(t, st2, err, 0)
		res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(in.ID, "y")))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status, "%+v", res.Results)
		assert.Equal(t, 1, r.count("tool:ask"), "the answered tool ran exactly once")
		assert.Equal(t, 1, r.count("model:a"))
	})
}

// SPEC S4, M10: a node agent runs a prompt once more only when the
// prompt's first save, its own record's, was lost to another writer (a
// stale state, see above). A conflict on any other record before the
// model call (a BeforeInvocation hook that saves a record of its own and
// finds another writer's) is that writer's conflict: the node fails with
// it, and the hook is not run again.
func TestGraphSession_S4_ANodeAgentsConflictOnAnotherRecordFailsTheNode(t *testing.T) {
	ctx := context.Background()
	r := newRecorder()
	other := persistence.Key{SessionID: "shared", Kind: persistence.KindAgent, ID: "audit"}
	audit := hook.Func(func(context.Context, *agent.BeforeInvocationEvent) error {
		r.add("hook:a")
		return fmt.Errorf("audit: %w", &persistence.ConflictError{Key: other, Expected: 1, Actual: 2})
	})
	b := graph.NewBuilder().AddNode("a", agentnode.Agent(agent.Config{Hooks: []hook.Provider{audit},
		Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
			r.add("model:a")
			return model.TextTurn("a done"), nil
		})}))
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, memory.New(), "shared"), System: actorstest.System(t)})

	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusFailed, res.Status, "%+v", res.Results)
	assert.Equal(t, 1, r.count("hook:a"), "the hook ran once")
	assert.Equal(t, 0, r.count("model:a"))
}
