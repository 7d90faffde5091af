package graph

import (
	"context"

	"github.com/braidhq/braid/actors"
)

// AsNode returns the graph as a node of another Graph or Swarm (SPEC
// M11). The outer orchestrator sets System, Session and IdleTimeout; the
// nested graph's interrupt ids and its nodes carry the node's path, so
// an interrupt raised at any depth surfaces at the top and its answer is
// routed back down to the agent that raised it.
func (b *Builder) AsNode(cfg Config) actors.Node { return &nested{b: b, cfg: cfg} }

type nested struct {
	b   *Builder
	cfg Config
}

// NodeKind implements actors.KindedNode.
func (n *nested) NodeKind() actors.NodeKind { return actors.NodeKindGraph }

// OpenNode implements actors.Node.
func (n *nested) OpenNode(ctx context.Context, env actors.NodeEnv) (actors.NodeRunner, error) {
	cfg := n.cfg
	cfg.System, cfg.Session, cfg.IdleTimeout = env.System, env.Session, env.IdleTimeout
	if cfg.ID == "" {
		cfg.ID = env.NodeID
	}
	o, err := n.b.start(ctx, cfg, env.Path)
	if err != nil {
		return nil, err
	}
	return &actors.NestedRunner{O: o}, nil
}
