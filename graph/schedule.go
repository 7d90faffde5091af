package graph

import (
	"slices"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/proto/braidv1"
)

// policy is the graph's scheduling (SPEC M8). Its methods run on the
// orchestrator's actor, one at a time, so its scratch space is reused
// from step to step.
//
// Every decision is made from the topology and the run as it stands
// (the nodes' statuses and results, their start and end sequence numbers,
// the nodes held back to run), all of which is saved with the run: a run
// restored in another process is scheduled the same way.
type policy struct {
	t *topology
	// the text of the task of the run, decoded once
	task     *braidv1.AgentInput
	taskText string
	s        step
	// scanned: a Next since the policy was made or the run began looked
	// at every node (see Next).
	scanned bool
	// held: the nodes that take an edge but are blocked, as the last Next
	// left them, in the order added (see Next); heldNext is its scratch.
	held, heldNext []int
	// dead: the nodes found unable to run this run, kept from step to step
	// when that cannot change (see canRun); nil when it can.
	dead []bool
	// run is the task of the run that scanned, held and dead are about.
	// The orchestrator gives a run it loads from the store (a restore, or
	// the reload after a failed save, which may take the run back to an
	// earlier point or to another writer's) a task value of its own: a
	// Next on another task than run's knows nothing of it, and forgets.
	run *braidv1.AgentInput
}

// newPolicy returns the scheduling of t.
func newPolicy(t *topology) *policy {
	p := &policy{t: t}
	if !t.conditional && !slices.Contains(t.back, true) {
		p.dead = make([]bool, len(t.nodes))
	}
	return p
}

// Begin implements actors.Policy.
func (p *policy) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	p.forget(v)
	starts := make([]actors.NodeStart, 0, len(p.t.entries))
	for _, id := range p.t.entries {
		starts = append(starts, actors.NodeStart{Node: id, Input: v.Task()})
	}
	return starts, nil
}

// Next implements actors.Policy: after any node's end, every node that is
// ready starts, the targets of node's edges first, then the others in
// the order they were added. A node is ready when it takes an edge (the
// edge's source completed after the node last started, and the edge's
// condition holds) and is not blocked (see blocked).
//
// An end can release a join that waited on a node that will now never
// run, not only start node's targets. Which nodes it can make ready:
// every node that was ready before has started (each Next starts them),
// so a node becomes ready now only if it takes an edge it did not take
// before, or took one and was blocked and is no longer. Without
// conditions, only an edge from node is newly taken (or, for node
// itself, an edge whose source ended while node ran, now that it no
// longer runs); and a node that took an edge and was blocked is one that
// a Next looked at and left waiting: Next keeps those (held). So Next
// looks at node, its targets and the held nodes: a step costs O(1) in a
// chain or a fan-out, not O(n), whatever the graph's size. (A held node
// is released only by the end of a node above it, so looking at every
// held one, not only those below node, starts the same nodes.) It looks
// at every node when a condition could change its answer with node's
// end (the graph has conditional edges), and at the first Next of a
// policy or of a run (a run restored or reloaded from the store is
// looked at whole once, which finds the held nodes again, and what was
// kept of the run as it stood before is forgotten).
func (p *policy) Next(v *actors.RunView, node string) ([]actors.NodeStart, string) {
	if v.Task() != p.run {
		p.forget(v) // a run loaded from the store: looked at whole
	}
	s := p.begin(v)
	defer func() { s.v, s.st = nil, nil }() // keep no view past the call
	var starts []actors.NodeStart
	held := p.heldNext[:0]
	consider := func(i int) {
		if s.done[i] == s.epoch {
			return
		}
		s.done[i] = s.epoch
		taken := p.taken(i)
		if len(taken) == 0 {
			return
		}
		if p.blocked(i) {
			held = append(held, i)
			return
		}
		id := p.t.nodes[i].ID
		deps := make([]string, len(taken))
		for k, ei := range taken {
			deps[k] = p.t.edges[ei].From
		}
		text := p.input(v, deps)
		starts = append(starts, actors.NodeStart{Node: id, Input: &braidv1.AgentInput{Messages: [][]byte{userText(text)}},
			Local: agent.Text(text), Reset: p.t.reset && p.load(i).ended > 0})
	}
	f, known := p.t.index[node]
	if known {
		for _, ei := range p.t.out[f] {
			consider(p.t.to[ei])
		}
	}
	if !known || !p.scanned || p.t.conditional {
		p.scanned = true
		for i := range p.t.nodes {
			consider(i)
		}
	} else {
		// node and the held nodes, in the order added
		at := 0
		for at < len(p.held) && p.held[at] < f {
			consider(p.held[at])
			at++
		}
		consider(f)
		for _, i := range p.held[at:] {
			consider(i)
		}
	}
	slices.Sort(held)
	p.held, p.heldNext = held, p.held
	return starts, ""
}

// forget drops what the policy kept of an earlier run (or of the same
// run at another point): the next Next looks at every node.
func (p *policy) forget(v *actors.RunView) {
	p.run = v.Task()
	p.scanned, p.held = false, p.held[:0]
	clear(p.dead)
}

// step is the run as one scheduling step sees it, by node index, read
// as it is needed: an entry is current when its stamp is the step's
// epoch, so a step costs what it looks at, not the graph's size.
type step struct {
	v     *actors.RunView
	st    *State // what the conditions see, made when the first is asked
	epoch uint32
	nodes []nodeStep
	done  []uint32 // looked at by this step
}

type nodeStep struct {
	loaded, scanned, known uint32 // the epochs of the fields below
	status                 braidv1.NodeStatus
	started, ended         uint64
	waiting                bool // runs, or is held back to run
	// taken holds, if the node does not run or wait to run, the edges
	// it takes (indexes into edges, in the order added). Such a node
	// will run: now, or once it is no longer blocked.
	taken []int
	can   bool // canRun's answer
}

// begin starts a step on v.
func (p *policy) begin(v *actors.RunView) *step {
	s, n := &p.s, len(p.t.nodes)
	if len(s.nodes) != n {
		*s = step{nodes: make([]nodeStep, n), done: make([]uint32, n)}
	}
	if s.epoch++; s.epoch == 0 { // wrapped: forget every stamp
		clear(s.nodes)
		clear(s.done)
		s.epoch = 1
	}
	s.v = v
	return s
}

// load returns node i as the run stands.
func (p *policy) load(i int) *nodeStep {
	s := &p.s
	ns := &s.nodes[i]
	if ns.loaded != s.epoch {
		r := s.v.NodeAt(i) // the orchestrator's nodes are the topology's, in order
		ns.status, ns.started, ns.ended, ns.waiting = r.Status, r.Started, r.Ended, r.Waiting
		ns.loaded = s.epoch
	}
	return ns
}

// taken returns the edges node i takes (see nodeStep.taken).
func (p *policy) taken(i int) []int {
	s := &p.s
	ns := p.load(i)
	if ns.scanned == s.epoch {
		return ns.taken
	}
	ns.scanned, ns.taken = s.epoch, ns.taken[:0]
	if ns.waiting || ns.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		// An interrupted node waits for its answers: its run goes on when
		// they come (SPEC M5), and an edge taken meanwhile is taken once
		// that run has ended (its start stays that of the run, see
		// actors.RunView.Started).
		return nil
	}
	for _, ei := range p.t.in[i] {
		src := p.load(p.t.from[ei])
		if src.status != braidv1.NodeStatus_NODE_STATUS_COMPLETED || src.ended <= ns.started {
			continue
		}
		if c := p.t.edges[ei].Condition; c != nil {
			if s.st == nil {
				s.st = &State{v: s.v}
			}
			if !c(s.st) {
				continue
			}
		}
		ns.taken = append(ns.taken, ei)
	}
	return ns.taken
}

// blocked reports whether node i, which takes an edge, must wait (fan-in,
// SPEC M8): the source of one of its incoming edges can still run (see
// canRun). A source that failed or was cancelled, or whose own sources
// will not run (they failed, or their edges to it are not taken), cannot,
// and does not block; nor does one that ran and has nothing left
// upstream to run it again.
//
// Back edges (see topology.backEdges) are left out, both as incoming
// edges and on the way up from a source: a loop's head does not wait
// for the loop's end to feed it, and nodes that feed each other do not
// wait on each other, which neither could ever stop doing. What is left
// is acyclic, so a node that takes an edge never waits, through others,
// on itself.
func (p *policy) blocked(i int) bool {
	for _, ei := range p.t.in[i] {
		if !p.t.back[ei] && p.canRun(p.t.from[ei]) {
			return true // a predecessor that will run (an interrupted one on resume) has not finished
		}
	}
	return false
}

// canRun reports whether node n can still run: it is live (it runs,
// waits to run, is interrupted, so runs on resume, or takes an edge), or
// the source of one of its incoming edges, back edges left out, can still
// run. Each node's answer is worked out once per step.
//
// Without back edges and conditions, a node that cannot run never can
// again in this run: to run it must take an edge, from a source that
// completes later, so runs later, which none of its sources (nor theirs)
// can. Such an answer is kept for the run (dead), so a chain's step does
// not walk up the whole chain again.
func (p *policy) canRun(n int) bool {
	s := &p.s
	if p.dead != nil && p.dead[n] {
		return false
	}
	ns := p.load(n)
	if ns.known == s.epoch {
		return ns.can
	}
	r := ns.waiting || ns.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || len(p.taken(n)) > 0
	for _, ei := range p.t.in[n] {
		if r {
			break
		}
		r = !p.t.back[ei] && p.canRun(p.t.from[ei]) // the graph without back edges is acyclic: this ends
	}
	ns.known, ns.can = s.epoch, r
	if !r && p.dead != nil {
		p.dead[n] = true
	}
	return r
}
