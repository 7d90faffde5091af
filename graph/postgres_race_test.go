package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// postgresStore opens a store of its own on the tests' PostgreSQL server
// (a process's connection pool), closed when the test ends.
func postgresStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := postgres.New(context.Background(), postgres.Config{DSN: persistencetest.PostgresDSN(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// SPEC S4, S3, M10: two runtimes (two Systems, each with a PostgreSQL
// store of its own, as two processes have) hold the same interrupted run
// and resume it at once with the same answer. Exactly one proceeds; the
// other gets ErrConflict and runs nothing, so every node and tool runs
// once. The loser, having taken the stored run, refuses the answer it
// lost with as an id the run no longer has, and its retry of the run's
// next step finishes it.
func TestGraphSession_S4_TwoRuntimesRacingAResumeOnPostgreSQLRunItOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// graph builds the run on st; want is what each node and tool
		// ran once the race is over.
		graph func(r *recorder) (*graph.Builder, []hook.Provider)
		want  map[string]int
	}{
		{"gate", func(r *recorder) (*graph.Builder, []hook.Provider) {
			return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("b", textAgent(r, "b")).AddEdge("a", "b"),
				[]hook.Provider{gate(r, "b")}
		}, map[string]int{"model:a": 1, "model:b": 1, "gate:b": 1}},
		{"tool", func(r *recorder) (*graph.Builder, []hook.Provider) {
			return graph.NewBuilder().AddNode("a", textAgent(r, "a")).AddNode("ask", toolAgent(r, "ask", "lookup", "which")).
				AddEdge("a", "ask"), nil
		}, map[string]int{"model:a": 1, "tool:ask": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st1, st2 := postgresStore(t), postgresStore(t)
			session := "race-" + uuid.NewString()
			r := newRecorder()
			mk := func(st persistence.Store) *graph.Graph {
				b, hooks := tc.graph(r)
				return build(t, b, graph.Config{ID: "g", Session: manager(t, st, session), System: actorstest.System(t), Hooks: hooks})
			}
			g1 := mk(st1)
			res, err := g1.Invoke(ctx, agent.Text("go"))
			require.NoError(t, err)
			require.Equal(t, multiagent.StatusInterrupted, res.Status)
			require.Len(t, res.Interrupts, 1)
			answer := interrupt.Respond(res.Interrupts[0].ID, "y")
			g2 := mk(st2) // loads the interrupted run

			o1, o2 := invokeAsync(ctx, g1, agent.Resume(answer)), invokeAsync(ctx, g2, agent.Resume(answer))
			outs := []outcome{<-o1, <-o2}
			var won, lost []int
			for i, o := range outs {
				switch {
				case o.err == nil:
					won = append(won, i)
				case errors.Is(o.err, persistence.ErrConflict):
					lost = append(lost, i)
				default:
					t.Fatalf("resume %d: %v", i+1, o.err)
				}
			}
			require.Len(t, won, 1, "exactly one resume proceeds: %v, %v", outs[0].err, outs[1].err)
			require.Len(t, lost, 1)
			assert.Equal(t, multiagent.StatusCompleted, outs[won[0]].res.Status)
			for k, n := range tc.want {
				assert.Equal(t, n, r.count(k), "%s", k)
			}

			loser := []*graph.Graph{g1, g2}[lost[0]]
			_, err = loser.Invoke(ctx, agent.Resume(answer))
			require.Error(t, err, "the loser resumes nothing more")
			assert.ErrorIs(t, err, interrupt.ErrNotInterrupted, "it took the completed run")
			assert.NotErrorIs(t, err, persistence.ErrConflict)
			st, err := loser.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, st.Status)
			for k, n := range tc.want {
				assert.Equal(t, n, r.count(k), "%s ran again", k)
			}
		})
	}
}
