package actors

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// kindedNode is a node of a given kind that never runs.
type kindedNode struct {
	Node
	kind NodeKind
}

func (n kindedNode) NodeKind() NodeKind { return n.kind }

// openless is a Node that does not say its kind.
type openless struct{}

func (openless) OpenNode(context.Context, NodeEnv) (NodeRunner, error) { return nil, nil }

// SPEC M10: the shape a run's record keeps names every node's kind
// whatever its id holds, in an order that does not depend on the nodes';
// when only kinds differ the topology error names those nodes, and
// otherwise (another structure, a digest) it does not claim to.
func TestRecordShape_NamesEveryNodesKind(t *testing.T) {
	odd := `q"x =y`
	cfg := &OrchestratorConfig{Shape: "s", Nodes: []NodeSpec{
		{ID: "b", Node: kindedNode{kind: NodeKindGraph}},
		{ID: odd, Node: kindedNode{kind: NodeKindAgent}},
		{ID: "a", Node: openless{}},
		{ID: "e", Node: kindedNode{kind: ""}},
	}}
	saved := recordShape(cfg)
	assert.Equal(t, `s; node kinds "a"="custom" "b"="graph" "e"="custom" "q\"x =y"="agent"`, saved)
	assert.Equal(t, "node kinds ", recordShape(&OrchestratorConfig{}), "no Shape, no nodes")

	reordered := &OrchestratorConfig{Shape: "s", Nodes: []NodeSpec{cfg.Nodes[3], cfg.Nodes[2], cfg.Nodes[1], cfg.Nodes[0]}}
	assert.Equal(t, saved, recordShape(reordered))
	assert.Empty(t, kindChanges(saved, reordered))

	changed := &OrchestratorConfig{Shape: "s", Nodes: append([]NodeSpec(nil), cfg.Nodes...)}
	changed.Nodes[1] = NodeSpec{ID: odd, Node: kindedNode{kind: NodeKindFunc}}
	changed.Nodes[0] = NodeSpec{ID: "b", Node: kindedNode{kind: NodeKindSwarm}}
	assert.Equal(t, `node "b" was of kind "graph" when the stored run was saved, and is of kind "swarm" here; `+
		`node "q\"x =y" was of kind "agent" when the stored run was saved, and is of kind "func" here`, kindChanges(saved, changed))

	other := &OrchestratorConfig{Shape: "t", Nodes: changed.Nodes}
	assert.Empty(t, kindChanges(saved, other), "another structure")
	fewer := &OrchestratorConfig{Shape: "s", Nodes: changed.Nodes[:3]}
	assert.Empty(t, kindChanges(saved, fewer), "another node set")
	assert.Empty(t, kindChanges(storedShape(saved+string(make([]byte, maxShapeText))), changed), "a digest")
	assert.Empty(t, kindChanges("s; node kinds \"a\"=", changed), "a damaged text")
}
