package actors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// Errors of orchestrators.
var (
	// ErrNodeTimeout: a node ran longer than its orchestrator's NodeTimeout.
	ErrNodeTimeout = errors.New("node timed out")
	// ErrOrchestratorClosed: the orchestrator was closed. An invocation
	// running or queued when Close is called ends with it; so does every
	// call on the handle after Close.
	ErrOrchestratorClosed = errors.New("orchestrator closed")
	// ErrOrchestratorFaulted: the actor of an orchestrator without a
	// session stopped after a fault in its own code and has no session to
	// come back from; build the orchestrator again (SPEC R6: never a
	// silent restart with fresh state).
	ErrOrchestratorFaulted = errors.New("the orchestrator's actor stopped after a fault and had no session to come back from: build it again")
	// ErrTopology: the stored run of an orchestrator waits for a resume
	// (or was cut off) and names nodes it does not have or was saved by
	// one of another shape or with a node of another kind (NodeKind), or
	// the record was saved by another kind of orchestrator (SPEC M10).
	ErrTopology = errors.New("the orchestrator's topology changed between save and resume")
	// ErrNodeFailed is matched by the error of a node that failed without
	// an error of its own (an executor that returned no result, a nested
	// Graph or Swarm whose run FAILED).
	ErrNodeFailed = errors.New("node failed")
	// ErrIncompleteRun: a task while the stored run was cut off by a crash.
	ErrIncompleteRun = errors.New("the last run was cut off in the middle (its process stopped, or a Close cut it off): carry it on with an empty input before giving a new task")
	// ErrEmptyTask: a fresh run was given no task.
	ErrEmptyTask = errors.New("an orchestrator run needs a task: give a prompt")
	// ErrBadTask: an input has a message or a response that is not JSON,
	// or a message that is not a message (no content, a role other than
	// user or assistant, a content block that is none): Braid's own
	// encoding never makes one; an input from another process, or built by
	// hand as a protobuf, may.
	ErrBadTask = errors.New("the input holds bytes that are not JSON, or a message that is not one")
)

// defaultCodec is the codec of errors built into every ErrorCodec. Built
// once; immutable.
var defaultCodec = sync.OnceValue(func() *ErrorCodec {
	c, err := NewErrorCodec()
	if err != nil { // the built-in codes are constant: cannot happen
		return &ErrorCodec{byCode: map[string]error{}}
	}
	return c
})

// DefaultCodec returns the codec that knows the built-in error codes.
func DefaultCodec() *ErrorCodec { return defaultCodec() }

// RecordID is the store id of an owner (agent or orchestrator) with id at
// owner path path (SPEC I2): id itself outside any orchestrator, otherwise
// the path's segments and id joined by ":" (store ids hold no "/"; path
// segments hold no ":", so the mapping is one to one as long as id holds
// none either).
func RecordID(path, id string) string {
	if path == "" {
		return id
	}
	return strings.ReplaceAll(path, "/", ":") + ":" + id
}

// NodeSpec is one node of an orchestrator.
type NodeSpec struct {
	ID   string
	Node Node
}

// NodeStart asks the orchestrator to run a node with an input.
type NodeStart struct {
	Node  string
	Input *braidv1.AgentInput
	// Reset starts the node's executor afresh before it runs (NodeRun.reset_executor).
	Reset bool
	// Local is an in-process form of Input (for an agent node, the
	// agent.Input) that the node's runner may take instead of decoding
	// Input (LocalInput); it must say exactly what Input says. It is
	// neither saved nor sent to another process.
	Local any
}

// Policy decides which nodes run (Graph, Swarm). Its methods are called on
// the orchestrator's actor, one at a time, and must not block.
type Policy interface {
	// Begin returns the nodes to run first in a fresh run of v.Task().
	Begin(v *RunView) ([]NodeStart, error)
	// Next is told that node finished a run (COMPLETED, FAILED or
	// CANCELLED: v.Status) and returns the nodes that are ready now. A
	// non-empty stop ends the run FAILED with that message (a limit).
	Next(v *RunView, node string) (starts []NodeStart, stop string)
}

// StatefulPolicy is a Policy with state of its own (a Swarm's shared
// context and handoff history): it is saved with the run and restored
// with it (SPEC M10), and reset when a fresh run starts.
type StatefulPolicy interface {
	Policy
	// MarshalPolicy returns the policy's state as JSON.
	MarshalPolicy() (json.RawMessage, error)
	// UnmarshalPolicy restores a state MarshalPolicy returned; an error
	// makes the stored run damaged.
	UnmarshalPolicy(json.RawMessage) error
	// ResetPolicy forgets the state: a fresh run starts.
	ResetPolicy()
}

// OrchestratorHooks are an orchestrator's hooks: the node hooks, run on
// the nodes' goroutines, and the invocation hooks, run on a goroutine the
// orchestrator's actor starts (never on its mailbox), as one of its
// System's jobs: their context ends when the actor stops (a Close), and
// they must return then, since the System's Close waits for them.
type OrchestratorHooks interface {
	GateHooks
	// BeforeInvocation runs at the start of every invocation; resuming
	// tells a resume from a fresh run. An error fails the invocation
	// before any node runs.
	BeforeInvocation(ctx context.Context, resuming bool) error
	// AfterInvocation runs at the end of every invocation, with its result.
	AfterInvocation(ctx context.Context, res *braidv1.MultiAgentResult) error
}

// OrchestratorConfig configures an orchestrator (the core that Graph and
// Swarm share).
type OrchestratorConfig struct {
	// Kind is the kind of orchestrator ("graph", "swarm"): its identity's
	// kind, and the type its record is saved with.
	Kind string
	// ID names the orchestrator within its session.
	ID string
	// OwnerPath places a nested orchestrator inside its parent's node
	// (SPEC I2); empty at the top.
	OwnerPath string
	// Nodes, in order; ids are unique path segments.
	Nodes  []NodeSpec
	Policy Policy
	Hooks  OrchestratorHooks
	// Session saves the run after every node and every invocation (SPEC
	// M10); nil keeps it in memory.
	Session *persistence.SessionManager
	// MaxNodeExecutions ends the run FAILED when that many node runs have
	// started (ended, running or waiting for answers) and another would
	// start (0: no limit); a node run that stopped for interrupts and is
	// resumed is not another.
	MaxNodeExecutions int
	// ExecutionTimeout ends the run FAILED once it has executed this long
	// and a new node run would start (summed across invocations, the time
	// it waited for answers between them not counted; 0: no limit); a
	// node run that stopped for interrupts and is resumed is not a new
	// one. NodeTimeout fails a node run that takes longer (0: no limit).
	ExecutionTimeout, NodeTimeout time.Duration
	// IdleTimeout passivates the orchestrator and its nodes' owners when
	// idle (requires Session).
	IdleTimeout time.Duration
	// LoadTimeout bounds the load of the session on activation (default 30s).
	LoadTimeout time.Duration
	// Shape describes what else than its node ids makes the orchestrator
	// what it is (a graph's edges and entry points), as a stable text; it
	// is stored with the run, followed by the kind of every node (KindOf).
	// A stored run that waits for a resume, or was cut off, and that an
	// orchestrator of another Shape, or with a node of another kind, saved
	// is refused with ErrTopology when the orchestrator activates, and so
	// is a resume of it (SPEC M10); a fresh run may start whatever the
	// stored Shape. Empty checks nothing beyond the node ids and kinds. A
	// run saved by an earlier build, whose record keeps the Shape without
	// the kinds, is checked against the Shape alone.
	Shape string
}

// Orchestrator is a client handle to an orchestrator's actor (SPEC R1).
type Orchestrator struct {
	cfg     OrchestratorConfig
	shape   string // storedShape(recordShape(cfg))
	legacy  string // storedShape(cfg.Shape): the form of earlier builds' records
	sys     *System
	binding *Binding
	opened  []openedNode // read-only once bound

	closeOnce sync.Once
	closed    chan struct{} // closed when Close is called
	closing   Closing
	// life ends when Close is called (cause ErrOrchestratorClosed) or the
	// System closes: the parent of the actor's loads, which no message
	// reaches, so that neither Close waits for a store that does not
	// answer (SPEC R5).
	life     context.Context
	stopLife context.CancelCauseFunc
}

// orchInvoke is the in-process form of MultiAgentInvoke.
type orchInvoke struct {
	in    *braidv1.AgentInput
	reply chan orchReply
	// caller is the in-process caller's context: its values reach the
	// invocation's hooks and the nodes it runs (nil: none).
	caller context.Context
	// events, if set, gets the run's MultiAgentEvents and then, instead
	// of reply, a *streamEnd (an in-process Stream's inbox), or, if wire,
	// the protobuf result or error (a MultiAgentInvoke with stream set).
	events *actor.PID
	wire   bool
	// fresh: a prompt starts a fresh run even if the stored run waits for
	// a resume or was cut off (a nested orchestrator's parent only, in
	// process: NestedRunner; the protobuf MultiAgentInvoke has no such mark).
	fresh bool
	// gone: the caller drops the invocation (orchAbandon) if its context
	// ends while it waits, so it never starts once caller has ended (a
	// handle's Invoke or Stream; a nested run's parent cancels it instead).
	gone bool
}

// streamEnd ends a streamed invocation.
type streamEnd struct{ orchReply }

// answer sends the invocation's outcome.
func (inv *orchInvoke) answer(sys *System, r orchReply) {
	switch {
	case inv.events != nil && inv.wire && r.err != nil:
		sys.Root().Send(inv.events, DefaultCodec().Encode(r.err))
	case inv.events != nil && inv.wire:
		sys.Root().Send(inv.events, r.res)
	case inv.events != nil:
		sys.Root().Send(inv.events, &streamEnd{r})
	default:
		inv.reply <- r
	}
}

// emit sends an event of a streamed invocation (none otherwise).
func (inv *orchInvoke) emit(sys *System, ev *braidv1.MultiAgentEvent) {
	if inv != nil && inv.events != nil {
		sys.Root().Send(inv.events, ev)
	}
}

// ErrStreamStopped is returned by Stream when its yield returned false;
// the run goes on to its end without the reader.
var ErrStreamStopped = errors.New("stream stopped by its reader")

type orchReply struct {
	res    *braidv1.MultiAgentResult
	err    error
	locals Locals // in process: the results' and errors' Go forms
}

// orchAbandon: the in-process caller of inv stopped waiting; inv is
// dropped if it is still queued (one that runs goes on, SPEC M12).
type orchAbandon struct{ inv *orchInvoke }

// orchCancel stops the running invocation.
type orchCancel struct{ reply chan bool }

// orchStatus asks for the run's status.
type orchStatus struct {
	reply chan orchReply
}

// NewOrchestrator binds the orchestrator's identity in sys's registry and
// activates it: it opens its nodes and restores its run from the session.
// If ctx ends first, it returns ctx's error at once; an activation whose
// load still waits for its store keeps the identity bound until the load
// ends, and the close that releases it goes on meanwhile (SPEC R5).
func NewOrchestrator(ctx context.Context, sys *System, cfg OrchestratorConfig) (*Orchestrator, error) {
	if cfg.LoadTimeout == 0 {
		cfg.LoadTimeout = 30 * time.Second
	}
	id := Identity{Kind: cfg.Kind, Path: interrupt.OwnedID(cfg.OwnerPath, cfg.ID)}
	if cfg.Session != nil {
		id.SessionID = cfg.Session.SessionID()
	} else {
		id.Path += "#" + sys.UniqueID()
	}
	o := &Orchestrator{cfg: cfg, sys: sys, closed: make(chan struct{}), shape: storedShape(recordShape(&cfg)), legacy: storedShape(cfg.Shape)}
	// The nodes are opened here, on the caller's goroutine, not in the
	// actor: opening binds their owners in the registry and asks them
	// where they stand, which an actor must not wait for.
	self := cfg.ID
	if cfg.OwnerPath != "" {
		self = cfg.OwnerPath
	}
	for _, spec := range cfg.Nodes {
		env := NodeEnv{System: sys, Path: self + "/" + spec.ID, NodeID: spec.ID, Session: cfg.Session, IdleTimeout: cfg.IdleTimeout}
		runner, err := spec.Node.OpenNode(ctx, env)
		if err == nil {
			var p int64
			if p, err = runner.Progress(ctx); err == nil {
				o.opened = append(o.opened, openedNode{id: spec.ID, path: env.Path, runner: runner, progress: p})
				continue
			}
			_ = runner.Close(context.WithoutCancel(ctx))
		}
		o.closeNodes(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s %q: node %q: %w", cfg.Kind, cfg.ID, spec.ID, err)
	}
	activations := 0
	o.life, o.stopLife = context.WithCancelCause(sys.Context())
	b, err := sys.Registry().Bind(ctx, id, BindConfig{IdleTimeout: cfg.IdleTimeout, Producer: func() actor.Actor {
		activations++ // the registry's goroutine only
		return &orchActor{cfg: &o.cfg, sys: sys, life: o.life, opened: o.opened, cfgShape: o.shape, legacy: o.legacy, again: activations > 1}
	}})
	if err != nil {
		o.stopLife(ErrOrchestratorClosed)
		o.closeNodes(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s %q: %w", cfg.Kind, cfg.ID, err)
	}
	o.binding = b
	if _, err := o.Status(ctx); err != nil {
		_ = o.Close(ctx) // waited for only while ctx lasts (SPEC R5)
		return nil, err
	}
	return o, nil
}

// openedNode is a node opened by the handle, for its actor's activations.
type openedNode struct {
	id, path string
	runner   NodeRunner
	progress int64
}

func (o *Orchestrator) closeNodes(ctx context.Context) error {
	var first error
	for _, n := range o.opened {
		if err := n.runner.Close(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Invoke runs (a prompt) or resumes (interrupt responses) the orchestrator
// and waits for the run's result, or for ctx to end (SPEC R5). A context
// that has ended already sends nothing; one that ends while the
// invocation waits behind another, or for the orchestrator's activation,
// drops it; one that ends while it runs
// leaves the run going to its end, as a Stream whose reader stops does
// (Cancel stops it), and Status or a resume sees it. Called from the
// orchestrator's own run (a node or hook of it, at any depth), it returns
// ErrReentrant (SPEC R7).
func (o *Orchestrator) Invoke(ctx context.Context, in *braidv1.AgentInput) (*braidv1.MultiAgentResult, error) {
	res, _, err := o.InvokeLocal(ctx, in)
	return res, err
}

// InvokeLocal is Invoke, and also returns the in-process forms of what
// the result carries (Locals): the node results their runners gave
// (SetLocalResult) and the Go errors of FAILED nodes (SetLocalError),
// nested runs' included.
func (o *Orchestrator) InvokeLocal(ctx context.Context, in *braidv1.AgentInput) (*braidv1.MultiAgentResult, Locals, error) {
	if err := o.callable(ctx, true); err != nil {
		return nil, Locals{}, err
	}
	reply := make(chan orchReply, 1)
	inv := &orchInvoke{in: in, reply: reply, caller: withRun(ctx, o), gone: true}
	o.binding.Send(inv)
	r, err := o.wait(ctx, reply)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		o.binding.Send(&orchAbandon{inv: inv})
	}
	return r.res, r.locals, err
}

// wait waits for reply, for ctx to end, or for the orchestrator or its
// system to close, or its identity to be released (its actor panicked
// while starting); a reply that is there wins.
func (o *Orchestrator) wait(ctx context.Context, reply chan orchReply) (orchReply, error) {
	select {
	case r := <-reply:
		return r, r.err
	case <-ctx.Done():
		return orchReply{}, ctx.Err()
	case <-o.closed:
	case <-o.sys.done:
	case <-o.binding.Released():
	}
	select {
	case r := <-reply:
		return r, r.err
	default:
	}
	return orchReply{}, o.goneErr()
}

// goneErr is the error of a call whose orchestrator can answer no more:
// ErrOrchestratorClosed after Close, ErrClosed after its System's Close,
// else the binding's error (ErrUnbound wrapping the *FaultError of an
// actor that panicked while starting, SPEC R6).
func (o *Orchestrator) goneErr() error {
	if o.isClosed() {
		return ErrOrchestratorClosed
	}
	select {
	case <-o.sys.done: // closed before the System releases the identity
		return ErrClosed
	default:
	}
	if err := o.binding.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// callable checks a call before anything is sent: the handle is not
// closed, a run (invoke) is not asked for from inside the orchestrator's
// own run (SPEC R7), and the caller has not left already (its context
// ended: nothing is sent).
func (o *Orchestrator) callable(ctx context.Context, invoke bool) error {
	switch {
	case o.isClosed():
		return ErrOrchestratorClosed
	case invoke && runsIn(ctx, o):
		return ErrReentrant
	}
	return ctx.Err()
}

func (o *Orchestrator) isClosed() bool {
	select {
	case <-o.closed:
		return true
	default:
		return false
	}
}

// Stream runs like Invoke and calls yield with each event of the run as
// it happens (SPEC M12): node starts, the events of the nodes' agents
// (tagged with the node path), node results (an INTERRUPTED one, which
// carries its interrupts, once a save holds it; a nested orchestrator's
// node's too, with its parent node's), and, after the run is
// saved, its interrupts. It returns the result, or ErrStreamStopped once yield
// returns false: the run then goes on to its end unread and a later
// resume can finish it. Once ctx ends it calls yield no more (not even
// with events already queued) and returns ctx's error; the run goes on
// the same way. Called from the orchestrator's own run, it returns
// ErrReentrant (SPEC R7). Events and result are the protobuf forms alone,
// as another process gets them (StreamLocal gives the Go values too).
func (o *Orchestrator) Stream(ctx context.Context, in *braidv1.AgentInput, yield func(*braidv1.MultiAgentEvent) bool) (*braidv1.MultiAgentResult, error) {
	res, _, err := o.StreamLocal(ctx, in, func(ev *braidv1.MultiAgentEvent, _ Locals) bool { return yield(ev) })
	return res, err
}

// StreamLocal is Stream, and also gives the in-process forms of what the
// events and the result carry, as InvokeLocal does: yield gets, with each
// event, the Go errors of the FAILED node results it carries (Locals.Errors,
// keyed by the event's own braidv1.Error values; a NodeStop's, a nested
// run's forwarded NodeStop's; empty for every other event), and the
// result comes with its Locals.
func (o *Orchestrator) StreamLocal(ctx context.Context, in *braidv1.AgentInput, yield func(*braidv1.MultiAgentEvent, Locals) bool) (*braidv1.MultiAgentResult, Locals, error) {
	if err := o.callable(ctx, true); err != nil {
		return nil, Locals{}, err
	}
	ctx, cancel := context.WithCancelCause(withRun(ctx, o))
	defer cancel(nil)
	go func() { // a Close, or the release of the identity, ends the wait
		select {
		case <-o.closed:
			cancel(ErrOrchestratorClosed)
		case <-o.binding.Released():
			cancel(o.goneErr())
		case <-ctx.Done():
		}
	}()
	inbox := NewInbox(o.sys)
	defer inbox.Close()
	inv := &orchInvoke{in: in, events: inbox.PID(), caller: ctx, gone: true}
	o.binding.Send(inv)
	for {
		m, err := inbox.Receive(ctx)
		if _, end := m.(*streamEnd); err == nil && !end {
			// The inbox hands out what is queued even once ctx has
			// ended: a caller who left gets no more events (SPEC R5),
			// only the outcome if it is there already.
			err = ctx.Err()
		}
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, ErrOrchestratorClosed) || errors.Is(cause, ErrUnbound) {
				return nil, Locals{}, cause
			}
			if ctx.Err() != nil {
				o.binding.Send(&orchAbandon{inv: inv})
			}
			return nil, Locals{}, err
		}
		switch m := m.(type) {
		case *braidv1.MultiAgentEvent:
			if !yield(m, Locals{}) {
				return nil, Locals{}, ErrStreamStopped
			}
		case *localEvent:
			if !yield(m.ev, m.locals) {
				return nil, Locals{}, ErrStreamStopped
			}
		case *streamEnd:
			return m.res, m.locals, m.err
		}
	}
}

// Status returns the run as it stands (its results so far); it is
// answered at once, while nodes run. With a session, a node's
// interrupts are shown once a save holds them (SPEC I9): until then the
// node is shown still running and its interrupts are not listed, so an
// answer to any interrupt Status lists finds it in the store.
func (o *Orchestrator) Status(ctx context.Context) (*braidv1.MultiAgentResult, error) {
	if err := o.callable(ctx, false); err != nil {
		return nil, err
	}
	reply := make(chan orchReply, 1)
	o.binding.Send(&orchStatus{reply: reply})
	r, err := o.wait(ctx, reply)
	return r.res, err
}

// Cancel stops the running invocation, if any, and reports whether one
// ran: nothing new is scheduled, the running nodes are cancelled (their
// agents' invocations end with stop reason "cancelled") and end
// CANCELLED, and the invocation returns the run as it then stands. It is
// answered at once (SPEC R3).
func (o *Orchestrator) Cancel(ctx context.Context) (bool, error) {
	if err := o.callable(ctx, false); err != nil {
		return false, err
	}
	reply := make(chan bool, 1)
	o.binding.Send(&orchCancel{reply: reply})
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-o.closed:
		return false, ErrOrchestratorClosed
	case <-o.sys.done:
		return false, ErrClosed
	case <-o.binding.Released():
		select {
		case r := <-reply:
			return r, nil
		default:
			return false, o.goneErr()
		}
	}
}

// Binding returns the orchestrator's claim on its identity.
func (o *Orchestrator) Binding() *Binding { return o.binding }

// Close stops the orchestrator's actor (and its nodes) and releases its
// identity; the session stays in the store. The invocation running, if
// any, and those queued end with ErrOrchestratorClosed (a run cut off
// this way is carried on by the next activation, as after a crash), and
// so does every later call. Close waits for the actors to stop and the
// identities to be released, or for ctx to end: it then returns ctx's
// error and the close goes on without the caller. Every call after the
// first waits for the same close and returns its outcome. The identity is
// released only once the node runs and invocation hooks of the activation
// it stops have returned (JobWaiter), so a node or hook of the
// orchestrator that closes it must pass its own context, which the close
// cuts off (Close then returns that context's error, and the close
// completes once the node or hook has returned): with a context that
// cannot end, Close waits for the very run it is called from, until the
// System closes.
func (o *Orchestrator) Close(ctx context.Context) error {
	o.closeOnce.Do(func() {
		close(o.closed)
		o.stopLife(ErrOrchestratorClosed)
	})
	return o.closing.Do(ctx, o.shutdown)
}

// shutdown is Close's work, run to its end: each of its waits ends at the
// latest when the System closes.
func (o *Orchestrator) shutdown() error {
	ctx := context.Background()
	err := o.binding.Unbind(ctx)
	if e := o.closeNodes(ctx); err == nil {
		err = e
	}
	return err
}

// routed is one interrupt of the run and the node that owns it (SPEC M5):
// gate interrupts are the orchestrator's own (a BeforeNodeCall hook of
// node), the others belong to the node's executor.
type routed struct {
	in   interrupt.Interrupt
	node string
	gate bool
	seq  uint64
}

// nodeRec is the orchestrator's record of one node.
type nodeRec struct {
	id     string
	path   string
	pid    *actor.PID
	runner NodeRunner

	status  braidv1.NodeStatus
	result  *braidv1.NodeResult // of the last finished run
	input   *braidv1.AgentInput // of the current or interrupted run
	inner   bool                // the executor is interrupted: resume it
	run     uint64              // the last run sent
	started uint64              // run sequence numbers (RunView)
	ended   uint64
	count   int64          // executed runs
	dur     int64          // summed execution time
	usage   *braidv1.Usage // summed model usage (nil: none yet); a restore takes its result's
	msgs    int64          // executor progress (NodeRunner.Progress)
	base    int64          // progress when the current run started
	// since is where the invocation the node's executor was last given a
	// prompt for began (its progress then; -1: its initial history, the
	// prompt came after a reset; nil: unknown), sent as
	// NodeRun.unfinished_since with the next prompt.
	since *int64
	// unfinished: the node's last run did not complete, so its executor
	// may hold that invocation unfinished; given a prompt, it drops it
	// back to since, where the prompt's invocation then begins too.
	unfinished bool
	gate       []*braidv1.Interrupt
	local      any    // NodeStart.Local of the current run (in process only)
	localRes   any    // SetLocalResult of the last run (in process only)
	locals     Locals // the Go errors of the last run's result, a nested run's Locals (in process only)
	resume     bool   // the next run resumes the executor
	recover    bool   // the current run was cut off by a crash
	reset      bool   // the current run started the executor afresh (saved: its recovery is told)

	first    uint64   // sequence number of the end of its first run (results order)
	executed []uint64 // sequence numbers of the ends of its executed runs
	dirty    bool     // changed since the last save
	// unsaved: no save holds the node's INTERRUPTED report yet (its
	// interrupts are not in the store); Status shows the node as it was
	// before the report, with its result then, before (nil: none).
	unsaved bool
	before  *braidv1.NodeResult
	// stops: the NodeStop events of the executor's own nodes (a nested
	// orchestrator's) that list interrupts, sent with the node's own
	// NodeStop once a save holds its report (localReport.stops).
	stops []*braidv1.MultiAgentEvent
}

// orchActor is the orchestrator's actor: it owns the run (node statuses
// and results, the interrupt table, the ready nodes held back) and changes
// it only in response to messages: invocations, node reports.
type orchActor struct {
	cfg    *OrchestratorConfig
	sys    *System
	life   context.Context // Orchestrator.life: ends on either Close
	opened []openedNode

	loadErr  error // the activation failed: every call gets it (loadFailed)
	dying    bool  // loadErr was answered and the actor asked to passivate
	owner    *persistence.Owner
	shape    string // storedShape of the Shape of the orchestrator that saved the run ("": unknown)
	cfgShape string // storedShape(recordShape(cfg)), computed once
	legacy   string // storedShape(cfg.Shape), as earlier builds kept it, computed once
	nodes    map[string]*nodeRec
	order    []string   // node ids in config order
	recs     []*nodeRec // nodes, in order (RunView.NodeAt)

	// the run
	status   braidv1.NodeStatus
	task     *braidv1.AgentInput
	table    map[string]*routed
	raised   []*routed // in the order raised; entries dropped from table are skipped
	dropped  int       // entries of raised no longer in table
	byNode   map[string][]*routed
	held     []NodeStart
	results  []string // node ids, first-finish order
	executed []string // execution order
	// open counts the nodes whose current run started and has not ended
	// (EXECUTING, or INTERRUPTED and waiting to be resumed): with
	// executed, the executions the run has started (MaxNodeExecutions).
	open     int
	seq      uint64
	duration time.Duration
	message  string
	usage    *braidv1.Usage
	// usageBase is usage where the last invocation began (saved: one that
	// carries on a cut-off invocation keeps its base); the result's
	// invocation usage is the difference.
	usageBase *braidv1.Usage
	again     bool  // not the first activation (see ErrOrchestratorFaulted)
	fault     any   // the panic that stops the actor, if one does
	saveErr   error // a save failed: the invocation ends with it
	runErr    error // the policy panicked: the invocation ends with it, once saved
	stale     bool  // a save failed: reload the stored run before the next invocation
	ranNodes  bool  // the invocation sent a node a run (its launch save held)
	dirty     []*nodeRec
	rewrite   bool       // a fresh run: the next save rewrites the record's log
	joint     []Deferred // nodes' executors whose saves the next save takes and commits
	saving    bool       // a save's store work runs (save): the next waits for its saveDone
	// answered holds the interrupts this actor's resumes answered since
	// it last lost a save to another writer: on a cut-off run, only these
	// may be answered again (see begin).
	answered map[string]bool
	// commitStop cancels the commit of the save in flight; commitEnded is
	// closed once it has returned (stopSave).
	commitStop  context.CancelFunc
	commitEnded chan struct{}
	deferred    []any // messages that change the run, held back while saving
	// unsaved are the nodes whose INTERRUPTED report no save holds yet
	// (nodeRec.unsaved): Status does not show their interrupts, and their
	// NodeStop events wait, until a save commits (SPEC I9).
	unsaved []*nodeRec

	// the invocation
	cur      *orchInvoke
	queue    []*orchInvoke
	began    time.Time
	inflight int
	stopping bool // an interrupt came: schedule nothing new
	canceled bool // Cancel: schedule nothing new, the running nodes end CANCELLED
	phase    int  // 0 idle, 1 before hooks, 2 running nodes, 3 after hooks
	resuming bool
	carrying bool                 // the invocation carries on a run a crash cut off
	cutStop  bool                 // the stored run scheduled nothing new when it was cut off (orchData.Stopping)
	answers  []interrupt.Response // a resume's answers, validated, applied once its hooks pass
	routedTo map[string]bool      // nodes a resume runs

	// acts counts the jobs this activation started (its invocation hooks
	// and its nodes' runs), for JobsReturned.
	acts jobs
	// hooksStop ends the context of the invocation hooks that run, if
	// any: the actor stops, and a job of its System must return then.
	hooksStop context.CancelFunc
}

// hooksDone: the invocation hooks that ran on their goroutine ended.
type hooksDone struct {
	phase int
	err   error
}

func (x *orchActor) Receive(c actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			x.fault = r // for Stopping's answers; the supervisor stops the actor
			panic(r)
		}
	}()
	switch m := c.Message().(type) {
	case *actor.Started:
		x.activate(c)
	case *actor.Stopping:
		// Closed, or stopped after a fault (a passivation happens only
		// when idle): nobody waits forever for an invocation that will
		// not end.
		err := ErrOrchestratorClosed
		if x.fault != nil {
			err = fmt.Errorf("%s %q: its actor stopped after a fault: %v", x.cfg.Kind, x.cfg.ID, x.fault)
		}
		if x.hooksStop != nil {
			x.hooksStop()
			x.hooksStop = nil
		}
		if x.cur != nil {
			x.cur.answer(x.sys, orchReply{err: err})
			x.cur = nil
		}
		for _, inv := range x.queue {
			inv.answer(x.sys, orchReply{err: err})
		}
		x.queue = nil
		x.stopSave()
	case *orchStatus:
		if x.loadErr != nil {
			m.reply <- orchReply{err: x.loadErr}
			x.loadFailed(c)
			return
		}
		m.reply <- orchReply{res: x.shownResult()}
	case *orchInvoke:
		x.enqueue(c, m)
	case *orchAbandon:
		for i, inv := range x.queue {
			if inv == m.inv {
				x.queue = append(x.queue[:i], x.queue[i+1:]...)
				break
			}
		}
	case *braidv1.MultiAgentInvoke:
		// From another actor (or process): answered to the sender; a
		// streamed one sends it the run's events first (SPEC M12).
		sender := c.Sender()
		if m.GetStream() && sender != nil {
			// fresh is not taken from the wire: a parent gives its nested
			// orchestrator a fresh prompt in process (NestedRunner), so a
			// MultiAgentInvoke comes from another caller, whose prompt
			// must not drop a run a parent still waits on (SPEC I7, M5).
			x.enqueue(c, &orchInvoke{in: m.GetInput(), events: sender, wire: true})
			return
		}
		reply := make(chan orchReply, 1)
		root := x.sys.Root()
		x.sys.Go(func() {
			r := <-reply // every invocation is answered: a stop, a fault included
			if sender == nil {
				return // sent without a sender: nobody to tell
			}
			if r.err != nil {
				root.Send(sender, DefaultCodec().Encode(r.err))
				return
			}
			root.Send(sender, r.res)
		})
		x.enqueue(c, &orchInvoke{in: m.GetInput(), reply: reply}) // fresh: see above
	case *orchCancel:
		m.reply <- x.cancel(c)
	case *braidv1.MultiAgentStatusRequest: // from another actor (or process)
		if x.loadErr != nil {
			respond(c, DefaultCodec().Encode(x.loadErr))
			x.loadFailed(c)
			return
		}
		respond(c, x.shownResult())
	case *braidv1.MultiAgentCancel:
		respond(c, &braidv1.MultiAgentCancelled{WasRunning: x.cancel(c)})
	case *hooksDone, *braidv1.NodeReport, *localReport:
		if x.saving {
			// Handled once the save ended, in order: they change the run,
			// and what they do may depend on the save's outcome.
			x.deferred = append(x.deferred, m)
			return
		}
		x.runMessage(c, m)
	case *saveDone:
		x.saved(c, m)
	default:
		// Another owner's message, or no protocol's: its sender, if it
		// has one, is told instead of waiting for nothing (SPEC R2, R5).
		if c.Sender() != nil {
			respond(c, DefaultCodec().Encode(fmt.Errorf("%s %q: %w: %T", x.cfg.Kind, x.cfg.ID, ErrUnknownMessage, m)))
		}
	}
}

// runMessage handles the messages that change the run: the end of its
// invocation hooks, and its nodes' reports.
func (x *orchActor) runMessage(c actor.Context, msg any) {
	switch m := msg.(type) {
	case *hooksDone:
		x.hooksDone(c, m)
	case *braidv1.NodeReport:
		x.report(c, foreignReport(m), nil, nil, Locals{}, nil)
	case *localReport:
		x.report(c, m.rep, m.defs, m.local, m.locals, m.stops)
	}
}

// enqueue queues an invocation and starts it if none runs; an
// orchestrator that could not load its run answers it with that error.
func (x *orchActor) enqueue(c actor.Context, inv *orchInvoke) {
	if x.loadErr != nil {
		inv.answer(x.sys, orchReply{err: x.loadErr})
		x.loadFailed(c)
		return
	}
	x.queue = append(x.queue, inv)
	x.next(c)
}

// loadFailed: a call was answered with the activation's error. An
// orchestrator with a session then passivates, so that the next call
// loads the run again (a store that was down may be back; what is sent
// meanwhile waits for that activation); one without a session stays
// faulted (ErrOrchestratorFaulted), since no activation can bring its run
// back.
func (x *orchActor) loadFailed(c actor.Context) {
	if !x.dying && x.cfg.Session != nil {
		x.dying = true
		Passivate(c)
	}
}

// respond answers the sender of the message being received, if it has one.
func respond(c actor.Context, msg proto.Message) {
	if s := c.Sender(); s != nil {
		c.Send(s, msg)
	}
}

// Idle implements Passivator: no invocation runs or waits.
func (x *orchActor) Idle() bool { return x.cur == nil && len(x.queue) == 0 }

// JobsReturned implements JobWaiter: the invocation hooks and the node
// runs of this activation, which its stop cancelled (the nodes' runs are
// cut off, ErrCutOff), may still run; a node's executor may still save
// what it did, and the next activation carries the run on from the store,
// so it must not begin until they have returned (SPEC R4: a node cut off
// is not run again beside its cut-off run). The orchestrator's own save
// needs no wait: its stop waits for it (stopSave).
// No job begins after it: a node run that reaches its node's actor only
// now is not run (it is carried on, as the others are).
func (x *orchActor) JobsReturned() <-chan struct{} {
	x.acts.close()
	return x.acts.idleChan()
}

// AnswerFault implements FaultAnswerer: the invocation or status request
// whose handling panicked is answered with the fault, unless it is the
// current invocation or queued (the actor's stop answers those). A
// protobuf MultiAgentInvoke is queued before anything that can panic
// runs, and stays queued until it has begun, so the stop answers it.
func (x *orchActor) AnswerFault(c actor.Context, msg any, err *FaultError) {
	switch m := msg.(type) {
	case *orchInvoke:
		if m != x.cur && !slices.Contains(x.queue, m) {
			m.answer(x.sys, orchReply{err: err})
		}
	case *orchStatus:
		select {
		case m.reply <- orchReply{err: err}:
		default: // answered already
		}
	case *braidv1.MultiAgentStatusRequest, *braidv1.MultiAgentCancel:
		respond(c, DefaultCodec().Encode(err))
	}
}

// OwnMessage implements OwnMessages: the ends of its hooks and the
// reports of its nodes (child actors, which stop with it).
func (x *orchActor) OwnMessage(msg any) bool {
	switch msg.(type) {
	case *hooksDone, *braidv1.NodeReport, *localReport, *saveDone:
		return true
	}
	return false
}

// activate opens the nodes as child actors and loads the stored run.
func (x *orchActor) activate(c actor.Context) {
	cfg := x.cfg
	x.nodes = make(map[string]*nodeRec, len(cfg.Nodes))
	x.table = map[string]*routed{}
	x.byNode = map[string][]*routed{}
	x.shape = x.cfgShape
	if cfg.Session == nil && x.again {
		// Its run was nowhere but in the actor that stopped.
		x.loadErr = fmt.Errorf("%s %q: %w", cfg.Kind, cfg.ID, ErrOrchestratorFaulted)
		return
	}
	// The load runs in the actor's Started, which no message reaches: its
	// context ends when the orchestrator or the System is closed (both
	// Closes wait for the actor), or after LoadTimeout.
	ctx, cancel := context.WithTimeout(x.life, cfg.LoadTimeout)
	defer cancel()
	if cfg.Session != nil {
		owner, rec, err := cfg.Session.Open(ctx, persistence.KindMultiAgent, RecordID(cfg.OwnerPath, cfg.ID))
		if err != nil {
			x.loadErr = fmt.Errorf("restore %s %q: %w", cfg.Kind, cfg.ID, err)
			return
		}
		x.owner = owner
		if rec != nil {
			if err := x.restore(owner.Key(), rec.Data, rec.Messages); err != nil {
				x.loadErr = err
				return
			}
			if err := x.shapeErr(); err != nil {
				x.loadErr = err
				return
			}
		}
	}
	for _, on := range x.opened {
		n := x.nodes[on.id]
		if n == nil {
			n = &nodeRec{id: on.id, status: braidv1.NodeStatus_NODE_STATUS_PENDING, msgs: on.progress}
			x.nodes[on.id] = n
		}
		n.runner, n.path = on.runner, on.path
		na := &nodeActor{sys: x.sys, acts: &x.acts, id: on.id, path: on.path, runner: on.runner, hooks: cfg.Hooks, timeout: cfg.NodeTimeout, stored: cfg.Session != nil}
		n.pid = c.Spawn(actor.PropsFromProducer(func() actor.Actor { return na }, actor.WithDispatcher(x.sys.mailboxes()), actor.WithMailbox(newMailbox)))
		x.order = append(x.order, on.id)
		x.recs = append(x.recs, n)
	}
	for id := range x.nodes {
		if x.nodes[id].runner == nil {
			x.loadErr = fmt.Errorf("%w: %s %q: the stored run has node %q, which this %s does not", ErrTopology, cfg.Kind, cfg.ID, id, cfg.Kind)
			return
		}
	}
}

// next starts the next queued invocation, if none runs. An invocation
// stays queued until begin returns: if begin panics (a policy reset by a
// reload), the actor's stop answers it with the fault, as it answers the
// rest of the queue.
func (x *orchActor) next(c actor.Context) {
	for x.cur == nil && len(x.queue) > 0 {
		inv := x.queue[0]
		if inv.gone && inv.caller.Err() != nil {
			// Its caller left before its turn came (an activation that
			// waited for its store, say): dropped, as if still queued.
			x.queue[0] = nil
			x.queue = x.queue[1:]
			inv.answer(x.sys, orchReply{err: inv.caller.Err()})
			continue
		}
		err := x.begin(c, inv)
		x.queue[0] = nil
		x.queue = x.queue[1:]
		if err != nil {
			inv.answer(x.sys, orchReply{err: err})
		}
	}
}

// begin validates an invocation's input against the run (SPEC I7, M5)
// and starts it; on error nothing has changed.
func (x *orchActor) begin(c actor.Context, inv *orchInvoke) error {
	if x.stale {
		if err := x.reload(); err != nil {
			return err
		}
	}
	in := inv.in
	// The input is stored with the run (its task, a node's input), and a
	// stored input whose JSON is not JSON is a damaged record: refuse it
	// here, before anything is stored.
	if err := checkWireJSON(in.ProtoReflect()); err != nil {
		return fmt.Errorf("%w: %v", ErrBadTask, err)
	}
	for i, b := range in.GetMessages() {
		// Refused here, as an agent refuses it, not by the node that
		// would get it (a swarm's agents get the task as text, and would
		// run without it).
		// Its content blocks are the agents' to read.
		var m struct {
			Role    model.Role        `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		err := json.Unmarshal(b, &m)
		switch {
		case err != nil:
		case m.Role != model.RoleUser && m.Role != model.RoleAssistant:
			err = fmt.Errorf("role %q: want %q or %q", m.Role, model.RoleUser, model.RoleAssistant)
		case len(m.Content) == 0:
			err = errors.New("no content")
		}
		if err != nil {
			return fmt.Errorf("%w: message %d: %v", ErrBadTask, i, err)
		}
	}
	responses := make([]interrupt.Response, 0, len(in.GetResponses()))
	for _, w := range in.GetResponses() {
		r, err := ResponseFromWire(w)
		if err != nil {
			return err
		}
		responses = append(responses, r)
	}
	resume := in.GetResume() || len(responses) > 0
	interrupted := x.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED
	cutOff := x.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING // a run a crash cut off
	if inv.fresh && x.cfg.OwnerPath != "" && !resume && len(in.GetMessages()) > 0 {
		// The stored run is over for whoever gave this prompt (the
		// parent's run it belonged to ended): it is dropped. Only a
		// nested orchestrator takes fresh: a top-level one's waiting run
		// is its caller's, who must answer it (SPEC I7).
		interrupted, cutOff = false, false
	}
	// A refusal for the run's interrupt state may come from a stale run
	// (another writer saved since): behind tells which.
	switch {
	case interrupted && !resume:
		return x.behind(&interrupt.ContentError{Types: contentKinds(in)})
	case len(in.GetMessages()) > 0 && resume:
		return &interrupt.ContentError{Types: contentKinds(in), Mixed: true}
	case resume:
		if cutOff && x.cfg.OwnerPath == "" {
			// The run waits for no answer already given: an interrupt that
			// another writer's resume answered (its claim on the run, SPEC
			// S4) is not answered again. That writer may be running the
			// run still (the winner of two racing resumes, whose loser took
			// the stored run): a second claim would cut it off midway and
			// run its nodes again. A run a crash cut off goes on with
			// agent.Input{}. Only this actor's own answers (a later save of
			// its run failed) may be changed. A nested orchestrator's input
			// comes from its parent's run, which its parent claimed with a
			// save of its own before it launched the node (the loser of a
			// race is refused above it): the stored run it carries on, cut
			// off or loaded stale (NestedRunner.stale), is its parent's.
			for _, r := range responses {
				if e := x.table[r.ID]; e != nil && e.in.Answered && !x.answered[r.ID] {
					return x.behind(&interrupt.IDError{ID: r.ID, Err: interrupt.ErrNotInterrupted})
				}
			}
		}
		if interrupted && x.cfg.OwnerPath == "" {
			// Likewise a gate another writer answered whose node has
			// since gone past it (its executor asked something else): the
			// run waits for that, not for the gate. The winner of two
			// racing resumes may have stopped there, its run interrupted
			// again; the loser's retry of the gate's answer would claim
			// the run, and the winner's answer then conflict.
			for _, r := range responses {
				if e := x.table[r.ID]; e != nil && e.gate && e.in.Answered && !x.answered[r.ID] && x.pastGate(e) {
					return x.behind(&interrupt.IDError{ID: r.ID, Err: interrupt.ErrNotInterrupted})
				}
			}
		}
		active := interrupted || cutOff
		if err := interrupt.CheckResponses(responses, active && len(x.table) > 0, func(id string) bool { return x.table[id] != nil }); err != nil {
			return x.behind(err)
		}
	case cutOff && len(in.GetMessages()) == 0:
		// carry on the cut-off run
	case cutOff:
		return ErrIncompleteRun
	case len(in.GetMessages()) == 0:
		return ErrEmptyTask
	}
	if err := x.shapeErr(); err != nil { // a reload may have brought another's run
		return err
	}
	x.cur = inv
	x.began = time.Now()
	x.inflight, x.ranNodes = 0, false
	x.stopping, x.canceled = false, false
	x.resuming = resume || cutOff
	x.carrying = cutOff
	x.answers = responses
	x.phase = 1
	x.runHooks(c, 1)
	return nil
}

// pastGate reports whether the node of gate interrupt g has gone past
// it: its executor raised an interrupt after g that the run still holds.
func (x *orchActor) pastGate(g *routed) bool {
	for _, e := range x.byNode[g.node] {
		if !e.gate && e.node == g.node && e.seq > g.seq && x.table[e.in.ID] == e {
			return true
		}
	}
	return false
}

// apply applies an invocation whose BeforeInvocation hooks passed: a
// fresh run starts, or a resume's answers go to the interrupts' owners.
func (x *orchActor) apply() {
	x.routedTo = map[string]bool{}
	if !x.resuming {
		x.reset(x.cur.in)
	}
	if !x.carrying || x.usageBase == nil {
		x.usageBase = cloneUsage(x.usage)
	}
	for _, r := range x.answers {
		e := x.table[r.ID]
		e.in.Response, e.in.Answered = r.Value, true
		if x.answered == nil {
			x.answered = map[string]bool{}
		}
		x.answered[r.ID] = true
		n := x.nodes[e.node]
		x.touch(n)
		x.routedTo[e.node] = true
		if e.gate {
			for _, g := range n.gate {
				if g.GetId() == r.ID {
					g.Response = r.Value.Raw()
					if g.Response == nil {
						g.Response = []byte("null")
					}
				}
			}
			continue
		}
		n.resume = true
		if n.input == nil || !n.inputIsResume() {
			n.input = &braidv1.AgentInput{Resume: true}
		}
		n.input.Responses = slices.DeleteFunc(n.input.Responses, func(w *braidv1.InterruptResponse) bool { return w.GetInterruptId() == r.ID })
		n.input.Responses = append(n.input.Responses, ResponseToWire(r))
	}
	x.answers = nil
	x.status = braidv1.NodeStatus_NODE_STATUS_EXECUTING
}

func (n *nodeRec) inputIsResume() bool { return n.input.GetResume() }

// opens tells the statuses of a node whose current run started and has
// not ended.
func opens(s braidv1.NodeStatus) bool {
	return s == braidv1.NodeStatus_NODE_STATUS_EXECUTING || s == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED
}

// setStatus sets a node's status and keeps the count of open runs.
func (x *orchActor) setStatus(n *nodeRec, s braidv1.NodeStatus) {
	switch was := opens(n.status); {
	case was && !opens(s):
		x.open--
	case !was && opens(s):
		x.open++
	}
	n.status = s
}

// shapeErr returns ErrTopology if the stored run waits for a resume (or
// was cut off) and an orchestrator of another Shape, or with a node of
// another kind, saved it. A record of an earlier build keeps the Shape
// without the nodes' kinds: it is checked against the Shape alone.
func (x *orchActor) shapeErr() error {
	pending := x.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || x.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING
	if !pending || x.shape == "" || x.shape == x.cfgShape || x.shape == x.legacy {
		return nil
	}
	if changed := kindChanges(x.shape, x.cfg); changed != "" {
		return fmt.Errorf("%w: %s %q: %s; an executor of another kind cannot carry the stored run on: finish it with the %s that saved it, or use another session",
			ErrTopology, x.cfg.Kind, x.cfg.ID, changed, x.cfg.Kind)
	}
	return fmt.Errorf("%w: %s %q: the stored run was saved by a %s of another shape (%s), and this one is %s; finish it with the %s that saved it, or use another session",
		ErrTopology, x.cfg.Kind, x.cfg.ID, x.cfg.Kind, clipShape(x.shape), clipShape(recordShape(x.cfg)), x.cfg.Kind)
}

// kindsLabel introduces the nodes' kinds in the Shape a run's record
// keeps (recordShape).
const kindsLabel = "node kinds "

// kindsPrefix is what comes before the nodes' kinds in recordShape.
func kindsPrefix(shape string) string {
	if shape == "" {
		return kindsLabel
	}
	return shape + "; " + kindsLabel
}

// recordShape is the Shape of cfg as a run's record keeps it (before
// storedShape): cfg.Shape, then every node's id and kind, quoted and
// sorted by id, as in `; node kinds "a"="agent" "b"="graph"`. Earlier
// builds kept cfg.Shape alone; the label tells the two forms apart.
func recordShape(cfg *OrchestratorConfig) string {
	pairs := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		pairs[i] = strconv.Quote(n.ID) + "=" + strconv.Quote(string(KindOf(n.Node)))
	}
	slices.Sort(pairs)
	return kindsPrefix(cfg.Shape) + strings.Join(pairs, " ")
}

// kindChanges says which nodes are of another kind in cfg than in
// stored, a recordShape text, when nothing else differs; "" when
// something else does, or stored is a digest.
func kindChanges(stored string, cfg *OrchestratorConfig) string {
	rest, ok := strings.CutPrefix(stored, kindsPrefix(cfg.Shape))
	if !ok {
		return ""
	}
	was := map[string]string{}
	for rest != "" {
		var pair [2]string
		for i := range pair {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return ""
			}
			pair[i], _ = strconv.Unquote(q)
			rest = rest[len(q):]
			if i == 0 {
				if rest, ok = strings.CutPrefix(rest, "="); !ok {
					return ""
				}
			}
		}
		was[pair[0]] = pair[1]
		rest = strings.TrimPrefix(rest, " ")
	}
	if len(was) != len(cfg.Nodes) {
		return ""
	}
	var changes []string
	for _, n := range cfg.Nodes {
		k, ok := was[n.ID]
		switch {
		case !ok:
			return ""
		case k != string(KindOf(n.Node)):
			changes = append(changes, fmt.Sprintf("node %q was of kind %q when the stored run was saved, and is of kind %q here", n.ID, k, KindOf(n.Node)))
		}
	}
	slices.Sort(changes)
	return strings.Join(changes, "; ")
}

// maxShapeText is the longest Shape a run's record keeps as it is; a
// longer one is kept as its digest, so that a save, which writes the
// record's data, costs the same for a graph of ten nodes or of ten
// thousand (SPEC S1).
const maxShapeText = 1024

// storedShape is the form of a Shape a run's record keeps: the Shape
// itself, or "sha256:" and the hex SHA-256 of a Shape longer than
// maxShapeText. Two Shapes are the same when their stored forms are, and
// storedShape of a stored form is itself.
func storedShape(s string) string {
	if len(s) <= maxShapeText {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// clipShape shortens a Shape for an error message.
func clipShape(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// reset starts a fresh run of task.
func (x *orchActor) reset(task *braidv1.AgentInput) {
	x.shape = x.cfgShape
	x.task = task
	x.rewrite = true
	x.table = map[string]*routed{}
	clear(x.answered)
	x.byNode = map[string][]*routed{}
	x.raised, x.dropped = nil, 0
	x.held = nil
	x.results = nil
	x.executed = nil
	x.open = 0
	x.forgetUnsaved()
	x.duration = 0
	x.message = ""
	x.usage = &braidv1.Usage{}
	x.cutStop = false
	if sp, ok := x.cfg.Policy.(StatefulPolicy); ok {
		sp.ResetPolicy()
	}
	for _, n := range x.nodes {
		if n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
			n.unfinished = true // a run cut off by a crash, dropped (orchInvoke.fresh)
		}
		n.status, n.result, n.input, n.inner, n.gate, n.resume, n.recover = braidv1.NodeStatus_NODE_STATUS_PENDING, nil, nil, false, nil, false, false
		// A fresh run has no starts or ends yet: the policy's "ended after
		// its last start" and "ran before" (reset on revisit) speak of this
		// run only, as after a restore. The sequence itself goes on, and so
		// does n.run (a late report of a run sent before is not this run's).
		n.count, n.dur, n.usage, n.first, n.executed, n.dirty = 0, 0, nil, 0, nil, false
		n.started, n.ended = 0, 0
	}
	x.dirty = x.dirty[:0]
}

// runHooks runs the invocation hooks of phase on a goroutine.
func (x *orchActor) runHooks(c actor.Context, phase int) {
	h := x.cfg.Hooks
	self, root := c.Self(), x.sys.Root()
	var res *braidv1.MultiAgentResult
	if phase == 3 {
		res = x.result()
	}
	resuming := x.resuming
	ctx := context.Background()
	if x.cur != nil {
		ctx = WithCallerValues(ctx, x.cur.caller)
	}
	// The hooks are one of the System's jobs, which its Close waits for:
	// their context ends when the actor stops (Stopping), so a hook that
	// watches it returns then.
	ctx, stop := context.WithCancel(ctx)
	x.hooksStop = stop
	x.acts.add(false)
	x.sys.Go(func() {
		defer x.acts.done()
		defer stop()
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("invocation hook panicked: %v", r)
				}
			}()
			if h == nil {
				return
			}
			if phase == 1 {
				if e := h.BeforeInvocation(ctx, resuming); e != nil {
					err = fmt.Errorf("BeforeMultiAgentInvocation hook: %w", e)
				}
			} else if e := h.AfterInvocation(ctx, res); e != nil {
				err = fmt.Errorf("AfterMultiAgentInvocation hook: %w", e)
			}
		}()
		root.Send(self, &hooksDone{phase: phase, err: err})
	})
}

func (x *orchActor) hooksDone(c actor.Context, m *hooksDone) {
	if x.cur == nil || m.phase != x.phase {
		return
	}
	if m.phase == 3 {
		x.reply(c, m.err)
		return
	}
	if m.err != nil {
		x.fail(c, m.err)
		return
	}
	if x.canceled {
		x.cancelledBeforeRun(c)
		return
	}
	x.apply()
	x.phase = 2
	var starts []NodeStart
	stopped := false
	if !x.resuming {
		s, err := x.policyBegin()
		if err != nil {
			x.fail(c, err)
			return
		}
		starts = s
	} else {
		// Only the owners of the answered interrupts run again (SPEC M5),
		// with the runs a crash cut off and the ready nodes held back.
		for _, id := range x.order {
			n := x.nodes[id]
			if n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
				n.recover = true
				starts = append(starts, NodeStart{Node: id, Input: n.input, Local: n.local})
			} else if x.routedTo[id] {
				// Partial answers go on too: an agent keeps them and stops
				// again for the rest, a nested orchestrator routes them on.
				// A node whose gate stopped it before its executor ran
				// runs as its gated launch would have: reset if that one
				// was (a revisit, ResetOnRevisit).
				starts = append(starts, NodeStart{Node: id, Input: n.input, Local: n.local, Reset: n.reset && !n.inner})
			}
		}
		// A run cut off while it scheduled nothing new (an interrupt
		// waits, SPEC M4), carried on without answers, finishes its
		// cut-off nodes and schedules nothing new either.
		stopped = x.carrying && x.cutStop && len(x.routedTo) == 0
		if !stopped {
			starts = append(starts, x.held...)
			x.held = nil
		}
	}
	x.launch(c, starts, func(bool) { x.settle(c) })
	if stopped {
		x.stopping = true // after the cut-off nodes were sent on
	}
}

// fail ends the invocation with err before any node ran; the run is as
// it was (a resume's answers are not applied: they can be given again).
func (x *orchActor) fail(c actor.Context, err error) {
	inv, ran := x.cur, x.phase == 2
	x.cur, x.phase, x.answers = nil, 0, nil
	if ran {
		x.status = x.aggregate()
	}
	inv.answer(x.sys, orchReply{err: err})
	x.next(c)
}

// cancelledBeforeRun ends an invocation cancelled while its
// BeforeInvocation hooks ran: no node runs. A resume is not applied (the
// run is as it was, its interrupts still to answer); a fresh run ends
// CANCELLED with no results; either way the caller gets the run as it
// then stands.
func (x *orchActor) cancelledBeforeRun(c actor.Context) {
	if !x.resuming {
		x.reset(x.cur.in)
		x.status = braidv1.NodeStatus_NODE_STATUS_CANCELLED
	}
	x.answers = nil
	x.phase = 3
	x.runHooks(c, 3)
}

// launch sends the runs of starts, after saving that they started (a
// crash mid-run then knows where each node's executor stood), then calls
// then, with whether it saved the run (at once, false, when nothing is
// launched).
func (x *orchActor) launch(c actor.Context, starts []NodeStart, then func(saved bool)) {
	var runs []*braidv1.NodeRun
	var was []braidv1.NodeStatus // the runs' nodes' statuses before
	for _, s := range starts {
		n := x.nodes[s.Node]
		if n == nil {
			x.stop(fmt.Sprintf("%s %q: no node %q", x.cfg.Kind, x.cfg.ID, s.Node))
			break
		}
		if s.Input != nil && x.cfg.Session != nil {
			// Stored with the run, like a node's result (see nodeActor).
			if err := checkWireJSON(s.Input.ProtoReflect()); err != nil {
				x.stop(fmt.Sprintf("%s %q: the input for node %q holds bytes that are not JSON: %v", x.cfg.Kind, x.cfg.ID, s.Node, err))
				break
			}
		}
		if x.stopping {
			x.held = append(x.held, s)
			continue
		}
		if n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING && !n.recover {
			continue // runs already; its policy asked twice
		}
		// A resume (of its gate or its executor), or a run a crash cut
		// off, carries on a run that started within the limits: not a new
		// execution, and not refused by the timeout either (the run's
		// other nodes may have reached a limit since).
		carried := n.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED || n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING
		// The limit counts the executions started: those ended and those
		// open (running, or waiting for answers), so that nodes started
		// together do not pass it.
		if max := x.cfg.MaxNodeExecutions; max > 0 && !carried && len(x.executed)+x.open >= max {
			x.stop(fmt.Sprintf("Max node executions reached: %d", max))
			break
		}
		// The time the run has executed: summed over its invocations, so
		// the time it waited for answers between them is not counted.
		if t := x.cfg.ExecutionTimeout; t > 0 && !carried && x.duration+time.Since(x.began) > t {
			x.stop(fmt.Sprintf("Execution timed out: %gs", t.Seconds()))
			break
		}
		x.seq++
		n.run++
		if !carried {
			// A new run. A carried-on run keeps its start: an edge whose
			// source ended since it started is taken once it has ended
			// (RunView.Started).
			n.started = x.seq
		}
		var unfinishedSince *int64
		if !n.recover {
			n.base = n.msgs
			n.reset = s.Reset && !n.resume
			if !n.resume && !n.inner {
				// A prompt (a node whose executor waits, relaunched for
				// its gate's answer alone, is given none): the executor
				// may still hold an invocation begun by a run that is
				// over (NodeRun.unfinished_since says where it began).
				// This run's invocation begins after the reset, or where
				// that one is taken back to, or else here.
				unfinishedSince = n.since
				switch {
				case n.reset:
					since := int64(-1)
					n.since = &since
				case n.unfinished && n.since != nil && *n.since <= n.base:
				default:
					since := n.base
					n.since = &since
				}
			}
		}
		n.local = nil
		if !n.resume {
			n.input, n.local = s.Input, s.Local
		}
		if n.recover && n.unfinished && !n.input.GetResume() && len(n.input.GetMessages()) > 0 {
			// A prompt's run cut off by a crash, given while the executor
			// may have held a dead run's invocation: the crash may have
			// come before the runner dropped it, which it then does.
			unfinishedSince = n.since
		}
		was = append(was, n.status)
		x.setStatus(n, braidv1.NodeStatus_NODE_STATUS_EXECUTING)
		x.touch(n)
		runs = append(runs, &braidv1.NodeRun{NodeId: n.id, Run: n.run, Input: n.input, Gate: n.gate, Resume: n.resume,
			Recover: n.recover, Base: n.base, ResetExecutor: n.reset, UnfinishedSince: unfinishedSince})
		n.resume, n.recover = false, false
		x.inflight++
	}
	if len(runs) == 0 {
		then(false)
		return
	}
	x.save(c, persistence.SaveMessage, func(err error) {
		if err != nil {
			// Nothing is sent: the runs did not start, and the invocation
			// ends with the error once the running nodes have reported.
			for i, r := range runs {
				x.setStatus(x.nodes[r.GetNodeId()], was[i])
				x.inflight--
			}
			x.abort(err)
		} else {
			x.send(c, runs)
		}
		then(err == nil)
	})
}

// send sends the runs launch saved to their nodes. A Cancel that came
// while that save ran found their nodes EXECUTING but not yet running
// (a node not running ignores a cancel): it is sent again behind them.
func (x *orchActor) send(c actor.Context, runs []*braidv1.NodeRun) {
	x.ranNodes = true
	for _, r := range runs {
		n := x.nodes[r.GetNodeId()]
		var events *actor.PID
		var caller context.Context
		wire := false
		if x.cur != nil {
			events, caller, wire = x.cur.events, x.cur.caller, x.cur.wire
		}
		if events != nil || n.local != nil || hasValues(caller) {
			c.Send(n.pid, &localRun{run: r, events: events, wire: wire, local: n.local, caller: caller})
			continue
		}
		c.Send(n.pid, r)
	}
	if x.canceled {
		for _, r := range runs {
			c.Send(x.nodes[r.GetNodeId()].pid, &nodeCancel{})
		}
	}
}

// DefaultCancelled is the message of a node a Cancel stopped.
const DefaultCancelled = "run cancelled"

// cancel handles Cancel.
func (x *orchActor) cancel(c actor.Context) bool {
	if x.cur == nil || x.phase == 3 {
		return false
	}
	x.canceled, x.stopping = true, true
	for _, id := range x.order {
		if n := x.nodes[id]; n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
			c.Send(n.pid, &nodeCancel{})
		}
	}
	return true
}

// policyBegin is Policy.Begin with a panic of the policy's contained
// (SPEC R6): the invocation fails with an error that carries it, and
// nothing has run.
func (x *orchActor) policyBegin() (starts []NodeStart, err error) {
	defer func() {
		if r := recover(); r != nil {
			starts, err = nil, fmt.Errorf("%s %q: its policy panicked: %v", x.cfg.Kind, x.cfg.ID, r)
		}
	}()
	return x.cfg.Policy.Begin(&RunView{x: x})
}

// policyNext is Policy.Next with a panic of the policy's contained (SPEC
// R6; a graph's edge conditions are its user's code): the run stops FAILED
// with a message that names the panic, the nodes still running end as
// after any stop, and once the run is saved the invocation fails with an
// error that carries the panic. The actor and what it holds go on.
func (x *orchActor) policyNext(node string) (starts []NodeStart, stop string) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("%s %q: its policy panicked after node %q ended: %v", x.cfg.Kind, x.cfg.ID, node, r)
			starts, stop = nil, err.Error()
			if x.runErr == nil {
				x.runErr = err
			}
		}
	}()
	return x.cfg.Policy.Next(&RunView{x: x}, node)
}

// stop ends the run FAILED with msg once the running nodes finished.
func (x *orchActor) stop(msg string) {
	if x.message == "" {
		x.message = msg
	}
	x.stopping = true
}

// abort ends the invocation with an error it cannot recover from (a
// failed save). What the actor holds may then differ from the store (the
// store is behind it, or another writer is ahead: ErrConflict), so the
// next invocation starts from the stored run (reload).
func (x *orchActor) abort(err error) {
	x.stopping = true
	if x.saveErr == nil {
		x.saveErr = err
	}
	x.stale = true
	x.lostTo(err)
}

// lostTo forgets the answers this actor gave when err says another
// writer saved the run since (a *persistence.ConflictError): the answers
// in the stored run are that writer's.
func (x *orchActor) lostTo(err error) {
	var ce *persistence.ConflictError
	if errors.As(err, &ce) {
		clear(x.answered)
	}
}

// foreignReport makes a report that came as a protobuf message (from
// another actor or process, unlike the node actors' local reports, which
// nodeActor checked) safe to keep: a missing result, one whose status is
// not one a run ends with, an INTERRUPTED one without an unanswered
// interrupt (the run would wait for answers no one can give), one with an
// interrupt that is not one (its gate's included), or one whose bytes are
// not JSON, becomes a failed result, and its gate is dropped.
func foreignReport(m *braidv1.NodeReport) *braidv1.NodeReport {
	err := errors.New("the report has no result")
	if res := m.GetResult(); res != nil {
		switch res.GetStatus() {
		case braidv1.NodeStatus_NODE_STATUS_COMPLETED, braidv1.NodeStatus_NODE_STATUS_FAILED,
			braidv1.NodeStatus_NODE_STATUS_CANCELLED, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
			err = checkWireJSON(res.ProtoReflect())
		default:
			err = fmt.Errorf("the report's result has status %s, which no run ends with", res.GetStatus())
		}
		if err == nil {
			err = checkReportInterrupts(m)
		}
	}
	if err == nil {
		return m
	}
	c := proto.Clone(m).(*braidv1.NodeReport)
	c.Result = failedResult(m.GetNodeId(), fmt.Errorf("node %q: %v", m.GetNodeId(), err))
	c.Gate, c.Gated = nil, false
	return c
}

// checkReportInterrupts checks the interrupts of a foreign report: every
// one decodes, an INTERRUPTED result lists at least one, and those it
// lists are unanswered (a result lists the node's unanswered interrupts).
func checkReportInterrupts(m *braidv1.NodeReport) error {
	for _, w := range m.GetGate() {
		if _, err := InterruptFromWire(w); err != nil {
			return fmt.Errorf("gate: %w", err)
		}
	}
	res := m.GetResult()
	for _, w := range res.GetInterrupts() {
		in, err := InterruptFromWire(w)
		if err != nil {
			return err
		}
		if in.Answered {
			return fmt.Errorf("the report's result lists interrupt %s, which is answered", in.ID)
		}
	}
	if res.GetStatus() == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED && len(res.GetInterrupts()) == 0 {
		return errors.New("the report's result is INTERRUPTED without an interrupt")
	}
	return nil
}

// report handles a node's report of a run. Only the running invocation
// waits for reports (its nodes run while it is in phase 2); any other
// report (of a run this activation did not send, or sent by another actor
// when nothing waits for it, such as for a node of a run a crash cut off)
// is dropped.
func (x *orchActor) report(c actor.Context, m *braidv1.NodeReport, defs []Deferred, local any, locals Locals, stops []*braidv1.MultiAgentEvent) {
	n := x.nodes[m.GetNodeId()]
	if n == nil || m.GetRun() != n.run || n.status != braidv1.NodeStatus_NODE_STATUS_EXECUTING || x.cur == nil || x.phase != 2 {
		return // a report of a run this activation did not send, or that nothing waits for
	}
	x.joint = append(x.joint, defs...) // their saves are taken and committed with the next save
	x.inflight--
	prev := n.result // the node's result before this report (dropMoot)
	x.touch(n)
	res := m.GetResult()
	if x.canceled && res.GetStatus() != braidv1.NodeStatus_NODE_STATUS_COMPLETED && res.GetStatus() != braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		// A nested Graph or Swarm's result stays the node's (its nodes'
		// statuses say what the Cancel stopped).
		res = &braidv1.NodeResult{NodeId: n.id, Status: braidv1.NodeStatus_NODE_STATUS_CANCELLED, Message: DefaultCancelled,
			DurationNs: res.GetDurationNs(), Usage: res.GetUsage(), Result: res.GetResult()}
	}
	x.seq++
	n.ended = x.seq
	if p := m.GetMessages(); p >= 0 {
		n.msgs = p
	}
	if len(m.GetGate()) > 0 {
		n.gate = m.GetGate()
	}
	for _, g := range m.GetGate() {
		x.register(g, n.id, true)
	}
	if !m.GetGated() {
		n.dur += res.GetDurationNs()
		addUsage(x.usage, res.GetUsage())
		if n.usage == nil {
			n.usage = &braidv1.Usage{}
		}
		addUsage(n.usage, res.GetUsage())
		if res.GetStatus() != braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
			// An execution is a run to its end: one interrupted and then
			// resumed is one (Strands' node history).
			n.executed = append(n.executed, x.seq)
			n.count++
			x.executed = append(x.executed, n.id)
		}
	}
	if n.result == nil {
		x.results = append(x.results, n.id)
		n.first = x.seq
	}
	res.ExecutionCount = n.count
	res.DurationNs = n.dur
	if n.usage != nil {
		res.Usage = cloneUsage(n.usage) // like its time, summed over its runs
	}
	// An INTERRUPTED result carries interrupts the store does not have
	// yet: until a save holds them, Status shows the node as it was and
	// its NodeStop waits (SPEC I9; the save follows at once, reported).
	unsaved := res.GetStatus() == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED && x.owner != nil
	if unsaved {
		n.unsaved, n.before, n.stops = true, n.result, stops
		x.unsaved = append(x.unsaved, n)
	}
	n.result, n.localRes, n.locals = res, local, locals
	x.setStatus(n, res.GetStatus())
	n.unfinished = n.status != braidv1.NodeStatus_NODE_STATUS_COMPLETED
	if x.cur.events != nil && !unsaved {
		for _, ev := range stops {
			x.cur.emit(x.sys, ev)
		}
		x.emitStop(n, res)
		if h := res.GetHandoff(); h != nil && res.GetStatus() == braidv1.NodeStatus_NODE_STATUS_COMPLETED {
			x.cur.emit(x.sys, &braidv1.MultiAgentEvent{NodePath: n.path, Event: &braidv1.MultiAgentEvent_Handoff{Handoff: h.GetTo()}})
		}
	}
	if n.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		n.inner = !m.GetGated()
		if n.inner {
			n.input = &braidv1.AgentInput{Resume: true} // the next resume's answers
		}
		for _, w := range res.GetInterrupts() {
			x.register(w, n.id, m.GetGated())
		}
		if n.inner {
			x.dropMoot(n, res.GetInterrupts(), prev, res)
		}
		x.stopping = true // SPEC M4: nothing new from here on
	} else {
		// The node finished: its interrupts, its gate's included, are done
		// (SPEC M6: an answered gate lasts until the node completes).
		x.dropNode(n.id)
		n.gate, n.inner, n.input = nil, false, nil
		starts, stop := x.policyNext(n.id)
		if stop != "" {
			x.stop(stop)
		}
		x.launch(c, starts, func(saved bool) {
			if saved {
				x.settle(c) // the launch's save holds the report
				return
			}
			x.reported(c)
		})
		return
	}
	x.reported(c)
}

// reported ends a report's handling: while other nodes run, the run is
// saved (the report's result is not lost to a crash), then the run
// settles if none does.
func (x *orchActor) reported(c actor.Context) {
	if x.inflight == 0 {
		x.settle(c)
		return
	}
	x.save(c, persistence.SaveToolResult, func(err error) {
		if err != nil {
			x.abort(err)
		}
		x.settle(c)
	})
}

// register records an interrupt of node in the run's table. A gate
// interrupt reported without its answer keeps the one the table has (the
// orchestrator owns it, SPEC M6). An executor's interrupt is as the
// executor reports it: one it lists waits for an answer (SPEC I8), even
// under the id of an interrupt it was answered before and has since
// used up (a tool use id a model gave again in a later cycle).
func (x *orchActor) register(w *braidv1.Interrupt, node string, gate bool) {
	in, err := InterruptFromWire(w)
	if err != nil {
		return
	}
	if e := x.table[in.ID]; e != nil {
		if !in.Answered && gate {
			in.Response, in.Answered = e.in.Response, e.in.Answered
		}
		if e.node != node {
			x.byNode[node] = append(x.byNode[node], e)
		}
		e.in, e.node, e.gate = in, node, gate
		return
	}
	x.seq++
	e := &routed{in: in, node: node, gate: gate, seq: x.seq}
	x.table[in.ID] = e
	x.raised = append(x.raised, e)
	x.byNode[node] = append(x.byNode[node], e)
}

// dropMoot removes from the table the interrupts of node n's executor
// that its report no longer lists. The executor lists every interrupt it
// still waits for (SPEC I8), so an unanswered one it dropped is moot (its
// tool ran without the answer: agent, toolCycle.dropMoot). An answered
// one goes too unless the executor still holds it (stillHolds, by its
// result before the report, prev, and now, cur): re-answering it there
// updates the answer, as on the executor alone (SPEC I7, last line); one
// the executor no longer holds would be refused by it after the run had
// gone on, so the run refuses it, with nothing changed (SPEC I7). Gate
// interrupts are the orchestrator's own and stay (SPEC M6).
func (x *orchActor) dropMoot(n *nodeRec, listed []*braidv1.Interrupt, prev, cur *braidv1.NodeResult) {
	keep := make(map[string]bool, len(listed))
	for _, w := range listed {
		keep[w.GetId()] = true
	}
	for _, e := range x.byNode[n.id] {
		if e.node != n.id || e.gate || keep[e.in.ID] || x.table[e.in.ID] != e {
			continue
		}
		if e.in.Answered {
			owner, own := interrupt.SplitOwner(e.in.ID)
			if stillHolds(prev, cur, n.path, owner, own) {
				continue
			}
		}
		delete(x.table, e.in.ID)
		x.dropped++
	}
}

// stillHolds reports whether the executor at path, whose result was prev
// before its last run and is cur after it, still holds the answered
// interrupt own of the owner at path owner (at path or below it). An
// agent holds the answered interrupts of its interrupted cycle until the
// cycle ends (SPEC A7), and a cycle that ends appends its messages, so
// the agent holds them while its history has not grown; those of a model
// call's gate go when the gate passes, before the model turn, so it holds
// them while it still stands at the gate. A nested
// orchestrator holds those of its nodes that hold them, and its own gate
// interrupts until the gated node finishes (SPEC M6). Both results must
// be INTERRUPTED runs of the same execution (a node run to its end
// between them was started afresh).
func stillHolds(prev, cur *braidv1.NodeResult, path, owner, own string) bool {
	const interrupted = braidv1.NodeStatus_NODE_STATUS_INTERRUPTED
	if prev.GetStatus() != interrupted || cur.GetStatus() != interrupted || prev.GetExecutionCount() != cur.GetExecutionCount() {
		return false
	}
	if a := cur.GetAgent(); a != nil {
		// A model call's gate (BeforeModelCall) that passes clears the
		// agent's interrupts before its model turn, whose tool cycle adds
		// nothing to the history until it ends: the agent holds a gate's
		// answers only while it still stands at a gate.
		p := prev.GetAgent()
		return owner == path && p != nil && p.GetHistory() == a.GetHistory() && modelGate(own) == atModelGate(cur)
	}
	m, pm := cur.GetMultiAgent(), prev.GetMultiAgent()
	if m == nil || pm == nil {
		return false
	}
	if owner == path {
		for _, r := range m.GetResults() {
			if strings.HasPrefix(own, "v1:before_node_call:"+interrupt.NameUUID(r.GetNodeId())+":") {
				return r.GetStatus() == interrupted
			}
		}
		return false
	}
	rest, ok := strings.CutPrefix(owner, path+"/")
	if !ok {
		return false
	}
	node, _, _ := strings.Cut(rest, "/")
	return stillHolds(nodeResultOf(pm, node), nodeResultOf(m, node), path+"/"+node, owner, own)
}

// modelGate reports whether an agent's own interrupt id is one of a
// model call's gate (BeforeModelCall).
func modelGate(own string) bool { return strings.HasPrefix(own, "v1:before_model_call:") }

// atModelGate reports whether an agent's INTERRUPTED result stopped at a
// model call's gate: the interrupts it lists are the gate's (an agent's
// interrupt state holds one stop's kind only, SPEC A7).
func atModelGate(r *braidv1.NodeResult) bool {
	for _, w := range r.GetInterrupts() {
		if _, own := interrupt.SplitOwner(w.GetId()); modelGate(own) {
			return true
		}
	}
	return false
}

// nodeResultOf is the result of node in r (nil when it has none).
func nodeResultOf(r *braidv1.MultiAgentResult, node string) *braidv1.NodeResult {
	for _, nr := range r.GetResults() {
		if nr.GetNodeId() == node {
			return nr
		}
	}
	return nil
}

// dropNode removes node's interrupts from the table; the raise order
// list is compacted once most of it is dropped, so a run of n interrupts
// costs O(n) in all.
func (x *orchActor) dropNode(node string) {
	es := x.byNode[node]
	if len(es) == 0 {
		return
	}
	for _, e := range es {
		if e.node == node && x.table[e.in.ID] == e {
			delete(x.table, e.in.ID)
			x.dropped++
		}
	}
	delete(x.byNode, node)
	if x.dropped*2 < len(x.raised) {
		return
	}
	kept := x.raised[:0]
	for _, e := range x.raised {
		if x.table[e.in.ID] == e {
			kept = append(kept, e)
		}
	}
	clear(x.raised[len(kept):])
	x.raised, x.dropped = kept, 0
}

// ownerOf is the path of the node that owns interrupt id ("" when none).
func (x *orchActor) ownerOf(id string) string {
	if e := x.table[id]; e != nil {
		if n := x.nodes[e.node]; n != nil {
			return n.path
		}
	}
	return ""
}

// settle ends the invocation once no node runs.
func (x *orchActor) settle(c actor.Context) {
	if x.phase != 2 || x.inflight > 0 {
		return
	}
	x.duration += time.Since(x.began)
	if x.canceled {
		x.held = nil // a cancelled run does not carry on
	}
	x.status = x.aggregate()
	x.phase = 3
	x.runHooks(c, 3)
}

// aggregate is the run's status (SPEC M2): the worst of its nodes, FAILED
// when a limit stopped it, INTERRUPTED while interrupts wait.
func (x *orchActor) aggregate() braidv1.NodeStatus {
	if x.message != "" {
		return braidv1.NodeStatus_NODE_STATUS_FAILED
	}
	worst := braidv1.NodeStatus_NODE_STATUS_COMPLETED
	rank := func(s braidv1.NodeStatus) int {
		switch s {
		case braidv1.NodeStatus_NODE_STATUS_FAILED:
			return 3
		case braidv1.NodeStatus_NODE_STATUS_INTERRUPTED:
			return 2
		case braidv1.NodeStatus_NODE_STATUS_CANCELLED:
			return 1
		}
		return 0
	}
	for _, id := range x.results {
		if s := x.nodes[id].status; rank(s) > rank(worst) {
			worst = s
		}
	}
	if x.canceled && worst == braidv1.NodeStatus_NODE_STATUS_COMPLETED {
		return braidv1.NodeStatus_NODE_STATUS_CANCELLED
	}
	return worst
}

// reply answers the invocation after saving it (durably: someone is told).
func (x *orchActor) reply(c actor.Context, hookErr error) {
	inv := x.cur
	point := persistence.SaveInvocation
	if x.status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED {
		point = persistence.SaveInterrupt
	}
	if x.saveErr != nil {
		x.replied(c, inv, hookErr, x.saveErr)
		return
	}
	x.save(c, point, func(err error) {
		if err != nil {
			// As after any failed save (abort): the store is behind the
			// actor, or another writer ahead of it (ErrConflict), so the
			// next invocation starts from the stored run.
			x.stale = true
			x.lostTo(err)
		}
		x.replied(c, inv, hookErr, err)
	})
}

// replied answers the invocation once reply's save ended with saveErr.
func (x *orchActor) replied(c actor.Context, inv *orchInvoke, hookErr, saveErr error) {
	err := saveErr
	if err == nil {
		err = x.runErr
	} else if !x.ranNodes && x.owner != nil && conflictsOn(err, x.owner.Key()) {
		err = &staleStartError{err: err}
	}
	x.saveErr, x.runErr = nil, nil
	x.cur, x.phase = nil, 0
	switch {
	case err != nil:
		inv.answer(x.sys, orchReply{err: err})
	case hookErr != nil:
		inv.answer(x.sys, orchReply{err: hookErr})
	default:
		res := x.result()
		// Interrupt events only now, after the save (SPEC M12, I9).
		for _, in := range res.GetInterrupts() {
			inv.emit(x.sys, &braidv1.MultiAgentEvent{NodePath: x.ownerOf(in.GetId()), Event: &braidv1.MultiAgentEvent_Interrupt{Interrupt: in}})
		}
		var locals Locals
		for _, id := range x.results {
			n := x.nodes[id]
			locals.addResult(n.result, n.localRes)
			locals.merge(n.locals)
		}
		inv.answer(x.sys, orchReply{res: res, locals: locals})
	}
	x.next(c)
}

// result is the run as it stands, as a value that aliases nothing the
// actor changes later (the TS defect of results that alias live state).
func (x *orchActor) result() *braidv1.MultiAgentResult {
	r := &braidv1.MultiAgentResult{Status: x.status, Message: x.message, Usage: cloneUsage(x.usage), InvocationUsage: subUsage(x.usage, x.usageBase),
		DurationNs: int64(x.duration), ExecutionOrder: append([]string(nil), x.executed...), ExecutionCount: int64(len(x.executed)),
		Progress: x.seq}
	if r.Status == braidv1.NodeStatus_NODE_STATUS_UNSPECIFIED {
		r.Status = braidv1.NodeStatus_NODE_STATUS_PENDING
	}
	// A node result is never changed once stored (a new run stores a new
	// one), so the results are shared, not copied.
	r.Results = make([]*braidv1.NodeResult, 0, len(x.results))
	for _, id := range x.results {
		r.Results = append(r.Results, x.nodes[id].result)
	}
	if r.Status == braidv1.NodeStatus_NODE_STATUS_FAILED {
		// A FAILED run is over (SPEC M2 ranks it above INTERRUPTED): it
		// takes no responses, so it lists no interrupt a caller could try
		// to answer. The node results still show which nodes waited.
		return r
	}
	for _, e := range x.raised {
		if x.table[e.in.ID] == e && !e.in.Answered {
			r.Interrupts = append(r.Interrupts, InterruptToWire(e.in))
		}
	}
	return r
}

// shownResult is the run as Status shows it: result, with every node that
// runs shown running (an earlier run's outcome, its answered interrupts
// included, is not what it does now; a node in its first run is listed
// too, after the nodes with results), and less what no save holds yet
// (SPEC I9): a node whose INTERRUPTED report is not saved is shown as it
// was before it, running, its interrupts are not listed, and a run that
// is INTERRUPTED only by such nodes is shown EXECUTING (its invocation
// has not answered). A caller that answers what Status lists answers
// interrupts the store has.
func (x *orchActor) shownResult() *braidv1.MultiAgentResult {
	r := x.result()
	r.Results = r.Results[:0]
	for _, id := range x.results {
		switch n := x.nodes[id]; {
		case n.unsaved:
			r.Results = append(r.Results, running(id, n.before))
		case n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING:
			r.Results = append(r.Results, running(id, n.result))
		default:
			r.Results = append(r.Results, n.result)
		}
	}
	for _, id := range x.order {
		if n := x.nodes[id]; n.result == nil && n.status == braidv1.NodeStatus_NODE_STATUS_EXECUTING {
			r.Results = append(r.Results, running(id, nil)) // its first run
		}
	}
	if len(x.unsaved) == 0 {
		return r
	}
	r.Interrupts = slices.DeleteFunc(r.Interrupts, func(w *braidv1.Interrupt) bool {
		e := x.table[w.GetId()]
		return e != nil && x.nodes[e.node].unsaved
	})
	if r.Status == braidv1.NodeStatus_NODE_STATUS_INTERRUPTED && len(r.Interrupts) == 0 {
		r.Status = braidv1.NodeStatus_NODE_STATUS_EXECUTING
	}
	return r
}

// running is how Status shows node id while it runs: EXECUTING, with the
// time, usage and run count of its earlier runs (earlier, nil for none),
// and nothing of an earlier run's outcome (its result, error, interrupts
// or handoff).
func running(id string, earlier *braidv1.NodeResult) *braidv1.NodeResult {
	return &braidv1.NodeResult{NodeId: id, Status: braidv1.NodeStatus_NODE_STATUS_EXECUTING,
		DurationNs: earlier.GetDurationNs(), Usage: cloneUsage(earlier.GetUsage()), ExecutionCount: earlier.GetExecutionCount()}
}

// savedReports: a save committed, which holds every report so far (the
// reports that come during a save wait for its end): the unsaved nodes
// are shown as they are, and their NodeStop events, held back, are sent,
// each after the held NodeStops of its executor's nodes (nodeRec.stops).
func (x *orchActor) savedReports() {
	for _, n := range x.unsaved {
		stops := n.stops
		n.unsaved, n.before, n.stops = false, nil, nil
		if x.cur != nil && n.result != nil {
			for _, ev := range stops {
				x.cur.emit(x.sys, ev)
			}
			x.emitStop(n, n.result)
		}
	}
	clear(x.unsaved)
	x.unsaved = x.unsaved[:0]
}

// emitStop streams node n's NodeStop, with a copy of its result res (the
// actor keeps res). To a receiver in this process it goes with the Go
// errors of the FAILED results it carries, a nested run's included
// (localEvent), so that the stream's consumer sees the values the final
// result holds; a receiver of the protobuf form gets the event alone.
func (x *orchActor) emitStop(n *nodeRec, res *braidv1.NodeResult) {
	c := cloneResult(res)
	ev := &braidv1.MultiAgentEvent{NodePath: n.path, Event: &braidv1.MultiAgentEvent_NodeStop{NodeStop: c}}
	if len(n.locals.Errors) > 0 && x.cur.events != nil && !x.cur.wire {
		if l := eventErrors(res, c, n.locals); len(l.Errors) > 0 {
			x.sys.Root().Send(x.cur.events, &localEvent{ev: ev, locals: l})
			return
		}
	}
	x.cur.emit(x.sys, ev)
}

// forgetUnsaved drops the unsaved reports without showing them (a fresh
// run, or a reload of the stored run, replaces them).
func (x *orchActor) forgetUnsaved() {
	for _, n := range x.unsaved {
		n.unsaved, n.before, n.stops = false, nil, nil
	}
	clear(x.unsaved)
	x.unsaved = x.unsaved[:0]
}

// contentKinds names the kinds of content of an input, for the errors of
// SPEC I7.
func contentKinds(in *braidv1.AgentInput) []string {
	var kinds []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	for _, raw := range in.GetMessages() {
		for _, k := range messageContentKinds(raw) {
			add(k)
		}
	}
	if len(in.GetResponses()) > 0 {
		add("interruptResponse")
	}
	return kinds
}

// subUsage returns u less base (nil: none).
func subUsage(u, base *braidv1.Usage) *braidv1.Usage {
	return &braidv1.Usage{InputTokens: u.GetInputTokens() - base.GetInputTokens(),
		OutputTokens: u.GetOutputTokens() - base.GetOutputTokens(), TotalTokens: u.GetTotalTokens() - base.GetTotalTokens()}
}

func addUsage(dst, u *braidv1.Usage) {
	if u == nil || dst == nil {
		return
	}
	dst.InputTokens += u.GetInputTokens()
	dst.OutputTokens += u.GetOutputTokens()
	dst.TotalTokens += u.GetTotalTokens()
}
