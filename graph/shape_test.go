package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// dataSizes is a store that records the largest data an orchestrator's
// save wrote.
type dataSizes struct {
	*memory.Store
	mu  sync.Mutex
	max int
}

func (s *dataSizes) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	for _, c := range changes {
		if c.Key.Kind == persistence.KindMultiAgent {
			s.max = max(s.max, len(c.Data))
		}
	}
	s.mu.Unlock()
	return s.Store.Save(ctx, opts, changes...)
}

// leafID names the i-th leaf of a fan-out (zero-padded: ids sort in order).
func leafID(i int) string { return fmt.Sprintf("leaf-%04d", i) }

// fanOut is a root g and n leaves below it, each a Go function node;
// reversed adds the leaves and edges in the other order (the same graph).
func fanOut(n int, reversed bool) *graph.Builder {
	done := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		return []model.ContentBlock{model.Text("done")}, nil
	})
	b := graph.NewBuilder().AddNode("g", done)
	for k := range n {
		i := k
		if reversed {
			i = n - 1 - k
		}
		b.AddNode(leafID(i), done).AddEdge("g", leafID(i))
	}
	return b
}

// SPEC S1, M10: what an orchestrator's save writes besides its log of
// changed nodes does not grow with the graph: a graph of 2,000 nodes
// writes no more data per save than one of 10 (it used to write its whole
// topology with every save: O(nodes) a save, O(nodes²) a run).
func TestGraphSession_ASaveWritesNoMoreForALargerGraph(t *testing.T) {
	ctx := context.Background()
	size := func(n int) int {
		st := &dataSizes{Store: memory.New()}
		g := build(t, fanOut(n, false), graph.Config{ID: "g", Session: manager(t, st, "s"), MaxNodeExecutions: n + 1})
		res, err := g.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
		require.Equal(t, multiagent.StatusCompleted, res.Status)
		require.Len(t, res.Results, n+1)
		return st.max
	}
	small, large := size(10), size(2000)
	assert.LessOrEqual(t, large, small+32, "the largest data a save wrote: %d bytes for 10 leaves, %d for 2,000", small, large)
}

// fanOutShape is the Shape a graph gives fanOut(n, _) (graph/builder.go),
// as an earlier build stored it whole in the run's record.
func fanOutShape(n int) string {
	nodes := []string{strconv.Quote("g")}
	var edges []string
	for i := range n {
		nodes = append(nodes, strconv.Quote(leafID(i)))
		edges = append(edges, strconv.Quote("g")+"->"+strconv.Quote(leafID(i)))
	}
	return fmt.Sprintf("nodes %s; edges %s; entry points %s; reset on revisit false",
		strings.Join(nodes, " "), strings.Join(edges, " "), strconv.Quote("g"))
}

// SPEC M10, S5: a large graph's run keeps a digest of its topology, not
// the topology: the same graph built again (its nodes and edges added in
// another order) resumes the run, another graph with the same nodes, or
// with a node of another kind, gets ErrTopology; and a record of an earlier build, which keeps the topology
// whole, is read alike.
func TestGraphSession_ALargeGraphIsKnownAgainByItsTopologyDigest(t *testing.T) {
	ctx := context.Background()
	const n = 300
	st := memory.New()
	r := newRecorder()
	cfg := func() graph.Config {
		return graph.Config{ID: "g", Session: manager(t, st, "s"), System: actorstest.System(t), MaxNodeExecutions: n + 1,
			Hooks: []hook.Provider{gate(r, "g")}}
	}
	g := build(t, fanOut(n, false), cfg())
	res, err := g.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	require.NoError(t, g.Close(ctx))
	answer := res.Interrupts[0].ID

	key := persistencetest.OnlyRecord(t, st, "s", persistence.KindMultiAgent)
	rec, err := st.Load(ctx, key)
	require.NoError(t, err)
	digest := regexp.MustCompile(`"shape":"(sha256:[0-9a-f]{64})"`).FindSubmatch(rec.Data)
	require.NotNil(t, digest, "a digest, not the topology: %.200s", rec.Data)
	require.Less(t, len(rec.Data), 1024)

	// Another graph with the same nodes: one leaf hangs below another.
	other := fanOut(n-1, false).AddNode(leafID(n-1), agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) {
		return nil, nil
	})).AddEdge(leafID(0), leafID(n-1))
	_, err = other.Build(ctx, cfg())
	require.ErrorIs(t, err, actors.ErrTopology)
	// The same nodes and edges, one leaf an agent: the digest covers the
	// nodes' kinds.
	agentLeaf := fanOut(n-1, false).AddNode(leafID(n-1), textAgent(r, leafID(n-1))).AddEdge("g", leafID(n-1))
	_, err = agentLeaf.Build(ctx, cfg())
	require.ErrorIs(t, err, actors.ErrTopology, "a node of another kind")

	// The record as an earlier build wrote it: the topology whole.
	whole, err := json.Marshal(fanOutShape(n))
	require.NoError(t, err)
	require.Greater(t, len(whole), 1024)
	legacy := strings.Replace(string(rec.Data), `"`+string(digest[1])+`"`, string(whole), 1)
	require.True(t, st.Tamper(key, func(r *persistence.Record) { r.Data = json.RawMessage(legacy) }))
	_, err = other.Build(ctx, cfg())
	require.ErrorIs(t, err, actors.ErrTopology, "an earlier build's record, another graph")

	g = build(t, fanOut(n, true), cfg())
	res, err = g.Invoke(ctx, agent.Resume(interrupt.Respond(answer, "y")))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Len(t, res.Results, n+1)
}
