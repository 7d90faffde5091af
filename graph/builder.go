package graph

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
)

// DefaultID is the id of a graph whose Config leaves ID empty.
const DefaultID = "default_graph"

// Kind is the orchestrator kind of graphs (identity and record type).
const Kind = "graph"

// ErrBuild reports that the graph cannot be built (the message says why).
var ErrBuild = errors.New("invalid graph")

// Condition decides whether an edge is taken, from the run's state. It
// runs on the graph's actor: it must be quick and must not block. It is
// asked after every node's end, as long as the edge's source completed
// after its target last started, so it should depend on the run's state
// only (typically on the source's result).
type Condition func(s *State) bool

// Edge is a directed edge; a nil Condition is always taken.
type Edge struct {
	From, To  string
	Condition Condition
}

// Config configures a graph.
type Config struct {
	// ID names the graph in its session (default DefaultID); it holds no
	// "/" or ":" (ErrBuild), being a segment of its nodes' owner paths.
	ID string
	// Hooks register callbacks on the multiagent events.
	Hooks []hook.Provider
	// Session saves the run (SPEC M10); nil keeps it in memory.
	Session *persistence.SessionManager
	// System is the actor system (nil: actors.Default()).
	System *actors.System
	// MaxNodeExecutions bounds the node runs the run starts: once that
	// many have started (ended, running, or waiting for answers), a node
	// that would start does not, and the run ends FAILED ("Max node
	// executions reached: N") when the running nodes have ended; 0 is no
	// limit. Nodes ready together (entry points, a fan-out) start only as
	// far as the limit allows. A node run that stopped for interrupts (its
	// gate's or its agent's) and is resumed is not another: it finishes.
	// The result's ExecutionCount counts the runs that ended.
	MaxNodeExecutions int
	// ExecutionTimeout ends the run FAILED ("Execution timed out: Xs")
	// once it has executed that long: a node that would start then does
	// not, and the run ends when the running nodes have ended. The time is
	// summed over the run's invocations; the time an interrupted run
	// waits for its answers is not counted. A node run that stopped for
	// interrupts and is resumed is not a new one: it finishes, even past
	// the budget. NodeTimeout fails a node run that takes longer. Zero is
	// no limit.
	ExecutionTimeout, NodeTimeout time.Duration
	// IdleTimeout passivates the graph (and its nodes' agents) when idle;
	// requires a Session.
	IdleTimeout time.Duration
}

// DefaultConfig returns a Config with its defaults filled in: the ID
// DefaultID, and no limits (a graph has none unless set, as in Strands;
// a Swarm has some). System nil is actors.Default().
func DefaultConfig() Config { return Config{ID: DefaultID} }

// Validate checks the configuration, an empty ID taken as DefaultID, as
// Build does. Errors match ErrBuild.
func (c Config) Validate() error {
	if c.ID == "" {
		c.ID = DefaultID
	}
	if err := multiagent.CheckSegment("graph", c.ID); err != nil {
		return fmt.Errorf("%w: %w", ErrBuild, err) // with a session or without
	}
	if c.IdleTimeout > 0 && c.Session == nil {
		return fmt.Errorf("%w: IdleTimeout needs a Session (a passivated graph comes back from its session)", ErrBuild)
	}
	if i := hook.Missing(c.Hooks); i >= 0 {
		return fmt.Errorf("%w: Hooks[%d] is nil (a hook left out would leave what it guards unguarded)", ErrBuild, i)
	}
	for _, l := range []struct {
		name  string
		value int64
	}{
		{"MaxNodeExecutions", int64(c.MaxNodeExecutions)}, {"ExecutionTimeout", int64(c.ExecutionTimeout)},
		{"NodeTimeout", int64(c.NodeTimeout)}, {"IdleTimeout", int64(c.IdleTimeout)},
	} {
		if l.value < 0 {
			return fmt.Errorf("%w: negative limit: %s", ErrBuild, l.name)
		}
	}
	return nil
}

// Builder collects a graph's nodes and edges. It is not safe for
// concurrent use. A Builder is also a node of another Graph or Swarm
// (AsNode).
type Builder struct {
	reset   bool
	nodes   []actors.NodeSpec
	index   map[string]int
	edges   []Edge
	entries []string
	err     error
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{index: map[string]int{}} }

func (b *Builder) fail(format string, args ...any) *Builder {
	if b.err == nil {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrBuild}, args...)...)
	}
	return b
}

// AddNode adds a node (agentnode.Agent, agentnode.Func, or a nested
// Builder's AsNode). Ids are unique and are path segments: no "/", no ":".
func (b *Builder) AddNode(id string, node actors.Node) *Builder {
	switch {
	case id == "":
		return b.fail("a node needs an id")
	case node == nil:
		return b.fail("node %q has no executor", id)
	case multiagent.CheckSegment("node", id) != nil:
		return b.fail("%v", multiagent.CheckSegment("node", id))
	}
	if _, dup := b.index[id]; dup {
		return b.fail("Node '%s' already exists", id)
	}
	b.index[id] = len(b.nodes)
	b.nodes = append(b.nodes, actors.NodeSpec{ID: id, Node: node})
	return b
}

// AddEdge adds an edge from → to, taken when cond (if any) holds.
func (b *Builder) AddEdge(from, to string, cond ...Condition) *Builder {
	e := Edge{From: from, To: to}
	switch len(cond) {
	case 0:
	case 1:
		e.Condition = cond[0]
	default:
		return b.fail("edge %s -> %s: one condition at most", from, to)
	}
	b.edges = append(b.edges, e)
	return b
}

// SetEntryPoint makes id an entry point (by default the entry points are
// the nodes without incoming edges).
func (b *Builder) SetEntryPoint(id string) *Builder {
	b.entries = append(b.entries, id)
	return b
}

// ResetOnRevisit makes a node that runs again (a back edge) start from
// its agent's initial history and an empty state, instead of carrying on
// its conversation.
func (b *Builder) ResetOnRevisit(on bool) *Builder {
	b.reset = on
	return b
}

// topology is a validated graph, by node index (the order of nodes).
type topology struct {
	nodes   []actors.NodeSpec
	edges   []Edge
	from    []int   // per edge, its source
	to      []int   // per edge, its target
	back    []bool  // per edge, whether it is a back edge (see backEdges)
	out     [][]int // per node, its outgoing edges (indexes into edges), in the order added
	in      [][]int // per node, its incoming edges
	entries []string
	reset   bool
	index   map[string]int // node id -> index
	// conditional: some edge has a condition, which may read any node's
	// result (the policy then looks at every node at every step)
	conditional bool
}

// shape describes the topology for actors.OrchestratorConfig.Shape: the
// sets of nodes, edges and entry points, each sorted, so that a graph
// built in another order (from a map, say) is the same graph; a
// conditional edge is marked "?" (its condition is code, which no text
// can compare), and a back edge that an entry point reaches "<" (which
// edges close the cycles depends on the order of the nodes, entry points
// and edges, and decides which node waits for which); and whether
// revisited nodes reset.
func (t *topology) shape() string {
	quoted := func(ids []string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = strconv.Quote(id)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	nodes := make([]string, len(t.nodes))
	for i, n := range t.nodes {
		nodes[i] = n.ID
	}
	// A cycle no entry point reaches never runs, and which of its edges
	// closes it depends on the order of the nodes: not part of the shape.
	reached := make([]bool, len(t.nodes))
	var queue []int
	for _, id := range t.entries {
		reached[t.index[id]] = true
		queue = append(queue, t.index[id])
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range t.out[n] {
			if to := t.to[e]; !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	edges := make([]string, len(t.edges))
	for i, e := range t.edges {
		edges[i] = strconv.Quote(e.From) + "->" + strconv.Quote(e.To)
		if e.Condition != nil {
			edges[i] += "?"
		}
		if t.back[i] && reached[t.from[i]] {
			edges[i] += "<"
		}
	}
	slices.Sort(edges)
	return fmt.Sprintf("nodes %s; edges %s; entry points %s; reset on revisit %v",
		quoted(nodes), strings.Join(edges, " "), quoted(t.entries), t.reset)
}

// backEdges marks the back edges: those that close a cycle, found by a
// depth-first search from the entry points in order, then from the other
// nodes in order, following each node's edges in the order they were
// added. Without them the graph is acyclic.
func (t *topology) backEdges() {
	t.back = make([]bool, len(t.edges))
	const (
		unseen = iota
		open   // on the search's path
		closed
	)
	state := make([]int, len(t.nodes))
	type frame struct{ node, next int } // next: index into out[node]
	var path []frame
	visit := func(root int) {
		if state[root] != unseen {
			return
		}
		state[root] = open
		path = append(path[:0], frame{node: root})
		for len(path) > 0 {
			f := &path[len(path)-1]
			if f.next == len(t.out[f.node]) {
				state[f.node] = closed
				path = path[:len(path)-1]
				continue
			}
			ei := t.out[f.node][f.next]
			f.next++
			switch to := t.to[ei]; state[to] {
			case open:
				t.back[ei] = true
			case unseen:
				state[to] = open
				path = append(path, frame{node: to})
			}
		}
	}
	for _, id := range t.entries {
		visit(t.index[id])
	}
	for i := range t.nodes {
		visit(i)
	}
}

func (b *Builder) validate() (*topology, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.nodes) == 0 {
		return nil, fmt.Errorf("%w: Graph must contain at least one node", ErrBuild)
	}
	t := &topology{nodes: append([]actors.NodeSpec(nil), b.nodes...), edges: append([]Edge(nil), b.edges...),
		from: make([]int, len(b.edges)), to: make([]int, len(b.edges)), out: make([][]int, len(b.nodes)),
		in: make([][]int, len(b.nodes)), reset: b.reset, index: make(map[string]int, len(b.nodes))}
	for i, n := range t.nodes {
		t.index[n.ID] = i
	}
	for i, e := range t.edges {
		for _, end := range []string{e.From, e.To} {
			if _, ok := t.index[end]; !ok {
				return nil, fmt.Errorf("%w: edge %s -> %s: Node '%s' not found", ErrBuild, e.From, e.To, end)
			}
		}
		t.from[i], t.to[i] = t.index[e.From], t.index[e.To]
		t.out[t.from[i]] = append(t.out[t.from[i]], i)
		t.in[t.to[i]] = append(t.in[t.to[i]], i)
	}
	seen := map[string]bool{}
	for _, id := range b.entries {
		if _, ok := b.index[id]; !ok {
			return nil, fmt.Errorf("%w: entry point: Node '%s' not found", ErrBuild, id)
		}
		if !seen[id] {
			seen[id] = true
			t.entries = append(t.entries, id)
		}
	}
	if len(t.entries) == 0 {
		for i, n := range t.nodes {
			if len(t.in[i]) == 0 {
				t.entries = append(t.entries, n.ID)
			}
		}
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%w: No entry points found - all nodes have dependencies", ErrBuild)
	}
	t.backEdges()
	for _, e := range t.edges {
		t.conditional = t.conditional || e.Condition != nil
	}
	return t, nil
}
