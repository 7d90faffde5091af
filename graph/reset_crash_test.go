package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// loopGraph is loop → back → loop, while loop ran fewer than 2 times;
// loop's agent calls a tool once a run.
func loopGraph(r *recorder, reset bool) *graph.Builder {
	return graph.NewBuilder().AddNode("loop", toolAgent(r, "loop", "build", "")).AddNode("back", fn(r, "back", nil)).
		AddEdge("loop", "back").
		AddEdge("back", "loop", func(s *graph.State) bool { return s.Result("loop").ExecutionCount < 2 }).
		SetEntryPoint("loop").ResetOnRevisit(reset)
}

// SPEC S6, M8, M10: a crash after any save of a run with a revisit, with
// and without ResetOnRevisit: recovery finishes the run with the node run
// twice, a node whose agent had finished its run is not run again, and
// the revisited agent's history is what the run gives it (one run's
// messages after a reset, both runs' without).
func TestGraph_CrashDuringARevisitFinishesItOnce(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "reset"}[reset], func(t *testing.T) {
			ctx := context.Background()
			cs := &copyingStore{Store: memory.New(), session: "crash"}
			g := build(t, loopGraph(newRecorder(), reset), graph.Config{ID: "g", Session: manager(t, cs, "crash")})
			res, err := g.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusCompleted, res.Status, res.Message)
			require.Equal(t, 2, res.Node("loop").ExecutionCount)
			require.NoError(t, g.Close(ctx))
			want := map[bool]int{false: 8, true: 4}[reset]
			copies := cs.since(0)
			require.NotEmpty(t, copies)
			for i, exp := range copies {
				status, base := orchNodeStatus(exp, "loop")
				finished := false
				for _, rec := range exp.Records {
					if rec.ID == "g:loop:loop" && len(rec.Messages) > 0 {
						last := string(rec.Messages[len(rec.Messages)-1])
						finished = strings.Contains(last, `"assistant"`) && strings.Contains(last, "loop done")
						if reset {
							finished = finished && strings.Contains(string(rec.Messages[0]), "From back")
						} else {
							finished = finished && len(rec.Messages) > base
						}
					}
				}
				st := memory.New()
				require.NoError(t, export.Write(ctx, st, exp))
				r2 := newRecorder()
				g2 := build(t, loopGraph(r2, reset), graph.Config{ID: "g", Session: manager(t, st, "crash")})
				final := finish(t, g2)
				if finished && status == "NODE_STATUS_EXECUTING" {
					assert.Zero(t, r2.count("model:loop"), "copy %d: loop's agent had finished, it ran again", i)
					assert.Zero(t, r2.count("tool:loop"), "copy %d: loop's tool ran again", i)
				}
				assert.Equal(t, 2, final.Node("loop").ExecutionCount, "copy %d", i)
				require.NoError(t, g2.Close(ctx))
				rec, err := st.Load(ctx, persistence.Key{SessionID: "crash", Kind: persistence.KindAgent, ID: "g:loop:loop"})
				require.NoError(t, err)
				assert.Len(t, rec.Messages, want, "copy %d: the revisited agent's history", i)
				if reset && len(rec.Messages) > 0 {
					assert.Contains(t, string(rec.Messages[0]), "From back", "copy %d: the revisit did not start from the reset history", i)
				}
			}
		})
	}
}
