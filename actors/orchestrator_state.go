package actors

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// RunView is what a Policy sees of the run: read-only, on the
// orchestrator's actor, valid during the call it is given to.
type RunView struct{ x *orchActor }

// Task returns the run's task. The value is the run's own: a run loaded
// from the store (restored on activation, or reloaded after a failed
// save) has a new one, so a policy that keeps scratch state from step to
// step can tell, by it, a run it has not seen.
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

// LocalResult returns the in-process form of a node's last result that
// its runner gave (SetLocalResult), or nil: for a run of another process,
// or one restored from the store.
func (v *RunView) LocalResult(node string) any {
	if n := v.x.nodes[node]; n != nil {
		return n.localRes
	}
	return nil
}

// Started and Ended return the sequence numbers of a node's last run
// start and end in this run (0: never; a fresh run starts with none).
// Sequence numbers grow with every start and end, so "ended after node's
// last start" is Ended(a) > Started(b). A run that stopped for interrupts
// and was resumed, or that a crash cut off and was carried on, is one
// run: its start is where it first started.
func (v *RunView) Started(node string) uint64 {
	if n := v.x.nodes[node]; n != nil {
		return n.started
	}
	return 0
}

// Ended returns the sequence number of a node's last run end in this run
// (0: never); see Started.
func (v *RunView) Ended(node string) uint64 {
	if n := v.x.nodes[node]; n != nil {
		return n.ended
	}
	return 0
}

// Waiting reports whether a node runs now or is held back to run.
func (v *RunView) Waiting(node string) bool {
	n := v.x.nodes[node]
	return n != nil && v.x.waiting(n)
}

func (x *orchActor) waiting(n *nodeRec) bool {
	if n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
		return true
	}
	for _, s := range x.held {
		if s.Node == n.id {
			return true
		}
	}
	return false
}

// NodeState is one node as a Policy sees it (NodeAt).
type NodeState struct {
	Status braidv1.NodeStatus
	// Started and Ended: see RunView.Started.
	Started, Ended uint64
	// Waiting: see RunView.Waiting.
	Waiting bool
}

// NodeAt returns the node Nodes()[i] in one read, for a policy that looks
// at every node at every step (a Graph's fan-in).
func (v *RunView) NodeAt(i int) NodeState {
	n := v.x.recs[i]
	return NodeState{Status: n.status, Started: n.started, Ended: n.ended, Waiting: v.x.waiting(n)}
}

// Executions returns how many node runs have executed in the run.
func (v *RunView) Executions() int { return len(v.x.executed) }

// The orchestrator's record (SPEC M10, S1). A save costs O(what changed):
// the record's data holds the run's small part (status, counters, the
// nodes held back, the policy's state) and its messages are an
// append-only log of entries: a fresh run's task, then one entry per
// changed node per save (its whole state, its interrupts included); on
// load the last entry of each node wins. A fresh run, or a log that grew
// past a few entries per node, is rewritten from scratch.
type orchData struct {
	Type       string                     `json:"type"`
	ID         string                     `json:"id"`
	Status     string                     `json:"status"`
	DurationNs int64                      `json:"durationNs"`
	Message    string                     `json:"message"`
	Usage      map[string]int64           `json:"usage"`
	Seq        uint64                     `json:"seq"`
	Held       []heldJSON                 `json:"held"`
	Extra      map[string]json.RawMessage `json:"extra,omitempty"`
	// Session and Owner name the record's key (absent in the records of
	// earlier builds): a record found under another key is damage (SPEC S5).
	Session string `json:"session,omitempty"`
	Owner   string `json:"owner,omitempty"`
	// Shape is OrchestratorConfig.Shape of the orchestrator that started
	// the run (absent in the records of earlier builds).
	Shape string `json:"shape,omitempty"`
	// UsageBase is the run's usage where its last invocation began
	// (absent in the records of earlier builds).
	UsageBase map[string]int64 `json:"usageBase,omitempty"`
	// Stopping: the run, executing, scheduled nothing new (an interrupt,
	// SPEC M4, or a limit had stopped it), so a carry-on after a crash
	// schedules nothing new either (absent: false, and in the records of
	// earlier builds).
	Stopping bool `json:"stopping,omitempty"`
}

// logEntry is one entry of the record's log: a task or a node.
type logEntry struct {
	Task []json.RawMessage `json:"task,omitempty"`
	Node *nodeEntry        `json:"node,omitempty"`
}

type nodeEntry struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Result   json.RawMessage `json:"result,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	Inner    bool            `json:"executorInterrupted"`
	Run      uint64          `json:"run"`
	Started  uint64          `json:"started"`
	Ended    uint64          `json:"ended"`
	First    uint64          `json:"first"`
	Executed []uint64        `json:"executed"`
	Count    int64           `json:"executionCount"`
	Dur      int64           `json:"durationNs"`
	Msgs     int64           `json:"messages"`
	Base     int64           `json:"base"`
	Resume   bool            `json:"resume"`
	Reset    bool            `json:"reset,omitempty"`
	// Since is nodeRec.since (absent in the records of earlier builds).
	Since *int64 `json:"since,omitempty"`
	// Unfinished is nodeRec.unfinished (absent: false, and in the records
	// of earlier builds).
	Unfinished bool         `json:"unfinished,omitempty"`
	Gate       []routedJSON `json:"gate"`
	Interrupts []routedJSON `json:"interrupts"`
}

type routedJSON struct {
	Interrupt interrupt.Interrupt `json:"interrupt"`
	Gate      bool                `json:"gate"`
	Seq       uint64              `json:"seq"`
}

type heldJSON struct {
	Node  string          `json:"node"`
	Input json.RawMessage `json:"input"`
	Reset bool            `json:"reset"`
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

// touch marks a node changed since the last save.
func (x *orchActor) touch(n *nodeRec) {
	if n != nil && !n.dirty {
		n.dirty = true
		x.dirty = append(x.dirty, n)
	}
}

// save saves the run at point, if the orchestrator has a session (the
// data, and a log entry per node changed since the last save, with the
// nodes' deferred saves in one transaction, SPEC M10), then calls then
// with the outcome. The run is encoded on the actor's goroutine; the
// store's work runs on a goroutine of the System's, which reports back
// with a saveDone (SPEC R3: Status and Cancel are answered while a save
// waits for the disk, the database or another process's lock). Until
// then the actor saves nothing else and holds back the messages that
// change the run (saving). then runs on the actor's goroutine.
func (x *orchActor) save(c actor.Context, point persistence.SavePoint, then func(error)) {
	if x.owner == nil {
		x.clean()
		then(nil)
		return
	}
	st, err := x.stage()
	if err != nil {
		then(err)
		return
	}
	// The nodes' executors' deferred saves are taken here, on the
	// actor's goroutine, and not when their runs ended: what a dropped
	// report or a reload leaves untaken stays with its executor, whose
	// next save carries it.
	staged := make([]*persistence.Staged, 0, len(x.joint)+1)
	for _, d := range x.joint {
		if s := d.TakeDeferred(); s != nil {
			staged = append(staged, s)
		}
	}
	staged = append(staged, st)
	clear(x.joint)
	x.joint = x.joint[:0]
	x.saving = true
	sess := x.cfg.Session
	self, root := c.Self(), x.sys.Root()
	ctx, cancel := context.WithTimeout(context.Background(), x.cfg.LoadTimeout)
	ended := make(chan struct{})
	x.commitStop, x.commitEnded = cancel, ended
	x.sys.Go(func() {
		// The commit counts as ended before its report is sent: the send
		// may run the actor's mailbox on this goroutine (the inline
		// dispatcher), and a stop handled there first waits for the end
		// (stopSave), which would else never come.
		err := func() error {
			defer close(ended)
			defer cancel()
			return sess.Commit(ctx, point, staged...)
		}()
		root.Send(self, &saveDone{err: err, then: then})
	})
}

// stopSave ends the save in flight, if any, as the actor stops (Close,
// System close, a fault): its commit is cancelled (all or nothing, SPEC
// S4: the store keeps the run as it was, or as the save wrote it, as
// after a crash) and waited for, so that nothing of this actor is written
// once it has stopped: the identity it releases may be activated again at
// once, and that activation must load the run as it stays (SPEC R4).
func (x *orchActor) stopSave() {
	if !x.saving {
		return
	}
	x.commitStop()
	<-x.commitEnded
	x.saving = false
	x.commitStop, x.commitEnded = nil, nil
}

// saveDone: the store's work of a save ended.
type saveDone struct {
	err  error
	then func(error)
}

// saved ends a save: the nodes it wrote are clean, then runs, and the
// messages held back meanwhile are handled in the order they came, until
// one starts another save.
func (x *orchActor) saved(c actor.Context, m *saveDone) {
	x.saving = false
	x.commitStop, x.commitEnded = nil, nil
	if m.err == nil {
		x.clean()
		x.savedReports()
	}
	m.then(m.err)
	for !x.saving && len(x.deferred) > 0 {
		d := x.deferred[0]
		x.deferred[0] = nil
		x.deferred = x.deferred[1:]
		x.runMessage(c, d)
	}
}

// stage encodes the run's change since the last save.
func (x *orchActor) stage() (*persistence.Staged, error) {
	key := x.owner.Key()
	d := &orchData{Type: x.cfg.Kind, ID: x.cfg.ID, Session: key.SessionID, Owner: key.ID, Shape: x.shape, Status: x.status.String(), DurationNs: int64(x.duration), Message: x.message,
		Seq: x.seq, Held: []heldJSON{}, Usage: usageJSON(x.usage),
		// An interrupt or a limit stopped it (not a Cancel, which a
		// carry-on does not know of, nor a failed save: it ends the
		// invocation, and the next starts from the stored run).
		Stopping: x.stopping && !x.canceled && x.saveErr == nil && x.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING}
	if x.usageBase != nil {
		d.UsageBase = usageJSON(x.usageBase)
	}
	for _, h := range x.held {
		in, err := marshalProto(h.Input)
		if err != nil {
			return nil, err
		}
		d.Held = append(d.Held, heldJSON{Node: h.Node, Input: in, Reset: h.Reset})
	}
	if sp, ok := x.cfg.Policy.(StatefulPolicy); ok {
		raw, err := sp.MarshalPolicy()
		if err != nil {
			return nil, fmt.Errorf("%s %q: encode the policy's state: %w", x.cfg.Kind, x.cfg.ID, err)
		}
		d.Extra = map[string]json.RawMessage{"policy": raw}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("%s %q: encode the run: %w", x.cfg.Kind, x.cfg.ID, err)
	}
	keep := x.owner.Messages()
	changed := x.dirty
	if x.rewrite || keep > 4*len(x.nodes)+16 {
		keep, changed = 0, nil
		for _, id := range x.order {
			// A node that did not run in this run is kept for its
			// executor's progress (the base of its next run, after a
			// passivation too).
			if n := x.nodes[id]; n.status != braidv1.NodeStatus_NODE_STATUS_PENDING || n.dirty || n.msgs != 0 {
				changed = append(changed, n)
			}
		}
	}
	var log []json.RawMessage
	if keep == 0 {
		b, err := json.Marshal(logEntry{Task: rawMessages(x.task.GetMessages())})
		if err != nil {
			return nil, err
		}
		log = append(log, b)
	}
	for _, n := range changed {
		e, err := x.nodeEntry(n)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(logEntry{Node: e})
		if err != nil {
			return nil, err
		}
		log = append(log, b)
	}
	return x.owner.Stage(data, keep, log)
}

func (x *orchActor) clean() {
	for _, n := range x.dirty {
		n.dirty = false
	}
	x.dirty = x.dirty[:0]
	x.rewrite = false
}

func (x *orchActor) nodeEntry(n *nodeRec) (*nodeEntry, error) {
	e := &nodeEntry{ID: n.id, Status: n.status.String(), Inner: n.inner, Run: n.run, Started: n.started, Ended: n.ended,
		First: n.first, Executed: n.executed, Count: n.count, Dur: n.dur, Msgs: n.msgs, Base: n.base, Since: n.since, Unfinished: n.unfinished, Resume: n.resume, Reset: n.reset,
		Gate: []routedJSON{}, Interrupts: []routedJSON{}}
	if e.Executed == nil {
		e.Executed = []uint64{}
	}
	var err error
	if e.Result, err = marshalProto(n.result); err != nil {
		return nil, err
	}
	if e.Input, err = marshalProto(n.input); err != nil {
		return nil, err
	}
	for _, g := range n.gate {
		in, err := InterruptFromWire(g)
		if err != nil {
			return nil, err
		}
		e.Gate = append(e.Gate, routedJSON{Interrupt: in})
	}
	for _, r := range x.byNode[n.id] {
		if r.node == n.id && x.table[r.in.ID] == r {
			e.Interrupts = append(e.Interrupts, routedJSON{Interrupt: r.in, Gate: r.gate, Seq: r.seq})
		}
	}
	return e, nil
}

// reload replaces the run the actor holds by the stored one, keeping the
// nodes' actors: after a failed save, memory may be ahead of the store,
// or behind another writer that won a race (SPEC S4). A stored run that
// another writer saved since this actor's last save is that writer's:
// the answers this actor gave (its claim may not have been saved) are
// forgotten, so that it does not claim that writer's run again.
func (x *orchActor) reload() error {
	owner, rec, err := x.loadRun()
	if err != nil {
		return err
	}
	if x.owner == nil {
		clear(x.answered)
	} else {
		x.lostTo(x.owner.Behind(owner))
	}
	return x.adopt(owner, rec)
}

// loadRun loads the stored run: a writer of its own, and the record (nil:
// none).
func (x *orchActor) loadRun() (*persistence.Owner, *persistence.Record, error) {
	ctx, cancel := context.WithTimeout(x.life, x.cfg.LoadTimeout)
	defer cancel()
	owner, rec, err := x.cfg.Session.Open(ctx, persistence.KindMultiAgent, RecordID(x.cfg.OwnerPath, x.cfg.ID))
	if err != nil {
		return nil, nil, fmt.Errorf("reload %s %q: %w", x.cfg.Kind, x.cfg.ID, err)
	}
	return owner, rec, nil
}

// behind is refusal, the refusal of an input for the run's interrupt
// state (refusedByInterrupts), unless that state is stale: then another
// writer saved the run since this actor read or saved it (SPEC S4), the
// actor takes the stored run (adopt), and the call fails with the
// *persistence.ConflictError a save would have failed with, so that the
// next call is judged on the stored run. No save told the actor: the
// refused input changed nothing, so it saved nothing. Only this error
// path pays the load; a load that fails leaves the refusal as it is.
func (x *orchActor) behind(refusal error) error {
	if x.cfg.Session == nil || x.owner == nil || x.saving || !refusedByInterrupts(refusal) {
		return refusal
	}
	owner, rec, err := x.loadRun()
	if err != nil {
		return refusal
	}
	cerr := x.owner.Behind(owner)
	if cerr == nil {
		return refusal
	}
	x.lostTo(cerr)
	if err := x.adopt(owner, rec); err != nil {
		x.stale = true // the next call loads it again, and is told why
	}
	return fmt.Errorf("%s %q: %w; it refused the call on that stale state (%v) and holds the stored run now",
		x.cfg.Kind, x.cfg.ID, cerr, refusal)
}

// staleStartError is an invocation's error when its first save was lost
// to another writer (a *persistence.ConflictError naming the
// orchestrator's record, SPEC S4) before any node ran: the orchestrator's
// run was stale, nothing but its hooks ran, and it takes the stored run
// before the next invocation. A parent's NestedRunner, whose own run
// claimed the node with a save, runs the nested orchestrator once more
// (see NestedRunner.runNode); every other caller sees the conflict.
type staleStartError struct{ err error }

func (e *staleStartError) Error() string { return e.err.Error() }
func (e *staleStartError) Unwrap() error { return e.err }

// conflictsOn reports whether err is a *persistence.ConflictError naming
// key.
func conflictsOn(err error, key persistence.Key) bool {
	var ce *persistence.ConflictError
	return errors.As(err, &ce) && ce.Key == key
}

// refusedByInterrupts reports whether err refuses an input for the
// owner's interrupt state (SPEC I7, M5) in a way a stale state could
// cause: responses while it waits for none, an id it does not have, or
// a prompt while it waits.
func refusedByInterrupts(err error) bool {
	return errors.Is(err, interrupt.ErrNotInterrupted) || errors.Is(err, interrupt.ErrUnknownID) ||
		errors.Is(err, interrupt.ErrResumeRequired)
}

// adopt replaces the run the actor holds by rec, the stored one (nil:
// none) that owner, the writer from then on, was opened on.
func (x *orchActor) adopt(owner *persistence.Owner, rec *persistence.Record) error {
	var err error
	old := x.nodes
	x.nodes = make(map[string]*nodeRec, len(old))
	x.status, x.task, x.seq, x.duration, x.message, x.usage, x.usageBase, x.cutStop = 0, nil, 0, 0, "", &braidv1.Usage{}, nil, false
	x.table, x.byNode, x.raised, x.dropped = map[string]*routed{}, map[string][]*routed{}, nil, 0
	x.held, x.results, x.executed, x.open, x.dirty, x.rewrite = nil, nil, nil, 0, x.dirty[:0], false
	x.forgetUnsaved()
	clear(x.joint)
	x.joint = x.joint[:0]
	x.owner = owner
	x.shape = x.cfgShape
	if rec != nil {
		err = x.restore(owner.Key(), rec.Data, rec.Messages)
	} else if sp, ok := x.cfg.Policy.(StatefulPolicy); ok {
		sp.ResetPolicy()
	}
	for i, id := range x.order {
		o, n := old[id], x.nodes[id]
		if n == nil {
			n = &nodeRec{id: id, status: braidv1.NodeStatus_NODE_STATUS_PENDING, msgs: o.msgs}
			x.nodes[id] = n
		}
		n.runner, n.path, n.pid = o.runner, o.path, o.pid
		n.run = max(n.run, o.run) // a late report of a run sent before is not taken for a new one
		x.recs[i] = n
	}
	if err != nil {
		return err
	}
	x.stale = false
	return nil
}

// restore loads a stored run (SPEC M10, S5): a record that does not
// decode strictly is a *persistence.DamageError, and so is one of another
// kind of orchestrator or id (matching ErrTopology too), or one saved under
// another key; one that waits for a resume (or was cut off) naming
// nodes this one lacks is ErrTopology (an ended one leaves them out).
func (x *orchActor) restore(key persistence.Key, data []byte, log []json.RawMessage) error {
	var d orchData
	if err := persistence.DecodeExact(data, &d); err != nil {
		return persistence.Damaged(key, "data", "%v", err)
	}
	if d.Type != x.cfg.Kind || d.ID != x.cfg.ID {
		// A record of another owner (SPEC S5), which is also another
		// topology: a graph and a swarm of one id in one session share a
		// record key.
		return &persistence.DamageError{Key: key, Part: "data", Err: fmt.Errorf("%w: %w: it holds a %s %q, not the %s %q",
			persistence.ErrDamaged, ErrTopology, d.Type, d.ID, x.cfg.Kind, x.cfg.ID)}
	}
	if err := key.CheckOwner(d.Session, d.Owner); err != nil {
		return persistence.Damaged(key, "data", "%v", err)
	}
	x.shape = storedShape(d.Shape) // a record of an earlier build may keep a long one whole
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
	if x.status, err = status(d.Status); err != nil {
		return err
	}
	x.task = &braidv1.AgentInput{}
	last := map[string]*nodeEntry{}
	for i, raw := range log {
		var e logEntry
		if err := persistence.DecodeExact(raw, &e); err != nil {
			return persistence.Damaged(key, fmt.Sprintf("log entry %d", i), "%v", err)
		}
		switch {
		case e.Node != nil:
			last[e.Node.ID] = e.Node
		case i == 0:
			for _, m := range e.Task {
				x.task.Messages = append(x.task.Messages, m)
			}
		default:
			return persistence.Damaged(key, fmt.Sprintf("log entry %d", i), "a task after the first entry")
		}
	}
	type ended struct {
		seq  uint64
		node string
	}
	var firsts, runs []ended
	// A run that ended waits for nothing: an orchestrator of another
	// shape may start a new one (OrchestratorConfig.Shape), so the nodes
	// it lacks are left out (the next save drops them) and so is the
	// policy's state, which may name them.
	pending := x.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || x.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING
	lacks := false
	for _, id := range slices.Sorted(maps.Keys(last)) {
		j := last[id]
		if !known[id] {
			if !pending {
				lacks = true
				continue
			}
			if x.shape != "" && (x.shape == x.cfgShape || x.shape == x.legacy) {
				// The run's own shape is this orchestrator's, which has
				// no such node: the record contradicts itself (SPEC S5).
				return persistence.Damaged(key, "node "+id, "a node the run's shape does not have")
			}
			return fmt.Errorf("%w: %s %q: the stored run has node %q, which this %s does not", ErrTopology, x.cfg.Kind, x.cfg.ID, id, x.cfg.Kind)
		}
		n := &nodeRec{id: id, inner: j.Inner, run: j.Run, started: j.Started, ended: j.Ended, first: j.First, executed: j.Executed,
			count: j.Count, dur: j.Dur, msgs: j.Msgs, base: j.Base, since: j.Since, unfinished: j.Unfinished, resume: j.Resume, reset: j.Reset}
		if n.status, err = status(j.Status); err != nil {
			return err
		}
		if len(j.Result) > 0 {
			n.result = &braidv1.NodeResult{}
			if err := cmp.Or(protojson.Unmarshal(j.Result, n.result), checkWireJSON(n.result.ProtoReflect())); err != nil {
				return persistence.Damaged(key, "node "+id, "result: %v", err)
			}
			n.usage = cloneUsage(n.result.GetUsage()) // summed over the node's runs when saved
			firsts = append(firsts, ended{j.First, id})
		}
		if len(j.Input) > 0 {
			n.input = &braidv1.AgentInput{}
			if err := cmp.Or(protojson.Unmarshal(j.Input, n.input), checkWireJSON(n.input.ProtoReflect())); err != nil {
				return persistence.Damaged(key, "node "+id, "input: %v", err)
			}
		}
		for _, g := range j.Gate {
			n.gate = append(n.gate, InterruptToWire(g.Interrupt))
		}
		for _, r := range j.Interrupts {
			e := &routed{in: r.Interrupt, node: id, gate: r.Gate, seq: r.Seq}
			x.table[e.in.ID] = e
			x.raised = append(x.raised, e)
			x.byNode[id] = append(x.byNode[id], e)
		}
		for _, seq := range j.Executed {
			runs = append(runs, ended{seq, id})
		}
		if opens(n.status) {
			x.open++
		}
		x.nodes[id] = n
	}
	slices.SortFunc(x.raised, func(a, b *routed) int { return cmp.Compare(a.seq, b.seq) })
	byEnd := func(a, b ended) int { return cmp.Compare(a.seq, b.seq) }
	slices.SortFunc(firsts, byEnd)
	slices.SortFunc(runs, byEnd)
	for _, f := range firsts {
		x.results = append(x.results, f.node)
	}
	for _, r := range runs {
		x.executed = append(x.executed, r.node)
	}
	for _, h := range d.Held {
		if !pending && !known[h.Node] {
			continue
		}
		in := &braidv1.AgentInput{}
		if err := cmp.Or(protojson.Unmarshal(h.Input, in), checkWireJSON(in.ProtoReflect())); err != nil {
			return persistence.Damaged(key, "held node "+h.Node, "input: %v", err)
		}
		x.held = append(x.held, NodeStart{Node: h.Node, Input: in, Reset: h.Reset})
	}
	if sp, ok := x.cfg.Policy.(StatefulPolicy); ok && lacks {
		sp.ResetPolicy()
	} else if ok && d.Extra["policy"] != nil {
		if err := sp.UnmarshalPolicy(d.Extra["policy"]); err != nil {
			return persistence.Damaged(key, "policy", "%v", err)
		}
	}
	x.duration, x.message, x.seq, x.cutStop = time.Duration(d.DurationNs), d.Message, d.Seq, d.Stopping
	x.usage = usageFromJSON(d.Usage)
	x.usageBase = nil
	if d.UsageBase != nil {
		x.usageBase = usageFromJSON(d.UsageBase)
	}
	return nil
}

func cloneResult(r *braidv1.NodeResult) *braidv1.NodeResult {
	if r == nil {
		return nil
	}
	return proto.Clone(r).(*braidv1.NodeResult)
}

// usageJSON is u as a record keeps it.
func usageJSON(u *braidv1.Usage) map[string]int64 {
	return map[string]int64{"inputTokens": u.GetInputTokens(), "outputTokens": u.GetOutputTokens(), "totalTokens": u.GetTotalTokens()}
}

func usageFromJSON(m map[string]int64) *braidv1.Usage {
	return &braidv1.Usage{InputTokens: m["inputTokens"], OutputTokens: m["outputTokens"], TotalTokens: m["totalTokens"]}
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

// RunRecord is a stored orchestrator run as people read it (`braid
// session show`): its status and, per node, the last state saved.
type RunRecord struct {
	Type, ID, Status string
	Message          string
	Nodes            []RunNode
}

// RunNode is one node of a RunRecord.
type RunNode struct {
	ID, Status     string
	ExecutionCount int64
	// Waiting are the node's unanswered interrupts (its gate's and its
	// executor's).
	Waiting []interrupt.Interrupt
}

// ReadRun reads an orchestrator's stored record (data and log), as saved
// by this build, as strictly as the orchestrator reads it when it restores
// the run (SPEC S5: an unknown or repeated key, a wrong type or an unknown
// status is an error); nodes come in id order.
func ReadRun(data []byte, log []json.RawMessage) (*RunRecord, error) {
	var d orchData
	if err := persistence.DecodeExact(data, &d); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	known := func(s string) bool { _, ok := braidv1.NodeStatus_value[s]; return ok }
	if !known(d.Status) {
		return nil, fmt.Errorf("run record: unknown status %q", d.Status)
	}
	last := map[string]*nodeEntry{}
	for i, raw := range log {
		var e logEntry
		if err := persistence.DecodeExact(raw, &e); err != nil {
			return nil, fmt.Errorf("run record: log entry %d: %w", i, err)
		}
		if e.Node != nil {
			if !known(e.Node.Status) {
				return nil, fmt.Errorf("run record: log entry %d: unknown status %q", i, e.Node.Status)
			}
			last[e.Node.ID] = e.Node
		}
	}
	r := &RunRecord{Type: d.Type, ID: d.ID, Status: strings.TrimPrefix(d.Status, "NODE_STATUS_"), Message: d.Message}
	for _, id := range slices.Sorted(maps.Keys(last)) {
		e := last[id]
		n := RunNode{ID: id, Status: strings.TrimPrefix(e.Status, "NODE_STATUS_"), ExecutionCount: e.Count}
		for _, in := range e.Interrupts {
			if !in.Interrupt.Answered {
				n.Waiting = append(n.Waiting, in.Interrupt)
			}
		}
		r.Nodes = append(r.Nodes, n)
	}
	return r, nil
}
