package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

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
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/tool"
)

// propSeeds random graphs, each crashed at propCrashes random saves;
// propNestedSeeds of those with nested graphs (slower to run). The seeds
// of one test run in parallel: each has its own processes (actor systems,
// stores, recorders) and they share nothing, and the work is CPU-bound,
// so a second core halves the time.
const propSeeds, propNestedSeeds, propCrashes = 64, 28, 3

// How a node of a random graph asks before its work (flags).
const (
	askTool = 1 << iota // its tool interrupts before it records its run
	askGate             // a BeforeNodeCall hook interrupts before the node runs
)

// randomGraph is a random acyclic graph: edges go forward in index
// order, some of them conditional, some nodes ask before they work.
type randomGraph struct {
	n     int
	preds [][]int         // node -> its predecessors
	cond  map[[2]int]bool // conditional edge (from, to) -> whether it is taken
	ask   []int
	deny  []bool // a gated node whose gate is answered "n" (SPEC M3)
	// nested nodes are graphs of two agents, <id>x -> <id>y: x's tool
	// interrupts, and innerGate says whether the nested graph's own
	// BeforeNodeCall hook gates y (answered "y").
	nested    []bool
	innerGate []bool
	// key, if set, is what driveToEnd tells interrupts apart by (their
	// id by default): a gate on a loop's node asks again each round.
	key func(st *multiagent.Result, id string) string
}

func newRandomGraph(rng *rand.Rand) *randomGraph {
	g := &randomGraph{n: 3 + rng.IntN(6), cond: map[[2]int]bool{}}
	g.preds = make([][]int, g.n)
	g.ask = make([]int, g.n)
	for i := range g.n {
		if rng.IntN(3) == 0 {
			g.ask[i] |= askTool
		}
		if rng.IntN(3) == 0 {
			g.ask[i] |= askGate
		}
		for j := range i {
			if rng.IntN(3) == 0 {
				g.preds[i] = append(g.preds[i], j)
				if rng.IntN(6) == 0 {
					g.cond[[2]int{j, i}] = rng.IntN(2) == 0
				}
			}
		}
	}
	return g
}

func propID(i int) string { return fmt.Sprintf("n%d", i) }

// runs reports which nodes are scheduled when the interrupts are
// answered (SPEC M3, M8): the entry points (no incoming edge) and every
// node with an edge taken from a node that completes; a node that is
// scheduled completes unless its gate is denied (it ends CANCELLED).
func (g *randomGraph) runs() []bool {
	ran := make([]bool, g.n)
	for i := range g.n {
		ran[i] = len(g.preds[i]) == 0
		for _, p := range g.preds[i] {
			taken, conditional := g.cond[[2]int{p, i}]
			ran[i] = ran[i] || (g.completes(ran, p) && (!conditional || taken))
		}
	}
	return ran
}

// completes reports whether node i, scheduled as ran says, completes.
func (g *randomGraph) completes(ran []bool, i int) bool {
	return ran[i] && !g.denied(i)
}

func (g *randomGraph) denied(i int) bool   { return g.deny != nil && g.deny[i] }
func (g *randomGraph) isNested(i int) bool { return g.nested != nil && g.nested[i] }

// status is the status the run ends with (SPEC M2): CANCELLED if a node
// that is scheduled is denied, else COMPLETED.
func (g *randomGraph) status(ran []bool) multiagent.Status {
	for i := range g.n {
		if ran[i] && g.denied(i) {
			return multiagent.StatusCancelled
		}
	}
	return multiagent.StatusCompleted
}

// withDenials makes about half of the gated nodes denied.
func (g *randomGraph) withDenials(rng *rand.Rand) *randomGraph {
	g.deny = make([]bool, g.n)
	for i := range g.n {
		g.deny[i] = g.ask[i]&askGate != 0 && rng.IntN(2) == 0
	}
	return g
}

// withNesting makes about a third of the nodes (at least one) nested
// graphs. A nested node's outgoing edges are unconditional (its text is
// not its inner tool's result); the tool of a nested node does not ask
// (its inner x always does).
func (g *randomGraph) withNesting(rng *rand.Rand) *randomGraph {
	g.nested = make([]bool, g.n)
	g.innerGate = make([]bool, g.n)
	for i := range g.n {
		g.nested[i] = rng.IntN(3) == 0
		g.innerGate[i] = rng.IntN(2) == 0
	}
	if !slices.Contains(g.nested, true) {
		g.nested[rng.IntN(g.n)] = true
	}
	for e := range g.cond {
		if g.nested[e[0]] {
			delete(g.cond, e)
		}
	}
	for i := range g.n {
		if g.nested[i] {
			g.ask[i] &^= askTool
		}
	}
	return g
}

// workers returns the ids that node i's tools count their runs under
// (and their results name): the node's own, or a nested node's two
// inner agents'.
func (g *randomGraph) workers(i int) []string {
	id := propID(i)
	if g.isNested(i) {
		return []string{id + "x", id + "y"}
	}
	return []string{id}
}

// workerResult returns the result of worker w of node i in res.
func (g *randomGraph) workerResult(res *multiagent.Result, i int, w string) *multiagent.NodeResult {
	n := res.Node(propID(i))
	if !g.isNested(i) || n == nil {
		return n
	}
	if n.Multi == nil {
		return nil
	}
	return n.Multi.Node(w)
}

func (g *randomGraph) String() string {
	var b strings.Builder
	for i := range g.n {
		fmt.Fprintf(&b, "%s(ask=%d", propID(i), g.ask[i])
		if g.denied(i) {
			b.WriteString(",denied")
		}
		if g.isNested(i) {
			fmt.Fprintf(&b, ",nested(gate=%v)", g.innerGate[i])
		}
		b.WriteString(")<-[")
		for k, p := range g.preds[i] {
			if k > 0 {
				b.WriteString(" ")
			}
			b.WriteString(propID(p))
			if taken, ok := g.cond[[2]int{p, i}]; ok {
				fmt.Fprintf(&b, "?%v", taken)
			}
		}
		b.WriteString("] ")
	}
	return b.String()
}

// propResult is the text of node id's tool result: the copy of a session
// holds it exactly when the tool's run was saved.
func propResult(id string) string { return "tool result of " + id + "." }

// builder builds g for one process: each node's agent calls one tool,
// which counts its runs in r under "tool:<id>" (after its interrupt, if
// the node asks there); the model's calls count under "model:<id>". A
// conditional edge reads its source's result, so it is taken only when
// the restored run still has it. A nested node is a graph x -> y of two
// such agents (x's tool asks), y gated by the nested graph's own hook
// when innerGate says so.
func (g *randomGraph) builder(r *recorder) *graph.Builder {
	b := graph.NewBuilder()
	for i := range g.n {
		id := propID(i)
		if g.isNested(i) {
			w := g.workers(i)
			inner := graph.NewBuilder().AddNode(w[0], propWorker(r, w[0], true)).AddNode(w[1], propWorker(r, w[1], false)).
				AddEdge(w[0], w[1])
			var cfg graph.Config
			if g.innerGate[i] {
				cfg.Hooks = []hook.Provider{gate(r, w[1])}
			}
			b.AddNode(id, inner.AsNode(cfg))
			continue
		}
		b.AddNode(id, propWorker(r, id, g.ask[i]&askTool != 0))
	}
	for i := range g.n {
		for _, p := range g.preds[i] {
			from := propID(p)
			if taken, ok := g.cond[[2]int{p, i}]; ok {
				b.AddEdge(from, propID(i), func(s *graph.State) bool {
					return taken && strings.Contains(s.Text(from), propResult(from))
				})
				continue
			}
			b.AddEdge(from, propID(i))
		}
	}
	return b
}

// propWorker is an agent node that calls its tool "work" once; the tool
// interrupts first if ask is set, then counts its run under "tool:<id>".
func propWorker(r *recorder, id string, ask bool) actors.Node {
	tl := tool.New("work", "does the node's work", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if ask {
			if _, err := tc.Interrupt("confirm", map[string]string{"node": id}); err != nil {
				return "", err
			}
		}
		r.add("tool:" + id)
		return propResult(id), nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:" + id)
		last, _ := req.LastMessage()
		if res := last.ToolResults(); len(res) > 0 {
			return model.TextTurn(id + " done: " + res[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", "work", map[string]any{})), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})
}

// gated returns the ids of the nodes a BeforeNodeCall hook gates.
func (g *randomGraph) gated() []string {
	var ids []string
	for i := range g.n {
		if g.ask[i]&askGate != 0 {
			ids = append(ids, propID(i))
		}
	}
	return ids
}

// answeredIn returns the ids of the interrupts that v (a decoded
// session) holds an answer to: an interrupt record with a response, or a
// response forwarded to a node.
func answeredIn(v any, ids map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["id"].(string); ok {
			if _, answered := v["response"]; answered {
				ids[id] = true
			}
		}
		if id, ok := v["interrupt_id"].(string); ok {
			if _, answered := v["response"]; answered {
				ids[id] = true
			}
		}
		for _, e := range v {
			answeredIn(e, ids)
		}
	case []any:
		for _, e := range v {
			answeredIn(e, ids)
		}
	}
}

// driveToEnd drives a restored run to its end as an application does:
// carry on a run a crash cut off, answer every listed interrupt: "n" to
// the gate of a node g denies, "y" to every other. It checks that every
// answer is accepted and that no interrupt is listed again once answered
// (SPEC M5, I7, I8, M6), telling interrupts apart by rg.key if set. The
// run ends COMPLETED or CANCELLED.
func driveToEnd(t *testing.T, g *graph.Graph, rg *randomGraph, label string, answered map[string]bool) *multiagent.Result {
	t.Helper()
	ctx := context.Background()
	for range 20 {
		st, err := g.Status(ctx)
		require.NoError(t, err, label)
		var in agent.Input
		switch st.Status {
		case multiagent.StatusCompleted, multiagent.StatusCancelled:
			return st
		case multiagent.StatusPending:
			in = agent.Text("go")
		case multiagent.StatusExecuting:
			in = agent.Input{}
		case multiagent.StatusInterrupted:
			require.NotEmpty(t, st.Interrupts, "%s: an interrupted run lists its interrupts", label)
			var rs []interrupt.Response
			for _, i := range st.Interrupts {
				k := i.ID
				if rg.key != nil {
					k = rg.key(st, i.ID)
				}
				require.False(t, answered[k], "%s: interrupt %s was answered already (in this process or before the crash) and is listed again", label, k)
				answered[k] = true
				rs = append(rs, interrupt.Respond(i.ID, rg.answer(t, i)))
			}
			in = agent.Resume(rs...)
		default:
			t.Fatalf("%s: run is %s: %+v", label, st.Status, st)
		}
		_, err = g.Invoke(ctx, in)
		require.NoError(t, err, "%s: %s", label, st.Status)
	}
	t.Fatalf("%s: the run did not finish", label)
	return nil
}

// answer is the answer to interrupt i: "n" to the gate of a denied node.
func (g *randomGraph) answer(t *testing.T, i interrupt.Interrupt) string {
	t.Helper()
	var reason struct{ Node string }
	require.NoError(t, json.Unmarshal(i.Reason, &reason), "%v", i)
	for n := range g.n {
		if i.Name == "approval" && reason.Node == propID(n) && g.denied(n) {
			return "n"
		}
	}
	return "y"
}

// checkHistories checks every agent's history in exp (SPEC A3): no two
// user messages in a row, each assistant tool use answered by the next
// message, in order, and (the agents here call one tool once) one tool
// use in all.
func checkHistories(t *testing.T, exp *export.Session, label string) {
	t.Helper()
	checkHistoriesOf(t, exp, label, func(string) int { return 1 })
}

// checkHistoriesOf is checkHistories with uses(record id) tool uses in
// the history of each agent record.
func checkHistoriesOf(t *testing.T, exp *export.Session, label string, uses func(id string) int) {
	t.Helper()
	for _, rec := range exp.Records {
		if rec.Kind != persistence.KindAgent {
			continue
		}
		var prev *model.Message
		n := 0
		for k, raw := range rec.Messages {
			var m model.Message
			require.NoError(t, json.Unmarshal(raw, &m), "%s: %s message %d", label, rec.ID, k)
			n += len(m.ToolUses())
			if prev != nil {
				assert.False(t, prev.Role == model.RoleUser && m.Role == model.RoleUser,
					"%s: %s has two user messages in a row at %d", label, rec.ID, k)
				var asked, answered []string
				for _, u := range prev.ToolUses() {
					asked = append(asked, u.ToolUseID)
				}
				for _, r := range m.ToolResults() {
					answered = append(answered, r.ToolUseID)
				}
				if len(asked) > 0 {
					assert.Equal(t, asked, answered, "%s: %s message %d answers the tool uses before it", label, rec.ID, k)
				}
			}
			if prev == nil || len(prev.ToolUses()) == 0 {
				assert.Empty(t, m.ToolResults(), "%s: %s message %d answers no tool use", label, rec.ID, k)
			}
			prev = &m
		}
		if prev != nil {
			assert.Empty(t, prev.ToolUses(), "%s: %s ends with an unanswered tool use", label, rec.ID)
		}
		assert.Equal(t, uses(rec.ID), n, "%s: %s's history has each of its tool uses once", label, rec.ID)
	}
}

// SPEC M4, M5, M6, M8, M10, S6, I7–I9: on random graphs whose nodes ask
// before their work (a tool's interrupt, a BeforeNodeCall gate, or
// both), a crash after any save, and another during the recovery, leave
// a session that a new process drives to a COMPLETED run: every node
// that can run ran once, a tool whose result the copy held is not run
// again (one cut off runs once more), each interrupt the recovered run
// lists is accepted and answered once (never one the copy held an
// answer to), and every agent's history stays valid. A seed fixes the
// graph and the save points' ranks; which save has which rank depends on
// how concurrent nodes interleave, so a failure names the graph and the
// save.
func TestGraphCrash_RandomGraphsRecoverFromAnySaveWithoutRedoingWork(t *testing.T) {
	for seed := range uint64(propSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 11))
			checkCrashRecovery(t, seed, rng, newRandomGraph(rng))
		})
	}
}

// SPEC M2, M3, M6, M10, S6 (and the rules above): as above, with about
// half of the gates answered "n": a crash after any save, and another
// during the recovery, still ends the run as the answers decide. A
// denied node ends CANCELLED without its agent or tool running, nothing
// is scheduled from it (a node with another completed predecessor still
// runs), and the run ends CANCELLED (M2's ranking) when a node was
// denied; a denied gate is never asked again.
func TestGraphCrash_RandomGraphsWithDeniedGatesRecoverToTheSameOutcome(t *testing.T) {
	for seed := range uint64(propSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 13))
			checkCrashRecovery(t, seed, rng, newRandomGraph(rng).withDenials(rng))
		})
	}
}

// SPEC M11, M10, S6, I2 (and the rules above): as above, with some nodes
// nested graphs whose first agent's tool interrupts (and whose second
// agent the nested graph's own hook may gate): a crash after any save,
// of either level, and another during the recovery, resume the nested
// graph where it was, run each inner tool whose result was not saved
// once more and none whose result was, and the run ends as the answers
// decide.
func TestGraphCrash_RandomGraphsWithNestedGraphsRecoverFromAnySaveOfEitherLevel(t *testing.T) {
	for seed := range uint64(propNestedSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 17))
			checkCrashRecovery(t, seed, rng, newRandomGraph(rng).withNesting(rng).withDenials(rng))
		})
	}
}

// checkCrashRecovery runs rg to its end in a first process, copying the
// session after every save, then resumes new processes from random
// copies (and from a copy saved during one such recovery) and checks
// each one ends the run as rg's answers decide, without redoing work.
func checkCrashRecovery(t *testing.T, seed uint64, rng *rand.Rand, rg *randomGraph) {
	t.Helper()
	ran := rg.runs()
	wantStatus := rg.status(ran)
	useSQLite := seed%4 == 3
	ctx := context.Background()
	var base persistence.Store = memory.New()
	if useSQLite {
		base = sqliteStore(t)
	}

	// The first process runs the graph to its end; the store keeps its
	// saves, so that the session after any of them can be rebuilt.
	cs := &saveLog{Store: base, session: "prop"}
	r1 := newRecorder()
	g1 := build(t, rg.builder(r1), graph.Config{ID: "g", Session: manager(t, cs, "prop"),
		Hooks: []hook.Provider{gate(r1, rg.gated()...)}})
	res := driveToEnd(t, g1, rg, "first process", map[string]bool{})
	require.NoError(t, g1.Close(ctx))
	assert.Equal(t, wantStatus, res.Status, "first process (%s)", rg)
	for i := range rg.n {
		id := propID(i)
		if !ran[i] {
			assert.Nil(t, res.Node(id), "%s cannot run (%s)", id, rg)
			continue
		}
		require.NotNil(t, res.Node(id), "%s can run (%s)", id, rg)
		if rg.ask[i]&askGate != 0 {
			assert.Equal(t, 1, r1.count("gate:"+id), "%s is gated once (SPEC M6)", id)
		}
		if rg.denied(i) {
			assert.Equal(t, multiagent.StatusCancelled, res.Node(id).Status, "%s is denied (SPEC M3, %s)", id, rg)
			for _, w := range rg.workers(i) {
				assert.Zero(t, r1.count("model:"+w)+r1.count("tool:"+w), "%s is denied: %s does not run", id, w)
			}
			continue
		}
		assert.Equal(t, multiagent.StatusCompleted, res.Node(id).Status, id)
		for _, w := range rg.workers(i) {
			assert.Equal(t, 1, r1.count("tool:"+w), "%s's tool runs once", w)
		}
	}
	require.NotZero(t, cs.count())
	checkHistories(t, cs.last(t), "first process")

	// recoverFrom resumes a new process (a fresh System and store) from
	// exp and drives the run to its end; it returns the log of its saves.
	recoverFrom := func(exp *export.Session, label string) *saveLog {
		var st persistence.Store = memory.New()
		if useSQLite {
			st = sqliteStore(t)
		}
		cs := &saveLog{Store: st, session: "prop"}
		require.NoError(t, cs.write(ctx, exp))
		held, err := json.Marshal(exp)
		require.NoError(t, err)
		var tree any
		require.NoError(t, json.Unmarshal(held, &tree))
		answered := map[string]bool{}
		answeredIn(tree, answered)

		r2 := newRecorder()
		g2 := build(t, rg.builder(r2), graph.Config{ID: "g", Session: manager(t, cs, "prop"),
			System: actorstest.System(t), Hooks: []hook.Provider{gate(r2, rg.gated()...)}})
		before, err := g2.Status(ctx)
		require.NoError(t, err, label)
		if before.Status == multiagent.StatusExecuting {
			_, err := g2.Invoke(ctx, agent.Text("another task"))
			require.ErrorIs(t, err, actors.ErrIncompleteRun, "%s: a cut-off run is carried on first", label)
		}
		final := driveToEnd(t, g2, rg, label, answered)
		assert.Equal(t, wantStatus, final.Status, label)
		for i := range rg.n {
			id := propID(i)
			if !ran[i] || rg.denied(i) {
				if !ran[i] {
					assert.Nil(t, final.Node(id), "%s: %s cannot run", label, id)
				} else if assert.NotNil(t, final.Node(id), "%s: %s is scheduled", label, id) {
					assert.Equal(t, multiagent.StatusCancelled, final.Node(id).Status, "%s: %s is denied (SPEC M3)", label, id)
				}
				for _, w := range rg.workers(i) {
					assert.Zero(t, r2.count("tool:"+w), "%s: %s does not run", label, w)
					assert.Zero(t, r2.count("model:"+w), "%s: %s does not run", label, w)
				}
				continue
			}
			if assert.NotNil(t, final.Node(id), "%s: %s can run", label, id) {
				assert.Equal(t, multiagent.StatusCompleted, final.Node(id).Status, "%s: %s", label, id)
				assert.Equal(t, 1, final.Node(id).ExecutionCount, "%s: %s runs once", label, id)
			}
			for _, w := range rg.workers(i) {
				if rg.isNested(i) {
					if n := rg.workerResult(final, i, w); assert.NotNil(t, n, "%s: %s ran", label, w) {
						assert.Equal(t, multiagent.StatusCompleted, n.Status, "%s: %s", label, w)
						assert.Equal(t, 1, n.ExecutionCount, "%s: %s runs once", label, w)
					}
				}
				want := 1 // cut off, or not started: it runs (again)
				if strings.Contains(string(held), propResult(w)) {
					want = 0 // its result was saved: it is never run again
				}
				assert.Equal(t, want, r2.count("tool:"+w), "%s: runs of %s's tool", label, w)
				if n := rg.workerResult(before, i, w); n != nil && n.Status == multiagent.StatusCompleted {
					assert.Zero(t, r2.count("model:"+w), "%s: %s had completed", label, w)
				}
			}
		}
		after, err := export.Read(ctx, st, "prop")
		require.NoError(t, err, label)
		checkHistories(t, after, label)
		require.NoError(t, g2.Close(ctx))
		return cs
	}

	// The crashes: random save points of the first process, and of the
	// process that recovers from the first of them (a crash during
	// recovery).
	for c := range propCrashes {
		k := rng.IntN(cs.count())
		label := fmt.Sprintf("seed %d, crash after save %d of %d, graph %s", seed, k+1, cs.count(), rg)
		again := recoverFrom(cs.copy(t, k), label)
		if n := again.count(); c == 0 && n > 0 {
			k2 := rng.IntN(n)
			recoverFrom(again.copy(t, k2), fmt.Sprintf("%s, then after save %d of %d of the recovery", label, k2+1, n))
		}
	}
}
