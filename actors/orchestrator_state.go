package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// RunView is what a Policy sees of the run: read-only, on the
// orchestrator's actor, valid during the call it is given to.
type RunView struct{ x *orchActor }

// Task returns the run's task.
func (v *RunView) Task() *braidv1.AgentInput { return v.x.task }

// Nodes returns the node ids in configuration order.
func (v *RunView) Nodes() []string { return v.x.order }

// Status returns a node's status (PENDING before its first run).
func (v *RunView) Status(node string) braidv1.NodeStatus {
	if n := v.x.nodes[node]; n != nil {
		return n.status
	}
	return braidv1.NodeStatus_NODE_STATUS_UNSPECIFIED
}

// Result returns the result of a node's last finished run (nil before).
// It is the actor's: read it, never keep or change it.
func (v *RunView) Result(node string) *braidv1.NodeResult {
	if n := v.x.nodes[node]; n != nil {
		return n.result
	}
	return nil
}

// Started and Ended return the sequence numbers of a node's last run
// start and end (0: never). Sequence numbers grow with every start and
// end of the run, so "ended after node's last start" is Ended(a) >
// Started(b).
func (v *RunView) Started(node string) uint64 {
	if n := v.x.nodes[node]; n != nil {
		return n.started
	}
	return 0
}

// Ended: see Started.
func (v *RunView) Ended(node string) uint64 {
	if n := v.x.nodes[node]; n != nil {
		return n.ended
	}
	return 0
}

// Waiting reports whether a node runs now or is held back to run.
func (v *RunView) Waiting(node string) bool {
	n := v.x.nodes[node]
	if n == nil {
		return false
	}
	if n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
		return true
	}
	for _, s := range v.x.held {
		if s.Node == node {
			return true
		}
	}
	return false
}

// Executions returns how many node runs have executed in the run.
func (v *RunView) Executions() int { return len(v.x.executed) }

// The orchestrator's record (SPEC M10): JSON, strict on load.
type orchRecord struct {
	Type       string                     `json:"type"`
	ID         string                     `json:"id"`
	Status     string                     `json:"status"`
	Task       []json.RawMessage          `json:"task"`
	Nodes      map[string]*nodeRecJSON    `json:"nodes"`
	Interrupts []routedJSON               `json:"interrupts"`
	Held       []heldJSON                 `json:"held"`
	Results    []string                   `json:"results"`
	Executed   []string                   `json:"executionOrder"`
	DurationNs int64                      `json:"durationNs"`
	Message    string                     `json:"message"`
	Usage      map[string]int64           `json:"usage"`
	Seq        uint64                     `json:"seq"`
	Extra      map[string]json.RawMessage `json:"extra,omitempty"`
}

type nodeRecJSON struct {
	Status  string                `json:"status"`
	Result  json.RawMessage       `json:"result,omitempty"`
	Input   json.RawMessage       `json:"input,omitempty"`
	Inner   bool                  `json:"executorInterrupted"`
	Run     uint64                `json:"run"`
	Started uint64                `json:"started"`
	Ended   uint64                `json:"ended"`
	Count   int64                 `json:"executionCount"`
	Dur     int64                 `json:"durationNs"`
	Msgs    int64                 `json:"messages"`
	Base    int64                 `json:"base"`
	Gate    []interrupt.Interrupt `json:"gate"`
	Resume  bool                  `json:"resume"`
}

type routedJSON struct {
	Interrupt interrupt.Interrupt `json:"interrupt"`
	Node      string              `json:"node"`
	Gate      bool                `json:"gate"`
}

type heldJSON struct {
	Node  string          `json:"node"`
	Input json.RawMessage `json:"input"`
}

var protoJSON = protojson.MarshalOptions{UseProtoNames: true}

func marshalProto(m proto.Message) (json.RawMessage, error) {
	if m == nil || !m.ProtoReflect().IsValid() { // nil, or a typed nil
		return nil, nil
	}
	b, err := protoJSON.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// save saves the run at point, if the orchestrator has a session.
func (x *orchActor) save(point persistence.SavePoint) error {
	if x.owner == nil {
		return nil
	}
	rec := &orchRecord{Type: x.cfg.Kind, ID: x.cfg.ID, Status: x.status.String(), Task: rawMessages(x.task.GetMessages()),
		Nodes: make(map[string]*nodeRecJSON, len(x.nodes)), Results: x.results, Executed: x.executed,
		DurationNs: int64(x.duration), Message: x.message, Seq: x.seq, Interrupts: []routedJSON{}, Held: []heldJSON{},
		Usage: map[string]int64{"inputTokens": x.usage.GetInputTokens(), "outputTokens": x.usage.GetOutputTokens(), "totalTokens": x.usage.GetTotalTokens()}}
	if rec.Task == nil {
		rec.Task = []json.RawMessage{}
	}
	if rec.Results == nil {
		rec.Results = []string{}
	}
	if rec.Executed == nil {
		rec.Executed = []string{}
	}
	var err error
	for id, n := range x.nodes {
		j := &nodeRecJSON{Status: n.status.String(), Inner: n.inner, Run: n.run, Started: n.started, Ended: n.ended,
			Count: n.count, Dur: n.dur, Msgs: n.msgs, Base: n.base, Resume: n.resume, Gate: []interrupt.Interrupt{}}
		if j.Result, err = marshalProto(n.result); err != nil {
			return err
		}
		if j.Input, err = marshalProto(n.input); err != nil {
			return err
		}
		for _, g := range n.gate {
			in, err := InterruptFromWire(g)
			if err != nil {
				return err
			}
			j.Gate = append(j.Gate, in)
		}
		rec.Nodes[id] = j
	}
	for _, e := range x.raised {
		if x.table[e.in.ID] == e {
			rec.Interrupts = append(rec.Interrupts, routedJSON{Interrupt: e.in, Node: e.node, Gate: e.gate})
		}
	}
	for _, h := range x.held {
		in, err := marshalProto(h.Input)
		if err != nil {
			return err
		}
		rec.Held = append(rec.Held, heldJSON{Node: h.Node, Input: in})
	}
	if sp, ok := x.cfg.Policy.(StatefulPolicy); ok {
		raw, err := sp.MarshalPolicy()
		if err != nil {
			return fmt.Errorf("%s %q: encode the policy's state: %w", x.cfg.Kind, x.cfg.ID, err)
		}
		rec.Extra = map[string]json.RawMessage{"policy": raw}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("%s %q: encode the run: %w", x.cfg.Kind, x.cfg.ID, err)
	}
	st, err := x.owner.Stage(data, 0, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.cfg.LoadTimeout)
	defer cancel()
	return x.cfg.Session.Commit(ctx, point, st)
}

// restore loads a stored run (SPEC M10, S5): a record that does not
// decode strictly is a *persistence.DamageError; one of another kind of
// orchestrator, or naming nodes this one lacks, is ErrTopology.
func (x *orchActor) restore(key persistence.Key, data []byte) error {
	var rec orchRecord
	if err := persistence.DecodeExact(data, &rec); err != nil {
		return persistence.Damaged(key, "data", "%v", err)
	}
	if rec.Type != x.cfg.Kind || rec.ID != x.cfg.ID {
		return fmt.Errorf("%w: %s holds a %s %q, not the %s %q", ErrTopology, key, rec.Type, rec.ID, x.cfg.Kind, x.cfg.ID)
	}
	known := make(map[string]bool, len(x.cfg.Nodes))
	for _, n := range x.cfg.Nodes {
		known[n.ID] = true
	}
	status := func(s string) (braidv1.NodeStatus, error) {
		v, ok := braidv1.NodeStatus_value[s]
		if !ok {
			return 0, persistence.Damaged(key, "data", "unknown status %q", s)
		}
		return braidv1.NodeStatus(v), nil
	}
	var err error
	if x.status, err = status(rec.Status); err != nil {
		return err
	}
	x.task = &braidv1.AgentInput{}
	for _, m := range rec.Task {
		x.task.Messages = append(x.task.Messages, m)
	}
	for _, id := range slices.Sorted(maps.Keys(rec.Nodes)) {
		j := rec.Nodes[id]
		if !known[id] {
			return fmt.Errorf("%w: %s %q: the stored run has node %q, which this %s does not", ErrTopology, x.cfg.Kind, x.cfg.ID, id, x.cfg.Kind)
		}
		n := &nodeRec{id: id, inner: j.Inner, run: j.Run, started: j.Started, ended: j.Ended, count: j.Count, dur: j.Dur,
			msgs: j.Msgs, base: j.Base, resume: j.Resume}
		if n.status, err = status(j.Status); err != nil {
			return err
		}
		if len(j.Result) > 0 {
			n.result = &braidv1.NodeResult{}
			if err := protojson.Unmarshal(j.Result, n.result); err != nil {
				return persistence.Damaged(key, "node "+id, "result: %v", err)
			}
		}
		if len(j.Input) > 0 {
			n.input = &braidv1.AgentInput{}
			if err := protojson.Unmarshal(j.Input, n.input); err != nil {
				return persistence.Damaged(key, "node "+id, "input: %v", err)
			}
		}
		for _, g := range j.Gate {
			n.gate = append(n.gate, InterruptToWire(g))
		}
		x.nodes[id] = n
	}
	for _, r := range rec.Interrupts {
		if !known[r.Node] {
			return fmt.Errorf("%w: %s %q: interrupt %s belongs to node %q, which this %s does not have", ErrTopology, x.cfg.Kind, x.cfg.ID, r.Interrupt.ID, r.Node, x.cfg.Kind)
		}
		e := &routed{in: r.Interrupt, node: r.Node, gate: r.Gate}
		x.table[e.in.ID] = e
		x.raised = append(x.raised, e)
		x.byNode[e.node] = append(x.byNode[e.node], e)
	}
	for _, h := range rec.Held {
		in := &braidv1.AgentInput{}
		if err := protojson.Unmarshal(h.Input, in); err != nil {
			return persistence.Damaged(key, "held node "+h.Node, "input: %v", err)
		}
		x.held = append(x.held, NodeStart{Node: h.Node, Input: in})
	}
	if sp, ok := x.cfg.Policy.(StatefulPolicy); ok && rec.Extra["policy"] != nil {
		if err := sp.UnmarshalPolicy(rec.Extra["policy"]); err != nil {
			return persistence.Damaged(key, "policy", "%v", err)
		}
	}
	x.results, x.executed, x.duration, x.message, x.seq = rec.Results, rec.Executed, time.Duration(rec.DurationNs), rec.Message, rec.Seq
	x.usage = &braidv1.Usage{InputTokens: rec.Usage["inputTokens"], OutputTokens: rec.Usage["outputTokens"], TotalTokens: rec.Usage["totalTokens"]}
	return nil
}

func cloneResult(r *braidv1.NodeResult) *braidv1.NodeResult {
	if r == nil {
		return nil
	}
	return proto.Clone(r).(*braidv1.NodeResult)
}

func cloneUsage(u *braidv1.Usage) *braidv1.Usage {
	if u == nil {
		return &braidv1.Usage{}
	}
	return &braidv1.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), TotalTokens: u.GetTotalTokens()}
}

// messageContentKinds names the content kinds of one JSON message.
func messageContentKinds(raw []byte) []string {
	var m struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return []string{"invalid"}
	}
	var kinds []string
	for _, b := range m.Content {
		for k := range b {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func rawMessages(ms [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
