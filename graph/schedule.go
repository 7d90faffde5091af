package graph

import (
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
}

// Begin implements actors.Policy.
func (p *policy) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	starts := make([]actors.NodeStart, 0, len(p.t.entries))
	for _, id := range p.t.entries {
		starts = append(starts, actors.NodeStart{Node: id, Input: v.Task()})
	}
	return starts, nil
}

// Next implements actors.Policy: after any node's end, every node that is
// ready starts, the targets of node's edges first. A node is ready when
// it takes an edge (the edge's source completed after the node last
// started, and the edge's condition holds) and is not blocked (see
// blocked). Every node is looked at, not only node's targets: an end can
// release a join that waited on a node that will now never run.
func (p *policy) Next(v *actors.RunView, node string) ([]actors.NodeStart, string) {
	s := p.scan(v)
	defer func() { s.st = nil }() // keep no view past the call
	var starts []actors.NodeStart
	consider := func(i int) {
		if s.done[i] || len(s.taken[i]) == 0 {
			return
		}
		s.done[i] = true
		if p.blocked(i) {
			return
		}
		id := p.t.nodes[i].ID
		deps := make([]string, len(s.taken[i]))
		for k, ei := range s.taken[i] {
			deps[k] = p.t.edges[ei].From
		}
		text := p.input(v, deps)
		starts = append(starts, actors.NodeStart{Node: id, Input: &braidv1.AgentInput{Messages: [][]byte{userText(text)}},
			Local: agent.Text(text), Reset: p.t.reset && s.ended[i] > 0})
	}
	if f, ok := p.t.index[node]; ok {
		for _, ei := range p.t.out[f] {
			consider(p.t.to[ei])
		}
	}
	for i := range p.t.nodes {
		consider(i)
	}
	return starts, ""
}

// step is the run as one scheduling step sees it, by node index.
type step struct {
	st      *State // what the conditions see, made when the first is asked
	status  []braidv1.NodeStatus
	started []uint64
	ended   []uint64
	waiting []bool // runs, or is held back to run
	// taken holds, per node that does not run or wait to run, the edges
	// it takes (indexes into edges, in the order added). Such a node will
	// run: now, or once it is no longer blocked.
	taken [][]int
	done  []bool // looked at by this step
	known []bool // canRun's answer is in can
	can   []bool
}

// scan reads the run into p.s and finds the edges taken.
func (p *policy) scan(v *actors.RunView) *step {
	s, n := &p.s, len(p.t.nodes)
	if len(s.status) != n {
		*s = step{status: make([]braidv1.NodeStatus, n), started: make([]uint64, n), ended: make([]uint64, n),
			waiting: make([]bool, n), taken: make([][]int, n), done: make([]bool, n), known: make([]bool, n), can: make([]bool, n)}
	}
	for i := range p.t.nodes { // the orchestrator's nodes are the topology's, in order
		ns := v.NodeAt(i)
		s.status[i], s.started[i], s.ended[i], s.waiting[i] = ns.Status, ns.Started, ns.Ended, ns.Waiting
		s.taken[i], s.done[i], s.known[i] = s.taken[i][:0], false, false
	}
	for i := range p.t.nodes {
		if s.waiting[i] {
			continue
		}
		for _, ei := range p.t.in[i] {
			f := p.t.from[ei]
			if s.status[f] != braidv1.NodeStatus_NODE_STATUS_COMPLETED || s.ended[f] <= s.started[i] {
				continue
			}
			if c := p.t.edges[ei].Condition; c != nil {
				if s.st == nil {
					s.st = &State{v: v}
				}
				if !c(s.st) {
					continue
				}
			}
			s.taken[i] = append(s.taken[i], ei)
		}
	}
	return s
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
func (p *policy) canRun(n int) bool {
	s := &p.s
	if s.known[n] {
		return s.can[n]
	}
	r := s.waiting[n] || s.status[n] == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || len(s.taken[n]) > 0
	for _, ei := range p.t.in[n] {
		if r {
			break
		}
		r = !p.t.back[ei] && p.canRun(p.t.from[ei]) // the graph without back edges is acyclic: this ends
	}
	s.known[n], s.can[n] = true, r
	return r
}
