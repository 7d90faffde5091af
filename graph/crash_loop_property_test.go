package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
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

// randomLoop is a graph with a cycle: an optional entry p, a loop
// l0 -> ... -> l<m-1> whose back edge l<m-1> -> l0 is taken while the
// round is under rounds, and an exit x taken at the last round. A loop
// node's tool may interrupt (its tool use id, so the interrupt's id,
// names the round); p and x may be gated.
type randomLoop struct {
	pre, reset bool
	m, rounds  int
	askTool    []bool // per loop node
	gate       []bool // per loop node: a BeforeNodeCall hook gates it each round
	gatePre    bool
	gateExit   bool
}

func newRandomLoop(rng *rand.Rand) *randomLoop {
	l := &randomLoop{pre: rng.IntN(2) == 0, reset: rng.IntN(2) == 0, m: 1 + rng.IntN(3), rounds: 2 + rng.IntN(2),
		gatePre: rng.IntN(2) == 0, gateExit: rng.IntN(2) == 0}
	l.askTool = make([]bool, l.m)
	for i := range l.m {
		l.askTool[i] = rng.IntN(2) == 0
	}
	return l
}

// withGates gates about half of the loop nodes.
func (l *randomLoop) withGates(rng *rand.Rand) *randomLoop {
	l.gate = make([]bool, l.m)
	for i := range l.m {
		l.gate[i] = rng.IntN(2) == 0
	}
	return l
}

func (l *randomLoop) gatedLoop(i int) bool { return l.gate != nil && l.gate[i] }

// key tells a loop node's gate of one round from that of another: its
// id and the node's execution count when it is listed (SPEC M6: an
// answered gate stays answered until the node completes, then the next
// round asks again).
func (l *randomLoop) key(st *multiagent.Result, id string) string {
	for i := range l.m {
		if strings.HasSuffix(id, interrupt.BeforeNodeCallID(loopID(i), "approval")) {
			runs := 0
			if n := st.Node(loopID(i)); n != nil {
				runs = n.ExecutionCount
			}
			return fmt.Sprintf("%s after %d runs", id, runs)
		}
	}
	return id
}

func (l *randomLoop) String() string {
	return fmt.Sprintf("pre=%v(gate=%v) loop=%d asks=%v gates=%v rounds=%d reset=%v exit(gate=%v)", l.pre, l.gatePre, l.m, l.askTool, l.gate, l.rounds, l.reset, l.gateExit)
}

// propLoopSeeds random loops, each crashed at propCrashes random saves.
const propLoopSeeds = 44

func loopID(i int) string { return fmt.Sprintf("l%d", i) }

// roundRe finds the round a node's answer names.
var roundRe = regexp.MustCompile(`round=(\d+);`)

// roundIn returns the highest round text names (0 if none).
func roundIn(text string) int {
	r := 0
	for _, m := range roundRe.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		r = max(r, n)
	}
	return r
}

// roundWork is the id a loop node's tool counts its run of a round
// under (and its result names).
func roundWork(id string, round int) string { return fmt.Sprintf("%s in round %d", id, round) }

// loopWorker is a loop node: its model reads the round from its latest
// prompt (the loop's head starts the next one), calls its tool once a
// round with the round as the tool use id, and answers naming the round.
func loopWorker(r *recorder, id string, head, ask bool) actors.Node {
	tl := tool.New("work", "does the node's work", func(ctx context.Context, tc *tool.Context, in struct {
		Round int `json:"round"`
	}) (string, error) {
		if ask {
			if _, err := tc.Interrupt("confirm", map[string]string{"node": id}); err != nil {
				return "", err
			}
		}
		w := roundWork(id, in.Round)
		r.add("tool:" + w)
		return propResult(w), nil
	})
	m := model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		r.add("model:" + id)
		round := 0
		for k := len(req.Messages) - 1; k >= 0; k-- {
			if msg := req.Messages[k]; msg.Role == model.RoleUser && len(msg.ToolResults()) == 0 {
				round = roundIn(msg.Text())
				break
			}
		}
		if head {
			round++
		}
		last, _ := req.LastMessage()
		if res := last.ToolResults(); len(res) > 0 {
			return model.TextTurn(fmt.Sprintf("%s done round=%d; %s", id, round, res[0].Text())), nil
		}
		return model.ToolTurn(model.Call(fmt.Sprintf("t%d", round), "work", map[string]any{"round": round})), nil
	})
	return agentnode.Agent(agent.Config{Model: m, Tools: []tool.Tool{tl}})
}

func (l *randomLoop) builder(r *recorder) *graph.Builder {
	b := graph.NewBuilder()
	if l.pre {
		b.AddNode("p", propWorker(r, "p", false)).AddEdge("p", loopID(0))
	}
	for i := range l.m {
		b.AddNode(loopID(i), loopWorker(r, loopID(i), i == 0, l.askTool[i]))
		if i > 0 {
			b.AddEdge(loopID(i-1), loopID(i))
		}
	}
	tail := loopID(l.m - 1)
	b.AddNode("x", propWorker(r, "x", false))
	b.AddEdge(tail, loopID(0), func(s *graph.State) bool { return roundIn(s.Text(tail)) < l.rounds })
	b.AddEdge(tail, "x", func(s *graph.State) bool { return roundIn(s.Text(tail)) >= l.rounds })
	if l.pre {
		b.SetEntryPoint("p")
	} else {
		b.SetEntryPoint(loopID(0))
	}
	return b.ResetOnRevisit(l.reset)
}

func (l *randomLoop) gated() []string {
	var ids []string
	if l.pre && l.gatePre {
		ids = append(ids, "p")
	}
	if l.gateExit {
		ids = append(ids, "x")
	}
	for i := range l.m {
		if l.gatedLoop(i) {
			ids = append(ids, loopID(i))
		}
	}
	return ids
}

// toolUses is how many tool uses the history of agent record id holds
// at the end: a loop node's agent calls its tool once a round, and keeps
// them all unless reset on revisit.
func (l *randomLoop) toolUses(id string) int {
	if strings.HasPrefix(id, "g:l") && !l.reset {
		return l.rounds
	}
	return 1
}

// SPEC M8, M10, S6, I7–I9: on random graphs with a cycle (a back edge
// taken for a given number of rounds, with and without ResetOnRevisit)
// whose loop nodes' tools interrupt, a crash after any save, and another
// during the recovery, leave a session a new process drives to a
// COMPLETED run: every loop node ran every round (ExecutionCount is the
// number of rounds), the nodes outside the loop once; no round of a
// node's tool at or before the last one whose result the copy held runs
// again, each later round runs once; each interrupt the recovered run
// lists is answered once; every agent's history stays valid.
func TestGraphCrash_RandomLoopsRecoverFromAnySaveWithoutRedoingARound(t *testing.T) {
	for seed := range uint64(propLoopSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 19))
			checkLoopCrashRecovery(t, seed, rng, newRandomLoop(rng))
		})
	}
}

// gateRaised reports whether the orchestrator's record in exp holds, in
// node id's latest state, a gate: the round under way raised it, so the
// gate is listed again (unanswered) or holds (answered) after a crash,
// and is not raised again.
func gateRaised(t *testing.T, exp *export.Session, id string) bool {
	t.Helper()
	raised := false
	for _, rec := range exp.Records {
		if rec.Kind == persistence.KindAgent {
			continue
		}
		for _, raw := range rec.Messages {
			var m struct {
				Node *struct {
					ID   string            `json:"id"`
					Gate []json.RawMessage `json:"gate"`
				} `json:"node"`
			}
			require.NoError(t, json.Unmarshal(raw, &m))
			if m.Node == nil || m.Node.ID != id {
				continue
			}
			raised = len(m.Node.Gate) > 0
		}
	}
	return raised
}

// SPEC M6, M8, M10, S6 (and the rules above): as above, with loop nodes
// gated by a BeforeNodeCall hook: each round raises the gate once (M6:
// its answer holds until the node completes, the next round asks
// again). After a crash the recovery raises it once for each round the
// node had not completed, less the round under way if the copy held its
// gate (listed again unanswered, or answered and holding); a process
// never lists a round's gate twice.
func TestGraphCrash_RandomLoopsWithGatedNodesAskEachRoundOnce(t *testing.T) {
	for seed := range uint64(propLoopSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 23))
			checkLoopCrashRecovery(t, seed, rng, newRandomLoop(rng).withGates(rng))
		})
	}
}

// checkLoopCrashRecovery is checkCrashRecovery for a random loop.
func checkLoopCrashRecovery(t *testing.T, seed uint64, rng *rand.Rand, l *randomLoop) {
	t.Helper()
	useSQLite := seed%4 == 3
	ctx := context.Background()
	newStore := func() persistence.Store {
		if useSQLite {
			return sqliteStore(t)
		}
		return memory.New()
	}
	// driveToEnd answers by the node the reason names: a flat
	// graph without denials answers every interrupt "y".
	answers := &randomGraph{key: l.key}

	cs := &saveLog{Store: newStore(), session: "prop"}
	r1 := newRecorder()
	g1 := build(t, l.builder(r1), graph.Config{ID: "g", Session: manager(t, cs, "prop"),
		Hooks: []hook.Provider{gate(r1, l.gated()...)}})
	res := driveToEnd(t, g1, answers, "first process", map[string]bool{})
	require.NoError(t, g1.Close(ctx))
	require.Equal(t, multiagent.StatusCompleted, res.Status, "first process (%s)", l)
	check := func(res *multiagent.Result, label string) {
		t.Helper()
		for i := range l.m {
			if n := res.Node(loopID(i)); assert.NotNil(t, n, "%s: %s ran", label, loopID(i)) {
				assert.Equal(t, multiagent.StatusCompleted, n.Status, "%s: %s", label, loopID(i))
				assert.Equal(t, l.rounds, n.ExecutionCount, "%s: %s runs every round", label, loopID(i))
			}
		}
		for _, id := range []string{"p", "x"} {
			if id == "p" && !l.pre {
				continue
			}
			if n := res.Node(id); assert.NotNil(t, n, "%s: %s ran", label, id) {
				assert.Equal(t, multiagent.StatusCompleted, n.Status, "%s: %s", label, id)
				assert.Equal(t, 1, n.ExecutionCount, "%s: %s runs once", label, id)
			}
		}
	}
	check(res, fmt.Sprintf("first process (%s)", l))
	for i := range l.m {
		for round := 1; round <= l.rounds; round++ {
			assert.Equal(t, 1, r1.count("tool:"+roundWork(loopID(i), round)), "%s runs once", roundWork(loopID(i), round))
		}
		if l.gatedLoop(i) {
			assert.Equal(t, l.rounds, r1.count("gate:"+loopID(i)), "%s's gate asks once a round (SPEC M6)", loopID(i))
		}
	}
	require.NotZero(t, cs.count())
	checkHistoriesOf(t, cs.last(t), "first process", l.toolUses)

	recoverFrom := func(exp *export.Session, label string) *saveLog {
		st := newStore()
		cs := &saveLog{Store: st, session: "prop"}
		require.NoError(t, cs.write(ctx, exp))
		held, err := json.Marshal(exp)
		require.NoError(t, err)
		var tree any
		require.NoError(t, json.Unmarshal(held, &tree))
		ids := map[string]bool{}
		answeredIn(tree, ids)

		r2 := newRecorder()
		g2 := build(t, l.builder(r2), graph.Config{ID: "g", Session: manager(t, cs, "prop"),
			System: actorstest.System(t), Hooks: []hook.Provider{gate(r2, l.gated()...)}})
		before, err := g2.Status(ctx)
		require.NoError(t, err, label)
		answered := map[string]bool{}
		for id := range ids {
			// A loop node's gate asks again each round: the copy's
			// answers to it are checked by count below.
			if l.key(before, id) == id {
				answered[id] = true
			}
		}
		if before.Status == multiagent.StatusExecuting {
			_, err := g2.Invoke(ctx, agent.Text("another task"))
			require.ErrorIs(t, err, actors.ErrIncompleteRun, "%s: a cut-off run is carried on first", label)
		}
		final := driveToEnd(t, g2, answers, label, answered)
		assert.Equal(t, multiagent.StatusCompleted, final.Status, label)
		check(final, label)
		for i := range l.m {
			id := loopID(i)
			saved := 0 // the last round whose result the copy held
			for round := 1; round <= l.rounds; round++ {
				if strings.Contains(string(held), propResult(roundWork(id, round))) {
					saved = round
				}
			}
			for round := 1; round <= l.rounds; round++ {
				want := 1
				if round <= saved {
					want = 0
				}
				assert.Equal(t, want, r2.count("tool:"+roundWork(id, round)), "%s: runs of %s (saved up to round %d)", label, roundWork(id, round), saved)
			}
		}
		for i := range l.m {
			id := loopID(i)
			if !l.gatedLoop(i) {
				continue
			}
			done := 0 // the rounds the node had completed
			if n := before.Node(id); n != nil {
				done = n.ExecutionCount
			}
			want := l.rounds - done
			if gateRaised(t, exp, id) {
				want-- // the current round's gate was raised: it is listed, or answered (SPEC M6), not raised again
			}
			assert.Equal(t, want, r2.count("gate:"+id), "%s: %s's gate asks once a round (%d of %d rounds done)", label, id, done, l.rounds)
		}
		after, err := export.Read(ctx, st, "prop")
		require.NoError(t, err, label)
		checkHistoriesOf(t, after, label, l.toolUses)
		require.NoError(t, g2.Close(ctx))
		return cs
	}

	for c := range propCrashes {
		k := rng.IntN(cs.count())
		label := fmt.Sprintf("seed %d, crash after save %d of %d, graph %s", seed, k+1, cs.count(), l)
		again := recoverFrom(cs.copy(t, k), label)
		if n := again.count(); c == 0 && n > 0 {
			k2 := rng.IntN(n)
			recoverFrom(again.copy(t, k2), fmt.Sprintf("%s, then after save %d of %d of the recovery", label, k2+1, n))
		}
	}
}
