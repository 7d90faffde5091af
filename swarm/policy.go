package swarm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// limits are the swarm's own limits (the timeouts are the core's).
type limits struct {
	maxHandoffs, maxIterations int
	window, minUnique          int
}

// policy is the swarm's scheduling (SPEC M9): the entry node first, then
// the node each completed run handed off to, until a run hands off to
// no one or a limit stops the run. Its methods run on the orchestrator's
// actor, one at a time (actors.Policy); its state is saved with the run.
type policy struct {
	team *team
	lim  limits
	st   policyState

	// the run's task, decoded once per task
	task       *braidv1.AgentInput
	taskText   string
	taskBlocks []model.ContentBlock
}

// policyStateVersion is the version of the policy's saved state.
const policyStateVersion = 1

// policyState is what the swarm keeps of a run besides the core's record.
type policyState struct {
	Version int `json:"version"`
	// History lists the nodes whose runs completed, in order.
	History []string `json:"history"`
	// Shared is the shared context, per node in the order nodes first
	// shared something.
	Shared []sharedEntry `json:"shared"`
	// Handoffs counts the handoffs made; Iterations the node runs started.
	Handoffs   int `json:"handoffs"`
	Iterations int `json:"iterations"`
}

// sharedEntry is what one node shared: JSON values by key.
type sharedEntry struct {
	Node   string                     `json:"node"`
	Values map[string]json.RawMessage `json:"values"`
}

func newPolicyState() policyState {
	return policyState{Version: policyStateVersion, History: []string{}, Shared: []sharedEntry{}}
}

func newPolicy(t *team, lim limits) *policy { return &policy{team: t, lim: lim, st: newPolicyState()} }

// Begin implements actors.Policy: the entry node runs first.
func (p *policy) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	p.st.Iterations = 1
	return []actors.NodeStart{p.start(v, p.team.entry, nil)}, nil
}

// Next implements actors.Policy: after a completed run, the node it
// handed off to, unless a limit stops the run first. A run that failed
// or was cancelled ends the swarm's run (its status says so).
func (p *policy) Next(v *actors.RunView, node string) ([]actors.NodeStart, string) {
	if v.Status(node) != braidv1.NodeStatus_NODE_STATUS_COMPLETED {
		// A node timeout is a limit of the swarm's (SPEC M9): the run's
		// message says so, as the node's error does.
		if e := v.Result(node).GetError(); e != nil && errors.Is(actors.DefaultCodec().Decode(e), actors.ErrNodeTimeout) {
			return nil, strings.TrimPrefix(e.GetMessage(), actors.ErrNodeTimeout.Error()+": ")
		}
		return nil, ""
	}
	p.st.History = append(p.st.History, node)
	h := v.Result(node).GetHandoff()
	if h == nil {
		return nil, ""
	}
	if !p.team.has(h.GetTo()) {
		return nil, fmt.Sprintf("Handoff from '%s' to unknown agent '%s'", node, h.GetTo())
	}
	if err := p.share(node, h.GetContext()); err != nil {
		return nil, fmt.Sprintf("Handoff from '%s': %v", node, err)
	}
	if p.st.Handoffs >= p.lim.maxHandoffs {
		return nil, fmt.Sprintf("Max handoffs reached: %d", p.lim.maxHandoffs)
	}
	if p.st.Iterations >= p.lim.maxIterations {
		return nil, fmt.Sprintf("Max iterations reached: %d", p.lim.maxIterations)
	}
	if w := p.lim.window; w > 0 && len(p.st.History) >= w {
		recent := p.st.History[len(p.st.History)-w:]
		seen := make(map[string]bool, len(recent))
		for _, n := range recent {
			seen[n] = true
		}
		if len(seen) < p.lim.minUnique {
			return nil, fmt.Sprintf("Repetitive handoff: %d unique nodes out of %d recent iterations", len(seen), w)
		}
	}
	p.st.Handoffs++
	p.st.Iterations++
	return []actors.NodeStart{p.start(v, h.GetTo(), &handoffFrom{node: node, message: h.GetMessage()})}, ""
}

// start is a run of node, reached by from (nil for the entry node).
func (p *policy) start(v *actors.RunView, node string, from *handoffFrom) actors.NodeStart {
	return actors.NodeStart{Node: node, Input: p.input(v, node, from), Reset: p.team.reset && v.Ended(node) > 0}
}

// share merges a handoff's context (a JSON object, or empty) into what
// node shared.
func (p *policy) share(node string, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil || values == nil {
		return fmt.Errorf("its context is not a JSON object")
	}
	if len(values) == 0 {
		return nil
	}
	for i := range p.st.Shared {
		if e := &p.st.Shared[i]; e.Node == node {
			for k, val := range values {
				e.Values[k] = val
			}
			return nil
		}
	}
	p.st.Shared = append(p.st.Shared, sharedEntry{Node: node, Values: values})
	return nil
}

// MarshalPolicy implements actors.StatefulPolicy.
func (p *policy) MarshalPolicy() (json.RawMessage, error) { return json.Marshal(p.st) }

// UnmarshalPolicy implements actors.StatefulPolicy: the state must
// decode strictly and name only nodes the swarm has.
func (p *policy) UnmarshalPolicy(raw json.RawMessage) error {
	var st policyState
	if err := persistence.DecodeExact(raw, &st); err != nil {
		return fmt.Errorf("swarm state: %w", err)
	}
	if st.Version != policyStateVersion {
		return fmt.Errorf("swarm state: version %d, this build reads version %d", st.Version, policyStateVersion)
	}
	for _, n := range st.History {
		if !p.team.has(n) {
			return fmt.Errorf("swarm state: node history names node %q, which this swarm does not have", n)
		}
	}
	for _, e := range st.Shared {
		if !p.team.has(e.Node) {
			return fmt.Errorf("swarm state: shared context of node %q, which this swarm does not have", e.Node)
		}
		if e.Values == nil {
			return fmt.Errorf("swarm state: shared context of node %q is not an object", e.Node)
		}
	}
	if st.History == nil {
		st.History = []string{}
	}
	if st.Shared == nil {
		st.Shared = []sharedEntry{}
	}
	p.st = st
	return nil
}

// ResetPolicy implements actors.StatefulPolicy: a fresh run.
func (p *policy) ResetPolicy() { p.st = newPolicyState() }
