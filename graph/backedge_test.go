package graph

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// The back edges that fan-in leaves out are those a depth-first search
// from the entry points finds closing a cycle; without them the graph is
// acyclic (so a join never waits, through others, on itself).
func TestTopology_BackEdgesCloseCyclesAndLeaveAnAcyclicGraph(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes   []string
		edges   [][2]string
		entries []string
		back    []bool
	}{
		"dag":            {[]string{"a", "b", "c"}, [][2]string{{"a", "b"}, {"a", "c"}, {"b", "c"}}, nil, []bool{false, false, false}},
		"self loop":      {[]string{"a", "b"}, [][2]string{{"a", "a"}, {"a", "b"}}, []string{"a"}, []bool{true, false}},
		"loop":           {[]string{"s", "h", "b"}, [][2]string{{"s", "h"}, {"h", "b"}, {"b", "h"}}, nil, []bool{false, false, true}},
		"loop, entry b":  {[]string{"h", "b"}, [][2]string{{"h", "b"}, {"b", "h"}}, []string{"b"}, []bool{true, false}},
		"edge order":     {[]string{"p", "w", "r"}, [][2]string{{"p", "r"}, {"p", "w"}, {"w", "r"}, {"r", "w"}}, nil, []bool{false, false, true, false}},
		"unreached part": {[]string{"a", "x", "y"}, [][2]string{{"x", "y"}, {"y", "x"}}, []string{"a"}, []bool{false, true}},
	} {
		t.Run(name, func(t *testing.T) {
			b := NewBuilder()
			for _, n := range tc.nodes {
				b.AddNode(n, nopNode{})
			}
			for _, e := range tc.edges {
				b.AddEdge(e[0], e[1])
			}
			for _, e := range tc.entries {
				b.SetEntryPoint(e)
			}
			top, err := b.validate()
			require.NoError(t, err)
			assert.Equal(t, tc.back, top.back)
			// Kahn's algorithm over the edges that are not back edges
			// takes every node: they are acyclic.
			indeg := make([]int, len(top.nodes))
			for ei := range top.edges {
				if !top.back[ei] {
					indeg[top.to[ei]]++
				}
			}
			var queue []int
			for i, d := range indeg {
				if d == 0 {
					queue = append(queue, i)
				}
			}
			taken := 0
			for len(queue) > 0 {
				n := queue[0]
				queue = queue[1:]
				taken++
				for _, ei := range top.out[n] {
					if top.back[ei] {
						continue
					}
					if indeg[top.to[ei]]--; indeg[top.to[ei]] == 0 {
						queue = append(queue, top.to[ei])
					}
				}
			}
			assert.Equal(t, len(top.nodes), taken)
		})
	}
}

// nopNode is a node that is never opened.
type nopNode struct{}

func (nopNode) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	return nil, errors.New("not opened in this test")
}
