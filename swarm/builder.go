package swarm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/multiagent"
)

// Node is one agent of a swarm.
type Node struct {
	// Agent configures the node's agent. Its ID (else its Name) is the
	// node's id; the swarm sets OwnerPath, System, Session and IdleTimeout,
	// and restores it from its own session, so leave those and Restore
	// empty (agentnode.Agent). It must not have a tool named HandoffTool.
	Agent agent.Config
	// Description tells the other agents what this one is for (default:
	// the first line of Agent.SystemPrompt).
	Description string
}

// Builder collects a swarm's agents. It is not safe for concurrent use.
// Errors are kept and returned by Build.
type Builder struct {
	nodes []member
	index map[string]int
	entry string
	reset bool
	err   error
}

// member is a node as the builder validated it.
type member struct {
	id          string
	cfg         agent.Config
	description string
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{index: map[string]int{}} }

func (b *Builder) fail(format string, args ...any) *Builder {
	if b.err == nil {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrBuild}, args...)...)
	}
	return b
}

// AddAgent adds an agent without a description of its own: AddNode(Node{Agent: cfg}).
func (b *Builder) AddAgent(cfg agent.Config) *Builder { return b.AddNode(Node{Agent: cfg}) }

// AddNode adds an agent. Its id (Agent.ID, else Agent.Name, else
// node_<i> for the i-th node) must be unique and be a path segment (no
// "/", no ":").
func (b *Builder) AddNode(n Node) *Builder {
	id := n.Agent.ID
	if id == "" {
		id = n.Agent.Name
	}
	if id == "" {
		id = fmt.Sprintf("node_%d", len(b.nodes))
	}
	switch {
	case multiagent.CheckSegment("node", id) != nil:
		return b.fail("%v", multiagent.CheckSegment("node", id))
	}
	if _, dup := b.index[id]; dup {
		return b.fail("Node ID '%s' is not unique: give each agent its own ID or Name", id)
	}
	for _, t := range n.Agent.Tools {
		if t != nil && t.Spec().Name == HandoffTool {
			return b.fail("Agent '%s' already has a tool named %s, which the swarm gives every agent: rename that tool", id, HandoffTool)
		}
	}
	desc := n.Description
	if desc == "" {
		desc, _, _ = strings.Cut(strings.TrimSpace(n.Agent.SystemPrompt), "\n")
	}
	cfg := n.Agent
	if cfg.ID == "" {
		cfg.ID = id
	}
	b.index[id] = len(b.nodes)
	b.nodes = append(b.nodes, member{id: id, cfg: cfg, description: strings.TrimSpace(desc)})
	return b
}

// SetEntryPoint makes node id the first to run (default: the first node
// added).
func (b *Builder) SetEntryPoint(id string) *Builder {
	b.entry = id
	return b
}

// ResetOnRevisit makes an agent that runs again (a handoff back to it)
// start from its initial history and an empty key/value state, as
// Strands' swarms do, instead of carrying on its conversation. A resumed
// run always carries on where it stopped.
func (b *Builder) ResetOnRevisit(on bool) *Builder {
	b.reset = on
	return b
}

// team is a validated swarm: its members, in order, its entry point, and
// whether revisited agents start afresh.
type team struct {
	members []member
	index   map[string]int
	entry   string
	reset   bool
}

// shape describes the team for actors.OrchestratorConfig.Shape: its
// members (sorted: a team built in another order is the same team), its
// entry point, and whether revisited agents start afresh.
func (t *team) shape() string {
	ids := make([]string, len(t.members))
	for i, m := range t.members {
		ids[i] = strconv.Quote(m.id)
	}
	slices.Sort(ids)
	return fmt.Sprintf("nodes %s; entry point %q; reset on revisit %v", strings.Join(ids, " "), t.entry, t.reset)
}

func (b *Builder) validate() (*team, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.nodes) == 0 {
		return nil, fmt.Errorf("%w: Swarm must contain at least one node", ErrBuild)
	}
	t := &team{members: append([]member(nil), b.nodes...), index: make(map[string]int, len(b.nodes)),
		entry: b.nodes[0].id, reset: b.reset}
	for i, m := range t.members {
		t.index[m.id] = i
	}
	if b.entry != "" {
		if _, ok := t.index[b.entry]; !ok {
			return nil, fmt.Errorf("%w: entry point: Node '%s' not found", ErrBuild, b.entry)
		}
		t.entry = b.entry
	}
	return t, nil
}

// has reports whether the swarm has a node id.
func (t *team) has(id string) bool {
	_, ok := t.index[id]
	return ok
}
