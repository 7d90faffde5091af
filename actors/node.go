package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// NodeEnv is what an orchestrator tells a node when it opens it.
type NodeEnv struct {
	// System is the orchestrator's actor system.
	System *System
	// Path is the node's owner path (SPEC I2): the ids of the interrupts
	// raised inside the node carry it, and so do the identities of the
	// owners it builds (its agent, a nested orchestrator).
	Path string
	// NodeID is the node's id within its orchestrator.
	NodeID string
	// Session is the orchestrator's session manager, nil without one: the
	// node's owners save into the same session.
	Session *persistence.SessionManager
	// IdleTimeout is the orchestrator's: the node's owners passivate with it.
	IdleTimeout time.Duration
}

// Node is what an orchestrator runs at one of its nodes (SPEC M1): an
// agent, a nested orchestrator or a Go function (package agentnode).
type Node interface {
	// OpenNode prepares the node for the orchestrator described by env. It
	// is called once per orchestrator activation.
	OpenNode(ctx context.Context, env NodeEnv) (NodeRunner, error)
}

// NodeKind names the kind of executor a node runs. It is part of the
// orchestrator's topology (SPEC M10): the run's record keeps each node's
// kind with the orchestrator's Shape, and a stored run that waits for a
// resume (or was cut off) is refused with ErrTopology by an orchestrator
// whose node of the same id runs an executor of another kind, since that
// executor holds none of the state the run waits on (an agent's pending
// tools, a nested orchestrator's run). A kind says what runs, not how it
// is configured: an agent with other tools, another model, prompt or
// hooks, a nested Graph or Swarm of another shape (which its own record
// checks), a Go function with other code, are nodes of the same kind.
type NodeKind string

// The kinds of the nodes Braid builds.
const (
	// NodeKindAgent: an agent (agentnode.Agent, a Swarm's agents).
	NodeKindAgent NodeKind = "agent"
	// NodeKindGraph: a nested Graph (graph.Builder.AsNode).
	NodeKindGraph NodeKind = "graph"
	// NodeKindSwarm: a nested Swarm (swarm.Builder.AsNode).
	NodeKindSwarm NodeKind = "swarm"
	// NodeKindFunc: a Go function (agentnode.Func).
	NodeKindFunc NodeKind = "func"
	// NodeKindCustom: a Node that does not say its kind (KindedNode).
	NodeKindCustom NodeKind = "custom"
)

// KindedNode is a Node that says what kind of executor it runs. A Node
// that wraps another (to log or to measure its runs) should say the kind
// of the node it wraps: one that does not is of kind NodeKindCustom, so
// wrapping a node, or unwrapping it, between the save of a run and its
// resume is a changed topology.
type KindedNode interface {
	Node
	// NodeKind returns the node's kind; it must not change.
	NodeKind() NodeKind
}

// KindOf returns the kind of n: its NodeKind if it is a KindedNode (an
// empty one counts as NodeKindCustom), else NodeKindCustom.
func KindOf(n Node) NodeKind {
	if k, ok := n.(KindedNode); ok && k.NodeKind() != "" {
		return k.NodeKind()
	}
	return NodeKindCustom
}

// NodeRunner runs a node's executor; its methods are called by the node's
// actor, one call at a time, on a goroutine the actor owns.
type NodeRunner interface {
	// RunNode runs the executor once. in is its input: the node's task,
	// or, with resume, the answers to the interrupts it stopped for (the
	// executor resumes, it does not restart). The result's status is
	// COMPLETED, INTERRUPTED (with every interrupt the executor still
	// waits for, not only the new ones, ids carrying the node's path: one
	// it no longer lists is dropped from the run as moot, SPEC I8; an
	// answered one stays, for a new answer, while the executor holds it:
	// an agent result's history that has not grown since the last
	// INTERRUPTED result, stopped at a model call's gate as that one was
	// or not, says the agent still holds its answers), FAILED
	// (with its error) or CANCELLED. Failures are results, not errors:
	// RunNode has none.
	RunNode(ctx context.Context, run *braidv1.NodeRun) *braidv1.NodeResult
	// Progress reports how many messages the executor holds (an agent's
	// history, with a session or without; 0 for an executor that keeps
	// none): the orchestrator keeps it, so that a run cut off by a crash
	// carries on rather than starting again, and to say where a prompt's
	// invocation began (NodeRun.unfinished_since).
	Progress(ctx context.Context) (int64, error)
	// Close releases the executor (its agent's or nested orchestrator's
	// identity). Its session stays in the store.
	Close(ctx context.Context) error
}

// GateHooks are an orchestrator's node hooks (SPEC M3), called on the
// node's goroutine: hooks of concurrent nodes run concurrently.
type GateHooks interface {
	// BeforeNode runs the BeforeNodeCall callbacks of node. gate holds the
	// orchestrator's interrupts for this node (answers included); the
	// callbacks' interrupts are recorded in it. cancelled with msg skips
	// the node (CANCELLED); an error fails it.
	BeforeNode(ctx context.Context, node string, gate *interrupt.State) (msg string, cancelled bool, err error)
	// AfterNode runs the AfterNodeCall callbacks of node, which finished
	// (not for a node whose BeforeNode interrupted, nor for a run a Close
	// cut off, which is carried on later as after a crash). ctx does not end with
	// the run (a cancelled or timed-out run is reported all the same), but
	// it does when the node's actor stops (a Close cuts the run off): the
	// callbacks are part of a job of the System, whose Close waits for it.
	AfterNode(ctx context.Context, node string, res *braidv1.NodeResult) error
}

// StreamingRunner is a NodeRunner that can stream its executor's events
// (SPEC M12); the orchestrator uses it when the run is streamed.
type StreamingRunner interface {
	NodeRunner
	// StreamNode runs like RunNode and calls emit with each event of the
	// executor (an agent's events; a nested orchestrator's events), on the
	// goroutine that calls StreamNode. Interrupt events are not emitted:
	// the orchestrator sends them after its save. With a session, the
	// INTERRUPTED NodeStop events emitted (a nested orchestrator's
	// nodes') are held back and sent with the node's own NodeStop, once
	// the orchestrator's save holds the run's report.
	StreamNode(ctx context.Context, run *braidv1.NodeRun, emit func(*braidv1.MultiAgentEvent)) *braidv1.NodeResult
}

// jointKey carries a node run's *jointOut in the run's context.
type jointKey struct{}

// jointOut is where runners leave their executors' deferred saves
// (DeferCommit). The node's goroutine closes it when the run has
// returned; a runner may register from a goroutine of its own, hence the
// lock.
type jointOut struct {
	mu     sync.Mutex
	defs   []Deferred
	closed bool
}

// end closes o, ends the deferral of every executor that registered, and
// returns them: the orchestrator takes their saves when it saves next.
func (o *jointOut) end() []Deferred {
	o.mu.Lock()
	defs := o.defs
	o.closed, o.defs = true, nil
	o.mu.Unlock()
	for _, d := range defs {
		d.EndDeferral()
	}
	return defs
}

// Deferred is an executor whose saves wait for its orchestrator's commit
// (DeferCommit).
type Deferred interface {
	// EndDeferral is called once the node's RunNode has returned: the
	// executor's saves after it (an executor cut off by a Cancel or a
	// timeout goes on for a while) commit at once, carrying what waits.
	EndDeferral()
	// TakeDeferred returns the save that waits (nil: none), which the
	// orchestrator commits with its own record in one transaction; it is
	// called on the orchestrator's goroutine, when it saves after the
	// run's report, and never for a report it drops (what waits is then
	// carried by the executor's next save). The executor's saves wait for
	// that commit to end (persistence.AgentSession.TakeDeferred).
	TakeDeferred() *persistence.Staged
}

// DeferCommit tells the orchestrator that runs this node that its
// executor's last save of the run waits to be committed with the
// orchestrator's record (SPEC M10): once RunNode has returned, d's
// deferral is ended, and the orchestrator's next save takes d's save and
// commits it with its own change in one transaction. It reports whether
// ctx is a node run's whose orchestrator will do so; if it is not (ctx is
// not a node run's, or the run's RunNode has returned already), the
// executor must not defer its saves, as no one would commit them. Several
// executors of one run may each ask. The request travels in the run's
// context, so it reaches the orchestrator through any wrapper of the
// runner that passes its context on.
func DeferCommit(ctx context.Context, d Deferred) bool {
	o, ok := ctx.Value(jointKey{}).(*jointOut)
	if !ok {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.defs = append(o.defs, d)
	return true
}

// localReport is a NodeReport in process, with the executors whose
// saves wait for the orchestrator's commit.
type localReport struct {
	rep    *braidv1.NodeReport
	defs   []Deferred
	local  any    // SetLocalResult's value
	locals Locals // the Go errors of the report's result (a nested run's, too)
	// stops are the executor's INTERRUPTED NodeStop events (a nested
	// orchestrator's nodes'), held back: they list interrupts that the
	// orchestrator's store holds once it saves the report (SPEC I9).
	stops []*braidv1.MultiAgentEvent
}

// WithCallerValues is ctx, carrying caller's values too: a context for
// work an actor runs for an in-process caller, which sees the caller's
// values (a trace, a request id) and nothing else of it: the caller's
// deadline and cancellation do not end the work (the actor stops it when
// the caller gives up). ctx's own values come first. A nil caller, or
// one without values, gives ctx.
func WithCallerValues(ctx, caller context.Context) context.Context {
	if !hasValues(caller) {
		return ctx
	}
	return callerValues{Context: ctx, caller: caller}
}

// hasValues reports whether ctx may carry values.
func hasValues(ctx context.Context) bool {
	return ctx != nil && ctx != context.Background() && ctx != context.TODO()
}

type callerValues struct {
	context.Context
	caller context.Context
}

func (c callerValues) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.caller.Value(key)
}

// localRun is a NodeRun of a streamed invocation, in process: events go
// to the stream's inbox.
type localRun struct {
	run    *braidv1.NodeRun
	events *actor.PID // the stream's receiver
	wire   bool       // events takes the protobuf form only (no localEvent)
	local  any
	caller context.Context // the invocation's caller: its values reach the runner
}

type localKey struct{}

// localOut is where a runner leaves the in-process form of its result
// (v) and of the error of a FAILED result (err); locals are a nested
// run's own, and the Go errors of the node's result by their wire form;
// stops are the executor's events held back for the orchestrator
// (localReport.stops).
type localOut struct {
	v      any
	err    error
	locals Locals
	stops  []*braidv1.MultiAgentEvent
	// event is the event a runner is emitting with its Go errors
	// (emitLocal): the stream's emit sends it on in their stead when it
	// sends that very event.
	event atomic.Pointer[localEvent]
}

// fail is failedResult, with err kept beside its wire form for the
// orchestrator's in-process callers.
func (o *localOut) fail(node string, err error) *braidv1.NodeResult {
	res := failedResult(node, err)
	o.locals.addError(res.GetError(), err)
	return res
}

type localOutKey struct{}

// SetLocalResult hands the orchestrator an in-process form of the result
// a runner is about to return (for an agent node, its *agent.Result), so
// that a Go caller in this process gets it without decoding the
// protobuf form; it must say exactly what the result says. Outside a
// node run it does nothing.
func SetLocalResult(ctx context.Context, v any) {
	if o, ok := ctx.Value(localOutKey{}).(*localOut); ok {
		o.v = v
	}
}

// SetLocalError hands the orchestrator the error of the FAILED result a
// runner is about to return, as a Go value: a Go caller in this process
// gets that value as the node's error (multiagent.NodeResult.Err), so
// errors.Is and errors.As reach everything it wraps (a store's sentinel,
// the user's own errors), not only what the result's protobuf form
// (braidv1.Error, whose codes name the sentinels an ErrorCodec knows)
// carries to another process. err's message must be the result's
// Error.Message; an error whose message differs is not used. Outside a
// node run it does nothing.
func SetLocalError(ctx context.Context, err error) {
	if o, ok := ctx.Value(localOutKey{}).(*localOut); ok {
		o.err = err
	}
}

// emitLocal calls emit with ev, a nested run's event that carries the Go
// errors l (localEvent), and hands l to the node run's stream beside it:
// the node's emit sends them on with ev when it sends ev itself (a
// wrapper of the runner that emits another event sends that alone, in
// its protobuf form). Outside a node run it calls emit alone.
func emitLocal(ctx context.Context, emit func(*braidv1.MultiAgentEvent), ev *braidv1.MultiAgentEvent, l Locals) {
	o, ok := ctx.Value(localOutKey{}).(*localOut)
	if !ok {
		emit(ev)
		return
	}
	le := &localEvent{ev: ev, locals: l}
	o.event.Store(le)
	defer o.event.CompareAndSwap(le, nil)
	emit(ev)
}

// LocalInput returns the in-process form of the running NodeRun's input
// (NodeStart.Local), or nil: a runner's ctx carries it.
func LocalInput(ctx context.Context) any { return ctx.Value(localKey{}) }

// nodeActor is one node of an orchestrator (SPEC M1): a child of the
// orchestrator's actor that runs its executor on a goroutine it owns and
// reports every run to its parent with a NodeReport.
type nodeActor struct {
	sys     *System
	acts    *jobs // its orchestrator's activation's (orchActor.acts)
	id      string
	path    string
	runner  NodeRunner
	hooks   GateHooks
	timeout time.Duration
	stored  bool // the orchestrator has a session: results are saved

	cancel context.CancelCauseFunc // of the running run, if any
}

// ErrCutOff is the cause of a node run's context when the node's actor
// stops while it runs (its orchestrator closes or stops): the run is cut
// off, as by a crash, and carried on by a later activation, not ended. An
// executor that gets it leaves what it saved for that (an agent does not
// take its invocation back, SPEC S6).
var ErrCutOff = errors.New("the run was cut off: its orchestrator closed or stopped; it is carried on later")

// nodeCancel asks a node to stop its running run.
type nodeCancel struct{}

// nodeRunDone: the run's goroutine ended.
type nodeRunDone struct{ run uint64 }

func (n *nodeActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *localRun:
		n.start(c, m.run, m.events, m.wire, m.local, m.caller)
	case *braidv1.NodeRun:
		n.start(c, m, nil, false, nil, nil)
	case *nodeRunDone:
		n.cancel = nil
	case *nodeCancel:
		if n.cancel != nil {
			n.cancel(nil) // the run is over: context.Canceled
		}
	case *actor.Stopping:
		if n.cancel != nil {
			n.cancel(ErrCutOff) // carried on later, as after a crash
		}
	}
}

// start starts a run on a goroutine of the node's.
func (n *nodeActor) start(c actor.Context, m *braidv1.NodeRun, events *actor.PID, wire bool, local any, caller context.Context) {
	if n.cancel != nil {
		// The orchestrator runs a node once at a time; a second run is
		// its bug, reported rather than run twice.
		c.Send(c.Parent(), n.failedReport(m, fmt.Errorf("node %q: run %d while run is in flight", n.id, m.GetRun())))
		return
	}
	if !n.acts.add(true) {
		// Its orchestrator's activation has stopped (JobsReturned): the
		// run is cut off before it began, and carried on later.
		return
	}
	base := WithCallerValues(context.Background(), caller)
	ctx, cancel := context.WithCancelCause(base)
	if n.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, n.timeout)
		cancelCause := cancel
		cancel = func(cause error) { cancelCause(cause); stop() }
	}
	// Always set, nil included: the caller's values reach the runner, and
	// a caller that is itself a node run (a nested orchestrator's parent,
	// or a node that invokes another orchestrator) carries its own
	// node's input, which must not stand in for this run's.
	ctx = context.WithValue(ctx, localKey{}, local)
	out := &localOut{}
	ctx = context.WithValue(ctx, localOutKey{}, out)
	joint := &jointOut{}
	ctx = context.WithValue(ctx, jointKey{}, joint)
	// The AfterNodeCall hooks see the run's values but not its end (a
	// run cancelled or timed out is reported all the same), unless it is
	// cut off: the actor stops, and the hooks are part of a job of its
	// System, whose Close waits for them.
	after, cutAfter := context.WithCancelCause(context.WithoutCancel(ctx))
	endRun := cancel
	cancel = func(cause error) {
		endRun(cause)
		if errors.Is(cause, ErrCutOff) {
			cutAfter(cause)
		}
	}
	n.cancel = cancel
	parent, self := c.Parent(), c.Self()
	root := n.sys.Root()
	n.sys.Go(func() {
		defer n.acts.done() // after the report: the run's last word
		rep := n.run(ctx, after, m, events, wire, out)
		cancel(nil)
		cutAfter(nil)
		root.Send(self, &nodeRunDone{run: m.GetRun()})
		if st := rep.GetResult().GetStatus(); n.cutOff(ctx) && st != braidv1.NodeStatus_NODE_STATUS_COMPLETED &&
			st != braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
			// A run cut off (its System closes: its executor may fail
			// with ErrClosed before the actor stops) has no outcome of
			// its own: reported, its orchestrator could save a failure
			// the run never had, where it must be carried on later, as
			// after a crash.
			return
		}
		defs := joint.end()
		if defs != nil || out.v != nil || out.stops != nil || !out.locals.empty() {
			root.Send(parent, &localReport{rep: rep, defs: defs, local: out.v, locals: out.locals, stops: out.stops})
			return
		}
		root.Send(parent, rep)
	})
}

// run runs one NodeRun: the gate, the executor, AfterNodeCall (with the
// context after). A panic anywhere fails the run (SPEC R6). The
// executor's events go to events, but for those held back in out.stops;
// unless wire, with their Go errors (emitLocal).
func (n *nodeActor) run(ctx, after context.Context, m *braidv1.NodeRun, events *actor.PID, wire bool, out *localOut) (rep *braidv1.NodeReport) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			rep = &braidv1.NodeReport{NodeId: n.id, Run: m.GetRun(),
				Result: out.fail(n.id, fmt.Errorf("node %q panicked: %v\n%s", n.id, r, debug.Stack()))}
		}
		// Every report, a gate's or a failure's included, says where the
		// executor stands: the base of the node's next run (SPEC M10).
		rep.Messages = n.progress(context.WithoutCancel(ctx))
	}()
	rep = &braidv1.NodeReport{NodeId: n.id, Run: m.GetRun()}
	gate := interrupt.NewState()
	for _, w := range m.GetGate() {
		in, err := InterruptFromWire(w)
		if err != nil {
			return &braidv1.NodeReport{NodeId: n.id, Run: m.GetRun(), Result: out.fail(n.id, err)}
		}
		gate.Register(in)
	}
	if n.hooks != nil {
		msg, cancelled, err := n.hooks.BeforeNode(ctx, n.id, gate)
		rep.Gate = interruptsToWire(gate.All())
		switch {
		case err != nil:
			// The executor does not run: not an execution either (SPEC
			// M7), as for a cancel below.
			rep.Gated = true
			rep.Result = out.fail(n.id, fmt.Errorf("BeforeNodeCall hook of node %q: %w", n.id, err))
			return rep
		case len(gate.Unanswered()) > 0:
			rep.Gated = true
			rep.Result = &braidv1.NodeResult{NodeId: n.id, Status: braidv1.NodeStatus_NODE_STATUS_INTERRUPTED,
				Interrupts: interruptsToWire(gate.Unanswered())}
			return rep
		case cancelled:
			// The executor does not run: not an execution (SPEC M7; a
			// swarm's node history lists the nodes that ran).
			rep.Gated = true
			rep.Result = &braidv1.NodeResult{NodeId: n.id, Status: braidv1.NodeStatus_NODE_STATUS_CANCELLED, Message: msg}
			n.after(after, rep, out)
			return rep
		}
	}
	var res *braidv1.NodeResult
	if events == nil {
		res = n.runner.RunNode(ctx, m)
	} else {
		root := n.sys.Root()
		root.Send(events, &braidv1.MultiAgentEvent{NodePath: n.path, Event: &braidv1.MultiAgentEvent_NodeStart{NodeStart: true}})
		if sr, ok := n.runner.(StreamingRunner); ok {
			res = sr.StreamNode(ctx, m, func(ev *braidv1.MultiAgentEvent) {
				// A nested node's NodeStop that lists interrupts waits for
				// the orchestrator's save of this run's report, as the
				// node's own NodeStop does: until then the run a caller
				// answers does not hold them (SPEC I9).
				if n.stored && ev.GetNodeStop().GetStatus() == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
					out.stops = append(out.stops, ev)
					return
				}
				if le := out.event.Load(); le != nil && le.ev == ev && !wire {
					root.Send(events, le)
					return
				}
				root.Send(events, ev)
			})
		} else {
			res = n.runner.RunNode(ctx, m)
		}
	}
	if res == nil {
		res = out.fail(n.id, fmt.Errorf("node %q: its executor returned no result", n.id))
	} else if out.err != nil {
		out.locals.addError(res.GetError(), out.err) // SetLocalError's
	}
	// The result is stored with the run, and a stored result whose JSON is
	// not JSON makes the run's record damaged (SPEC S5): an executor of
	// another package (a NodeRunner is public) that returns one fails.
	// Without a session nothing is stored, and the walk is skipped.
	if n.stored {
		if err := checkWireJSON(res.ProtoReflect()); err != nil {
			res = out.fail(n.id, fmt.Errorf("node %q: its executor's result holds bytes that are not JSON: %v", n.id, err))
		}
	}
	res.NodeId = n.id
	if err := ctx.Err(); err != nil && res.GetStatus() != braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		if ctx.Err() == context.DeadlineExceeded && n.timeout > 0 {
			res = out.fail(n.id, fmt.Errorf("%w: Node '%s' execution timed out after %gs", ErrNodeTimeout, n.id, n.timeout.Seconds()))
		}
	}
	res.DurationNs = int64(time.Since(start))
	rep.Result = res
	// A run cut off (its actor stops, or its System closes and stopped
	// its executor first) is carried on later, as after a crash:
	// AfterNodeCall fires for the run that ends, not for this one, whose
	// result no one will see.
	if res.GetStatus() != braidv1.NodeStatus_NODE_STATUS_INTERRUPTED && !n.cutOff(ctx) {
		n.after(after, rep, out)
	}
	return rep
}

// cutOff reports whether the run of ctx was cut off: its actor stops,
// or its System closes (which stops the actor too, and may stop the
// run's executor before it).
func (n *nodeActor) cutOff(ctx context.Context) bool {
	select {
	case <-n.sys.Done():
		return true
	default:
		return errors.Is(context.Cause(ctx), ErrCutOff)
	}
}

// progress is the executor's progress, -1 when it cannot be read.
func (n *nodeActor) progress(ctx context.Context) (p int64) {
	defer func() {
		if recover() != nil {
			p = -1
		}
	}()
	p, err := n.runner.Progress(ctx)
	if err != nil {
		return -1
	}
	return p
}

func (n *nodeActor) after(ctx context.Context, rep *braidv1.NodeReport, out *localOut) {
	if n.hooks == nil {
		return
	}
	if err := n.hooks.AfterNode(ctx, n.id, rep.Result); err != nil {
		rep.Result = out.fail(n.id, fmt.Errorf("AfterNodeCall hook of node %q: %w", n.id, err))
	}
}

func (n *nodeActor) failedReport(m *braidv1.NodeRun, err error) *braidv1.NodeReport {
	return &braidv1.NodeReport{NodeId: n.id, Run: m.GetRun(), Result: failedResult(n.id, err), Messages: -1}
}

func failedResult(node string, err error) *braidv1.NodeResult {
	return &braidv1.NodeResult{NodeId: node, Status: braidv1.NodeStatus_NODE_STATUS_FAILED, Error: DefaultCodec().Encode(err)}
}

// FailedResult is the result of a node run that failed with err.
func FailedResult(node string, err error) *braidv1.NodeResult { return failedResult(node, err) }

func interruptsToWire(ins []interrupt.Interrupt) []*braidv1.Interrupt {
	out := make([]*braidv1.Interrupt, len(ins))
	for i, in := range ins {
		out[i] = InterruptToWire(in)
	}
	return out
}
