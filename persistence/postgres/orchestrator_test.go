package postgres_test

import (
	"context"
	"strings"
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
)

// runs counts what the nodes of a test graph did, safe for concurrent use.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[k]++
}

func (r *runs) count(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}

// chain is a → b → c of agents that answer "<id> done", b gated by a
// BeforeNodeCall hook; each model call runs first(id), if set.
func chain(r *runs, first func(id string)) (*graph.Builder, []hook.Provider) {
	node := func(id string) actors.Node {
		return agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
			r.add("model:" + id)
			if first != nil {
				first(id)
			}
			return model.TextTurn(id + " done"), nil
		})})
	}
	gate := hook.Func(func(ctx context.Context, ev *multiagent.BeforeNodeCallEvent) error {
		if ev.NodeID != "b" {
			return nil
		}
		if _, err := ev.Interrupt("approval", nil); err != nil {
			r.add("gate:b")
			return err
		}
		return nil
	})
	return graph.NewBuilder().AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c")).
		AddEdge("a", "b").AddEdge("b", "c"), []hook.Provider{gate}
}

func buildChain(t *testing.T, st persistence.Store, session string, r *runs, first func(id string)) *graph.Graph {
	t.Helper()
	b, hooks := chain(r, first)
	g, err := b.Build(bg, graph.Config{ID: "g", Session: mustManager(t, st, session), System: actorstest.System(t), Hooks: hooks})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(bg) })
	return g
}

// rawRecord reads key's record as the server holds it, unchecked.
func rawRecord(dsn string, key persistence.Key) (persistence.Record, error) {
	var out persistence.Record
	err := postgres.Tamper(bg, dsn, key, func(r *persistence.Record) { out = *r; out.UpdatedAt = time.Time{} })
	return out, err
}

func graphKey(session string) persistence.Key {
	return persistence.Key{SessionID: session, Kind: persistence.KindMultiAgent, ID: "g"}
}

// SPEC S5, M10, S3: damage written into a graph's record on the server
// (data that is not JSON, a log entry of a node the graph does not have,
// a newer schema version) is, for a graph built on it in a new runtime, a
// *DamageError naming the session and the graph; the damaged record is
// not overwritten, and another session's run goes on.
func TestGraphSession_S5_DamageWrittenIntoItsPostgreSQLRecordIsADamageError(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	for _, tc := range []struct {
		name   string
		damage func(*persistence.Record)
	}{
		{"data not JSON", func(r *persistence.Record) { r.Data = []byte(`{"type":"graph",`) }},
		{"entry of an unknown node", func(r *persistence.Record) {
			last := string(r.Messages[2]) // a's completed entry
			r.Messages = append(r.Messages, []byte(strings.Replace(last, `"id":"a"`, `"id":"zz"`, 1)))
		}},
		{"newer schema version", func(r *persistence.Record) { r.SchemaVersion = 99 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			damaged, other := "damage-"+uuid.NewString(), "damage-other-"+uuid.NewString()
			r := &runs{}
			var gates []string
			for _, session := range []string{damaged, other} {
				g := buildChain(t, st, session, r, nil)
				res, err := g.Invoke(bg, agent.Text("go"))
				require.NoError(t, err)
				require.Equal(t, multiagent.StatusInterrupted, res.Status)
				gates = append(gates, res.Interrupts[0].ID)
				require.NoError(t, g.Close(bg))
			}
			require.NoError(t, postgres.Tamper(bg, dsn, graphKey(damaged), tc.damage))
			before, err := rawRecord(dsn, graphKey(damaged))
			require.NoError(t, err)

			b, hooks := chain(r, nil)
			g, err := b.Build(bg, graph.Config{ID: "g", Session: mustManager(t, newStore(t), damaged), System: actorstest.System(t), Hooks: hooks})
			if err == nil {
				t.Cleanup(func() { _ = g.Close(bg) })
				_, err = g.Invoke(bg, agent.Resume(interrupt.Respond(gates[0], "y")))
			}
			var de *persistence.DamageError
			require.ErrorAs(t, err, &de, "%v", err)
			assert.Equal(t, graphKey(damaged), de.Key)
			assert.Contains(t, err.Error(), damaged)
			after, err := rawRecord(dsn, graphKey(damaged))
			require.NoError(t, err)
			assert.Equal(t, before, after, "nothing is overwritten")
			assert.Zero(t, r.count("model:b"))

			g2 := buildChain(t, newStore(t), other, r, nil)
			res, err := g2.Invoke(bg, agent.Resume(interrupt.Respond(gates[1], "y")))
			require.NoError(t, err, "another session is unaffected")
			assert.Equal(t, multiagent.StatusCompleted, res.Status)
		})
	}
}
