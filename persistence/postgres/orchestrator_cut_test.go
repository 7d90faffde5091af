package postgres_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC M10, S4, S3: the commit of a graph's record with its node agent's
// deferred durable save, right after node a's run, has its connection
// cut mid-way: the COMMIT lost on its way to the server (rolled back),
// its reply lost (committed), a pooler's FATAL error in place of the
// reply, or its reply lost when the store cannot ask what became of it
// (a checkpoint came first, so the server's answer might be of another
// run: the invocation fails). The stored state never has the node's
// agent ahead of the graph, and a graph built in a fresh runtime on a
// fresh connection pool resumes the run and finishes it, every node
// having run once.
func TestGraphSession_M10_BatchCommitCutOffMidwayLeavesAResumableRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		arm   func(*cutProxy) <-chan struct{}
		fails bool // the invocation fails: the store cannot tell
	}{
		{"commit lost", (*cutProxy).armCommit, false},
		{"reply lost", func(p *cutProxy) <-chan struct{} { return p.arm(0, commitReply) }, false},
		{"pooler fatal", func(p *cutProxy) <-chan struct{} { return p.armFatal("08P01", commitReply) }, false},
		{"reply lost, outcome unknown", func(p *cutProxy) <-chan struct{} {
			// A checkpoint before the store can ask: the server's answer
			// may be another run's, so the save fails though it committed.
			return p.armThen(commitReply, func() {
				admin, err := pgx.Connect(bg, persistencetest.PostgresDSN(t))
				if err == nil {
					_, _ = admin.Exec(bg, "CHECKPOINT")
					_ = admin.Close(bg)
				}
			})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, proxy := proxiedStore(t)
			session := "cut-" + uuid.NewString()
			r := &runs{}
			var cut <-chan struct{}
			g := buildChain(t, s, session, r, func(id string) {
				if id == "a" {
					cut = tc.arm(proxy)
				}
			})
			res, err := g.Invoke(bg, agent.Text("go"))
			require.NotNil(t, cut)
			requireClosed(t, cut, "the proxy cut the commit")
			if tc.fails {
				require.Error(t, err, "the store cannot tell the commit happened")
			} else {
				require.NoError(t, err, "the store found out what became of the commit")
				require.Equal(t, multiagent.StatusInterrupted, res.Status)
			}
			require.NoError(t, g.Close(bg))

			fresh := newStore(t)
			recs, err := fresh.Session(bg, session)
			require.NoError(t, err)
			var orch, agentA *persistence.Record
			for _, rec := range recs {
				switch {
				case rec.Key.Kind == persistence.KindMultiAgent:
					orch = rec
				case rec.Key.Kind == persistence.KindAgent && strings.HasSuffix(rec.Key.ID, "a"):
					agentA = rec
				}
			}
			require.NotNil(t, orch)
			if agentA != nil && len(agentA.Messages) >= 2 {
				completed := false
				for _, m := range orch.Messages {
					if strings.Contains(string(m), `"id":"a","status":"NODE_STATUS_COMPLETED"`) {
						completed = true
					}
				}
				assert.True(t, completed, "node a's agent finished, its graph must know")
			}

			g2 := buildChain(t, fresh, session, r, nil)
			st, err := g2.Status(bg)
			require.NoError(t, err)
			if st.Status == multiagent.StatusInterrupted {
				require.Len(t, st.Interrupts, 1)
				res, err = g2.Invoke(bg, agent.Resume(interrupt.Respond(st.Interrupts[0].ID, "y")))
			} else {
				res, err = g2.Invoke(bg, agent.Input{})
				if err == nil && res.Status == multiagent.StatusInterrupted {
					res, err = g2.Invoke(bg, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
				}
			}
			require.NoError(t, err)
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
			for _, k := range []string{"model:a", "model:b", "model:c", "gate:b"} {
				assert.Equal(t, 1, r.count(k), "%s", k)
			}
		})
	}
}
