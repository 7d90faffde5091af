package graph_test

// SPEC M10, S6: what a crash does to a graph run. A crash right after a
// save leaves exactly what that save committed (saves are atomic): the
// store wrapper below copies the session after every save, and each copy
// is resumed by a fresh graph on a fresh actor system, as a new process
// would. The OS-process version (kill -9) is in process_test.go.

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// copyingStore copies the session after every save.
type copyingStore struct {
	persistence.Store
	session string
	mu      sync.Mutex
	copies  []*export.Session
}

func (s *copyingStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil {
		exp, xerr := export.Read(ctx, s.Store, s.session)
		if xerr != nil {
			return v, xerr
		}
		s.copies = append(s.copies, exp)
	}
	return v, err
}

// made returns how many copies s has made.
func (s *copyingStore) made() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.copies)
}

// since returns the copies s made after its first n.
func (s *copyingStore) since(n int) []*export.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copies[n:]
}

// crashGraph is a → work → {gated, side} → end: work's agent runs a tool
// once, gated is gated by a hook.
func crashGraph(r *recorder) *graph.Builder {
	return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("work", toolAgent(r, "work", "build", "")).
		AddNode("gated", textAgent(r, "gated")).AddNode("side", textAgent(r, "side")).AddNode("end", textAgent(r, "end")).
		AddEdge("a", "work").AddEdge("work", "gated").AddEdge("work", "side").AddEdge("gated", "end").AddEdge("side", "end")
}

// finish drives a graph to the end the way an application does after a
// restart: carry on a cut-off run, answer interrupts, or start the task.
func finish(t *testing.T, g *graph.Graph) *multiagent.Result {
	t.Helper()
	ctx := context.Background()
	for range 6 {
		st, err := g.Status(ctx)
		require.NoError(t, err)
		var in agent.Input
		switch st.Status {
		case multiagent.StatusCompleted:
			return st
		case multiagent.StatusPending:
			in = agent.Text("go")
		case multiagent.StatusInterrupted:
			var rs []interrupt.Response
			for _, i := range st.Interrupts {
				rs = append(rs, interrupt.Respond(i.ID, "y"))
			}
			in = agent.Resume(rs...)
		case multiagent.StatusExecuting:
			in = agent.Input{} // carry the cut-off run on
		default:
			t.Fatalf("run ended %s: %+v", st.Status, st)
		}
		_, err = g.Invoke(ctx, in)
		require.NoError(t, err)
	}
	t.Fatal("the run did not finish")
	return nil
}

// SPEC M10, S6: a crash after any save of a graph run (the orchestrator's
// or a node agent's) never leaves a node's agent finished while its
// orchestrator does not know (they commit together), and resumes in a
// new runtime without re-running a node that had completed, or a tool
// whose result was saved; every node ends COMPLETED, run once.
func TestGraphCrash_ResumeAfterEverySaveReRunsNothingCompleted(t *testing.T) {
	ctx := context.Background()
	cs := &copyingStore{Store: memory.New(), session: "crash"}
	r := newRecorder()
	hooks := []hook.Provider{gate(r, "gated")}
	g := build(t, crashGraph(r), graph.Config{ID: "g", Session: manager(t, cs, "crash"), Hooks: hooks})
	res := finish(t, g)
	require.Len(t, res.Results, 5)
	require.NoError(t, g.Close(ctx))
	copies := cs.since(0)
	require.Greater(t, len(copies), 10)

	for i, exp := range copies {
		st := memory.New()
		require.NoError(t, export.Write(ctx, st, exp))
		toolSaved := false
		finished := map[string]bool{} // node -> its agent's history ends with its answer
		for _, rec := range exp.Records {
			if rec.ID == "g:work:work" {
				for _, m := range rec.Messages {
					toolSaved = toolSaved || strings.Contains(string(m), `"toolResult"`)
				}
			}
			if node, ok := strings.CutPrefix(rec.ID, "g:"); ok && rec.Kind == persistence.KindAgent && len(rec.Messages) > 0 {
				last := string(rec.Messages[len(rec.Messages)-1])
				node, _, _ = strings.Cut(node, ":")
				finished[node] = strings.Contains(last, `"assistant"`) && strings.Contains(last, " done")
			}
		}
		r2 := newRecorder()
		g2 := build(t, crashGraph(r2), graph.Config{ID: "g", Session: manager(t, st, "crash"), Hooks: []hook.Provider{gate(r2, "gated")}})
		before, err := g2.Status(ctx)
		require.NoError(t, err, "copy %d", i)
		done := map[string]bool{}
		for _, n := range before.Results {
			done[n.NodeID] = n.Status == multiagent.StatusCompleted
		}
		if before.Status == multiagent.StatusExecuting {
			_, err := g2.Invoke(ctx, agent.Text("another task"))
			require.ErrorIs(t, err, actors.ErrIncompleteRun, "copy %d: a cut-off run is carried on first", i)
		}
		for node, f := range finished {
			if f {
				assert.True(t, done[node], "copy %d: %s's agent is ahead of its orchestrator (SPEC M10)", i, node)
			}
		}
		final := finish(t, g2)
		require.Len(t, final.Results, 5, "copy %d", i)
		for _, n := range final.Results {
			assert.Equal(t, multiagent.StatusCompleted, n.Status, "copy %d node %s", i, n.NodeID)
			assert.Equal(t, 1, n.ExecutionCount, "copy %d node %s", i, n.NodeID)
			if done[n.NodeID] {
				assert.Zero(t, r2.count("model:"+n.NodeID), "copy %d: %s had completed", i, n.NodeID)
			}
		}
		if toolSaved || done["work"] {
			assert.Zero(t, r2.count("tool:work"), "copy %d: the tool's result was saved", i)
		}
		require.NoError(t, g2.Close(ctx))
	}
}
