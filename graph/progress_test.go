package graph_test

import (
	"context"
	"encoding/json"
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
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// orchNodeStatus reads node's last status and base from the
// orchestrator's log in exp.
func orchNodeStatus(exp *export.Session, node string) (string, int) {
	status, base := "", 0
	for _, rec := range exp.Records {
		if rec.Kind != persistence.KindMultiAgent {
			continue
		}
		for _, m := range rec.Messages {
			var e struct {
				Node *struct {
					ID, Status string
					Base       int `json:"base"`
				} `json:"node"`
			}
			if json.Unmarshal(m, &e) == nil && e.Node != nil && e.Node.ID == node {
				status, base = e.Node.Status, e.Node.Base
			}
		}
	}
	return status, base
}

// recordLen is the number of messages record id holds in exp.
func recordLen(exp *export.Session, id string) int {
	for _, rec := range exp.Records {
		if rec.ID == id {
			return len(rec.Messages)
		}
	}
	return 0
}

// crashAtLaunch checks every copy taken after node's launch in the second
// run, before its agent began it: recovery must run the node, not take
// the agent's answer of the first run as this run's. prior is the number
// of messages the agent's record holds after the first run.
func crashAtLaunch(t *testing.T, copies []*export.Session, node string, prior int, mk func(*recorder) *graph.Builder) {
	t.Helper()
	ctx := context.Background()
	checked := 0
	for i, exp := range copies {
		if status, _ := orchNodeStatus(exp, node); status != "NODE_STATUS_EXECUTING" || recordLen(exp, "g:"+node+":"+node) != prior {
			continue
		}
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		r2 := newRecorder()
		g2 := build(t, mk(r2), graph.Config{ID: "g", Session: manager(t, st, "s"), Hooks: []hook.Provider{gate(r2, "a")}})
		pre, err := g2.Status(ctx)
		require.NoError(t, err)
		if pre.Status == multiagent.StatusExecuting {
			checked++
			finish(t, g2)
			assert.Equal(t, 1, r2.count("model:"+node), "copy %d: %s had not begun the second run; recovery took the first run's answer", i, node)
		}
		require.NoError(t, g2.Close(ctx))
	}
	require.NotZero(t, checked, "no copy caught %s launched and not begun", node)
}

// gatedRun runs g to the end on text, answering its one gate; between
// runs before the answer.
func gatedRun(t *testing.T, g *graph.Graph, text string, between ...func()) {
	t.Helper()
	ctx := context.Background()
	res, err := g.Invoke(ctx, agent.Text(text))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	for _, f := range between {
		f()
	}
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC M10, S6: a node's progress (how much of its agent's history came
// before this run) survives the orchestrator's passivation, also for a
// node the current run has not reached when the orchestrator passivates
// (here: while the run waits on a gate): a crash right after the node's
// launch runs it on recovery.
func TestGraph_NodeProgressSurvivesPassivation(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "s"}
	r := newRecorder()
	mk := func(r *recorder) *graph.Builder {
		return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b")
	}
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	g := build(t, mk(r), graph.Config{ID: "g", System: sys, Session: manager(t, cs, "s"),
		Hooks: []hook.Provider{gate(r, "a")}, IdleTimeout: 20 * time.Millisecond})
	gatedRun(t, g, "go")
	lc.AwaitNoneLive(t)
	require.Positive(t, lc.Passivated(actors.Identity{SessionID: "s", Kind: graph.Kind, Path: "g"}))
	require.Positive(t, lc.Passivated(actors.Identity{SessionID: "s", Kind: "agent", Path: "g/b/b"}))
	from := cs.made()
	before := lc.Passivated(actors.Identity{SessionID: "s", Kind: graph.Kind, Path: "g"})
	gatedRun(t, g, "again", func() {
		// The run waits on the gate and nothing else sends: every owner
		// passivates, the orchestrator again.
		lc.AwaitNoneLive(t)
		require.Greater(t, lc.Passivated(actors.Identity{SessionID: "s", Kind: graph.Kind, Path: "g"}), before)
	})
	require.Equal(t, 2, r.count("model:b"))
	require.NoError(t, g.Close(ctx))
	copies := cs.since(from)
	crashAtLaunch(t, copies, "b", 2, mk)
}

// SPEC M10, S6: a node's answered gate keeps its progress: a crash right
// after the gated node's launch runs it on recovery.
func TestGraph_AnsweredGateKeepsTheNodesProgress(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "s"}
	r := newRecorder()
	mk := func(r *recorder) *graph.Builder { return graph.NewBuilder().AddNode("a", textAgent(r, "a")) }
	g := build(t, mk(r), graph.Config{ID: "g", Session: manager(t, cs, "s"), Hooks: []hook.Provider{gate(r, "a")}})
	gatedRun(t, g, "go")
	from := cs.made()
	gatedRun(t, g, "again")
	require.NoError(t, g.Close(ctx))
	copies := cs.since(from)
	crashAtLaunch(t, copies, "a", 2, mk)
}
