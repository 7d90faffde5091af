package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/swarm"
)

// storedRecords returns every record of session s, each as its version,
// data and message count, by key: what a save would change.
func storedRecords(t *testing.T, st persistence.Store, s string) map[persistence.Key]string {
	t.Helper()
	recs, err := st.Session(context.Background(), s)
	require.NoError(t, err)
	out := make(map[persistence.Key]string, len(recs))
	for _, rec := range recs {
		out[rec.Key] = fmt.Sprintf("v%d %d messages %s", rec.Version, len(rec.Messages), rec.Data)
	}
	return out
}

// SPEC M10: a node whose executor is of another kind (an agent, a nested
// graph, a nested swarm, a function) than when the run was saved is a
// changed topology: building the graph on the session fails with
// ErrTopology, naming the node, before anything runs or is saved, so the
// graph that saved the run still resumes it. (The executor of another
// kind used to be given the answers, which it refused as not
// interrupted: the run ended FAILED, for good.)
func TestGraphSession_ANodeOfAnotherKindIsAChangedTopology(t *testing.T) {
	ctx := context.Background()
	kinds := map[string]func(r *recorder) actors.Node{
		"an agent": func(r *recorder) actors.Node { return toolAgent(r, "a", "work", "ask") },
		"a nested graph": func(r *recorder) actors.Node {
			return graph.NewBuilder().AddNode("in", toolAgent(r, "in", "work", "ask")).AsNode(graph.Config{})
		},
		"a nested swarm": func(r *recorder) actors.Node {
			member := toolAgentConfig(r, "m", "work", "ask")
			member.ID = "m"
			return swarm.NewBuilder().AddAgent(member).AsNode(swarm.Config{})
		},
		"a function": func(r *recorder) actors.Node { return fn(r, "a", nil) },
	}
	kindOf := map[string]actors.NodeKind{"an agent": actors.NodeKindAgent, "a nested graph": actors.NodeKindGraph,
		"a nested swarm": actors.NodeKindSwarm, "a function": actors.NodeKindFunc}
	nested := map[string]bool{"a nested graph": true, "a nested swarm": true}
	for _, saved := range []string{"an agent", "a nested graph", "a nested swarm"} {
		for changed, node := range kinds {
			if changed == saved {
				continue
			}
			t.Run(saved+" then "+changed, func(t *testing.T) {
				st := sqliteStore(t)
				r := newRecorder()
				mk := func(a actors.Node) *graph.Builder {
					return graph.NewBuilder().AddNode("a", a).AddNode("end", textAgent(r, "end")).AddEdge("a", "end")
				}
				cfg := func() graph.Config {
					return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)}
				}
				g := build(t, mk(kinds[saved](r)), cfg())
				res, err := g.Invoke(ctx, agent.Text("go"))
				require.NoError(t, err)
				require.Equal(t, multiagent.StatusInterrupted, res.Status)
				require.Len(t, res.Interrupts, 1)
				require.NoError(t, g.Close(ctx))
				answer := agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y"))
				before := storedRecords(t, st, "s")

				g2, err := mk(node(r)).Build(ctx, cfg())
				if err == nil { // refused by the resume, at the latest
					_, err = g2.Invoke(ctx, answer)
					require.NoError(t, g2.Close(ctx))
				}
				require.ErrorIs(t, err, actors.ErrTopology)
				assert.Contains(t, err.Error(), `node "a"`)
				if !nested[saved] || !nested[changed] { // else the nested orchestrator's record is another's
					assert.Contains(t, err.Error(), fmt.Sprintf(`node "a" was of kind %q when the stored run was saved, and is of kind %q here`,
						kindOf[saved], kindOf[changed]))
				}
				assert.Equal(t, before, storedRecords(t, st, "s"), "nothing was saved")
				assert.Zero(t, r.count("model:end"))

				g3 := build(t, mk(kinds[saved](r)), cfg())
				res, err = g3.Invoke(ctx, answer)
				require.NoError(t, err)
				assert.Equal(t, multiagent.StatusCompleted, res.Status, "the graph that saved the run resumes it")
				assert.Equal(t, 1, r.count("model:end"))
			})
		}
	}
}

// SPEC M10, S5: a graph's record keeps its nodes' kinds with its shape;
// a record an earlier build wrote, whose shape has no kinds, still loads
// and resumes.
func TestGraphSession_ARecordWithoutNodeKindsStillResumes(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	r := newRecorder()
	mk := func() *graph.Builder {
		return graph.NewBuilder().AddNode("a", toolAgent(r, "a", "work", "ask")).AddNode("end", fn(r, "end", nil)).AddEdge("a", "end")
	}
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t)}
	}
	g := build(t, mk(), cfg())
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))

	key := persistencetest.OnlyRecord(t, st, "s", persistence.KindMultiAgent)
	stripNodeKinds(t, st, key, `"a"="agent" "end"="func"`)

	g2 := build(t, mk(), cfg())
	res, err = g2.Invoke(ctx, agent.Resume(interrupt.Respond(res.Interrupts[0].ID, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, 1, r.count("tool:a"))
	assert.Equal(t, 1, r.count("fn:end"))
}

// stripNodeKinds rewrites the orchestrator's record at key as an earlier
// build wrote it: its shape without the nodes' kinds, which must be
// kinds.
func stripNodeKinds(t *testing.T, st persistence.Store, key persistence.Key, kinds string) {
	t.Helper()
	ctx := context.Background()
	rec, err := st.Load(ctx, key)
	require.NoError(t, err)
	var d map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Data, &d))
	var shape string
	require.NoError(t, json.Unmarshal(d["shape"], &shape))
	structure, stored, ok := strings.Cut(shape, "; node kinds ")
	require.True(t, ok, "the record keeps the nodes' kinds: %s", shape)
	require.Equal(t, kinds, stored)
	d["shape"], err = json.Marshal(structure)
	require.NoError(t, err)
	data, err := json.Marshal(d)
	require.NoError(t, err)
	_, err = st.Save(ctx, persistence.SaveOptions{Durable: true},
		persistence.Change{Key: key, Base: rec.Version, Incarnation: rec.Incarnation, Data: data, From: len(rec.Messages)})
	require.NoError(t, err)
}
