package graph_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
)

// SPEC M8 (fan-in, failures): on random acyclic graphs whose nodes run
// concurrently and end in any order, some of them failing, a node runs
// exactly when it is an entry point or one of its predecessors ran and
// completed; it runs once, after every predecessor that ran, with the
// output of each one that completed. The outcome does not depend on the
// order of the ends, so it is checked against that rule (the policy
// looks only at the nodes below the one that ended; this checks it
// misses no join that an end released).
func TestSchedule_RandomDAGsRunEachNodeThatCanRunOnceAfterItsPredecessors(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			n := 6 + rng.IntN(14)
			id := func(i int) string { return fmt.Sprintf("n%02d", i) }
			fails := make([]bool, n)
			preds := make([][]int, n)
			for i := range n {
				fails[i] = rng.IntN(5) == 0
				for j := range i {
					if rng.IntN(4) == 0 {
						preds[i] = append(preds[i], j)
					}
				}
			}
			// The rule, worked out in index order (edges go up the order).
			ran, done := make([]bool, n), make([]bool, n)
			for i := range n {
				ran[i] = len(preds[i]) == 0
				for _, p := range preds[i] {
					ran[i] = ran[i] || done[p]
				}
				done[i] = ran[i] && !fails[i]
			}

			r := newRecorder()
			b := graph.NewBuilder()
			for i := range n {
				spins := rng.IntN(50)
				if fails[i] {
					spins += 50 // a failure tends to come after its siblings' ends
				}
				b.AddNode(id(i), agentnode.Func(func(ctx context.Context, in agent.Input) ([]model.ContentBlock, error) {
					r.add("fn:" + id(i))
					if p := in.Prompt(); len(p) > 0 {
						r.prompt(id(i), p[len(p)-1].Text())
					}
					for range spins {
						runtime.Gosched()
					}
					if fails[i] {
						return nil, errors.New("boom")
					}
					return []model.ContentBlock{model.Text(id(i) + " out")}, nil
				}))
			}
			for i := range n {
				for _, p := range preds[i] {
					b.AddEdge(id(p), id(i))
				}
			}
			res, err := build(t, b, graph.Config{ID: "g"}).Invoke(context.Background(), agent.Text("go"))
			require.NoError(t, err)

			var order []string
			for _, nr := range res.Results {
				order = append(order, nr.NodeID)
			}
			for i := range n {
				if !ran[i] {
					assert.Zero(t, r.count("fn:"+id(i)), "%s ran: no predecessor completed", id(i))
					assert.Nil(t, res.Node(id(i)))
					continue
				}
				require.Equal(t, 1, r.count("fn:"+id(i)), "%s runs once", id(i))
				require.NotNil(t, res.Node(id(i)))
				want := multiagent.StatusCompleted
				if fails[i] {
					want = multiagent.StatusFailed
				}
				assert.Equal(t, want, res.Node(id(i)).Status, id(i))
				at := slices.Index(order, id(i))
				for _, p := range preds[i] {
					if ran[p] {
						assert.Less(t, slices.Index(order, id(p)), at, "%s ends before %s", id(p), id(i))
					}
					if len(preds[i]) > 0 {
						prompt := r.prompts(id(i))[0]
						assert.Equal(t, done[p], containsFrom(prompt, id(p)), "%s's input from %s", id(i), id(p))
					}
				}
			}
		})
	}
}

func containsFrom(prompt, node string) bool { return strings.Contains(prompt, "From "+node+":") }
