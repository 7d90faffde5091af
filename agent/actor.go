package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/tool"
)

// ErrPanic is matched by the error of a step whose model, hook or tool
// panicked (SPEC R6): the step fails, the agent and its state survive.
var ErrPanic = errors.New("panic")

// PanicError is the error of a model call, or of the agent's own work,
// that panicked. Hooks and tools have their own (hook.PanicError,
// tool.PanicError); all of them are reported, none takes the agent down.
type PanicError struct {
	Where string
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.Where, e.Value) }

// Is matches ErrPanic.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// ErrFaulted reports that the actor of an agent without a session stopped
// after a fault; its state was in no store, so it cannot come back.
var ErrFaulted = errors.New("the agent's actor stopped after a fault and had no session to come back from: build a new agent")

// The agent actor (SPEC R1, R3). It owns the committed session and runs
// one job at a time (an invocation, a history reset, a direct tool call)
// on a goroutine it starts; the job works on a draft and reports each
// saved point and its end by message. Cancel, Snapshot, Status and Close
// are answered at once, whatever runs.
type agentActor struct {
	core *core
	sys  *actors.System
	// first is false for a re-activation; an agent without a session
	// cannot be re-activated (its state was nowhere but here).
	first bool

	jobCtx  context.Context // the parent of jobs' contexts: names the agent (jobKey)
	d       *data           // committed
	sess    *persistence.AgentSession
	loadErr error
	dead    bool // loadErr was answered: stopping

	seq     uint64
	running *request // the job running, if any
	job     *job     // running's job
	queue   []*request
	closed  bool
	closers []func(any)
}

type reqKind int

const (
	reqInvoke reqKind = iota
	reqSetMessages
	reqCallTool
	reqSetState
)

// request is one job asked for, in the form both the protobuf and the
// in-process messages are decoded to; in one process the handle sends it
// as it is (SPEC R2 lets in-process sends skip serialization: everything
// in it has a protobuf form).
type request struct {
	seq    uint64                  // set when it starts
	cancel context.CancelCauseFunc // set when it starts
	kind   reqKind
	id     string // invocation id ("" when none was given)
	in     Input
	values map[string]json.RawMessage
	msgs   []model.Message
	tool   string // the tool, or the state key
	input  json.RawMessage
	del    bool // reqSetState: delete the key; reqSetMessages: drop unfinished work
	reply  replier
	local  localReply // the reply of an in-process caller (reply = &local)
	// caller is the context an in-process caller asked with: the job's
	// context carries its values (nil: none, as for a remote caller).
	caller context.Context
	// toEnd: an in-process caller whose context ends waits for the job
	// to stop before it returns (see Agent.invokeToEnd).
	toEnd bool
}

// replier gets a job's events (on the job's goroutine) and its outcome
// (on the actor's). A replier whose caller waits on a goroutine that
// could not stop waiting anyway may lend that goroutine to the job: lend
// takes the job and reports whether the caller will execute it.
type replier interface {
	emit(ev Event) bool
	streaming() bool
	finish(res any, err error)
	lend(j *job) bool
}

// Messages a job sends its actor.
type (
	jobCommit struct {
		seq uint64
		d   *data
	}
	jobDone struct {
		seq uint64
		d   *data // nil: keep the committed state (the job panicked)
		// sess, if set, is the writer d was loaded with, replacing the
		// actor's: the job lost a save to another writer (reload).
		sess *persistence.AgentSession
		res  any // answered to the caller by the job itself
		err  error
	}
)

// jobKey is the context key under which a job's context names its agent
// and the agents whose jobs asked for it (a *jobChain), so that an agent
// can refuse work asked of it from its own hooks and tools, directly or
// through other agents (ErrReentrant).
type jobKey struct{}

// jobChain is the agents a job runs for: its own, then, up the chain,
// the agent whose hook or tool asked for the job, and so on.
type jobChain struct {
	core *core
	up   *jobChain
}

// runsFor reports whether ctx is the context of a job of k or of a job
// that k's job waits for.
func runsFor(ctx context.Context, k *core) bool {
	c, _ := ctx.Value(jobKey{}).(*jobChain)
	for ; c != nil; c = c.up {
		if c.core == k {
			return true
		}
	}
	return false
}

// activationKey is the context key under which the context of an
// agent's AgentInitialized hooks names the agent (its *core): its actor
// answers nothing until the activation, which waits for those hooks, has
// ended, so the handle refuses their calls (ErrReentrant) rather than
// wait forever (SPEC R7). Like the caller's other values, it reaches the
// agents and orchestrators those hooks call.
type activationKey struct{}

// activating reports whether ctx is (or descends from) the context of
// k's AgentInitialized hooks.
func activating(ctx context.Context, k *core) bool {
	c, _ := ctx.Value(activationKey{}).(*core)
	return c == k
}

// localAbandon: the in-process caller of req stopped waiting (its
// context ended); the AgentCancel with an invocation id of the protobuf
// protocol, for a request that has a Go identity instead.
type localAbandon struct {
	req   *request
	cause error
}

// LiveOnly implements actors.LiveOnly: an abandon is about a call the
// live actor took; sent to a passivated agent (which had none left), it
// activates nothing and is dropped.
func (*localAbandon) LiveOnly() {}

func (x *agentActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		x.activate()
	case *actor.Stopping:
		x.stopping()
	case *jobCommit:
		if x.running != nil && m.seq == x.running.seq {
			x.d = m.d
		}
	case *jobDone:
		x.done(c, m)
	case *request:
		x.enqueue(c, m)
	case *localAbandon:
		x.drop(m.req, m.cause)
		x.dieIfFailed(c)
	case *braidv1.AgentInvoke:
		in, err := InputFromWire(m.GetInput())
		if err != nil {
			x.respond(c, ErrorToWire(err))
			return
		}
		x.enqueue(c, &request{kind: reqInvoke, id: m.GetInvocationId(), in: in, values: rawValues(m.GetValues()),
			reply: &protoReply{sys: x.sys, to: c.Sender(), stream: m.GetStream()}})
	case *braidv1.AgentSetMessages:
		msgs, err := messagesFromWire(m.GetMessages())
		if err != nil {
			x.respond(c, ErrorToWire(err))
			return
		}
		x.enqueue(c, &request{kind: reqSetMessages, msgs: msgs, del: m.GetDropUnfinished(), reply: &protoReply{sys: x.sys, to: c.Sender()}})
	case *braidv1.AgentCallTool:
		x.enqueue(c, &request{kind: reqCallTool, tool: m.GetName(), input: m.GetInput(), reply: &protoReply{sys: x.sys, to: c.Sender()}})
	case *braidv1.AgentSetState:
		x.enqueue(c, &request{kind: reqSetState, tool: m.GetKey(), input: m.GetValue(), del: m.GetDelete(), reply: &protoReply{sys: x.sys, to: c.Sender()}})
	case *braidv1.AgentCancel:
		// The answer goes first: the invocation's own end (its error)
		// follows it, never comes before it.
		was, stop := x.cancel(m)
		x.respond(c, &braidv1.AgentCancelled{WasRunning: was})
		stop()
		x.dieIfFailed(c)
	case *braidv1.AgentSnapshotRequest:
		if x.failed(c) {
			return
		}
		b, err := json.Marshal(x.d.snapshot(x.core.cfg.ID))
		if err != nil {
			x.respond(c, ErrorToWire(err))
			return
		}
		x.respond(c, &braidv1.AgentSnapshot{Snapshot: b})
	case *braidv1.AgentStatusRequest:
		if x.failed(c) {
			return
		}
		x.respond(c, x.status())
	case *braidv1.AgentClose:
		x.close(c)
	default:
		// Another owner's message, or no protocol's: its sender, if it
		// has one, is told instead of waiting for nothing (SPEC R2, R5).
		if c.Sender() != nil {
			x.respond(c, ErrorToWire(fmt.Errorf("agent %q: %w: %T", x.core.cfg.ID, actors.ErrUnknownMessage, m)))
		}
		x.dieIfFailed(c)
	}
}

// Idle implements actors.Passivator: nothing runs or waits, and everything
// is in the store (every change is saved before it is committed), its
// durable save included: a save parked for the orchestrator's commit
// (AgentSession.DeferDurable) is in no store until the orchestrator has
// committed it or the agent's next save has carried it
// (AgentSession.Parked), so the agent stays active until then.
func (x *agentActor) Idle() bool {
	return x.running == nil && len(x.queue) == 0 && (x.sess != nil || x.loadErr != nil) &&
		(x.sess == nil || !x.sess.Parked())
}

// AnswerFault implements actors.FaultAnswerer: the request whose handling
// panicked is answered with the fault, unless it is queued or running (the
// actor's stop answers those) or answered already; a protobuf request is
// answered unless a request of its sender waits in the queue.
func (x *agentActor) AnswerFault(c actor.Context, msg any, err *actors.FaultError) {
	waiting := func(match func(*request) bool) bool {
		return (x.running != nil && match(x.running)) || slices.ContainsFunc(x.queue, match)
	}
	if r, ok := msg.(*request); ok {
		if !waiting(func(q *request) bool { return q == r }) {
			r.reply.finish(nil, err)
		}
		return
	}
	sender := c.Sender()
	if sender == nil || waiting(func(q *request) bool { p, ok := q.reply.(*protoReply); return ok && p.to != nil && p.to.Equal(sender) }) {
		return
	}
	x.respond(c, ErrorToWire(err))
}

// JobsReturned implements actors.JobWaiter: the job that ran when the
// actor stopped (its Stopping cancelled it) may still save, with this
// activation's session writer, until it returns; the registry activates
// the agent again only then (SPEC R4). An earlier job has sent jobDone,
// after its last save, and saves nothing more.
func (x *agentActor) JobsReturned() <-chan struct{} {
	if x.job == nil {
		return nil
	}
	return x.job.run.end.wait()
}

// OwnMessage implements actors.OwnMessages: a job's commits and end come
// from the actor's own goroutines.
func (x *agentActor) OwnMessage(msg any) bool {
	switch msg.(type) {
	case *jobCommit, *jobDone:
		return true
	}
	return false
}

// activate loads the session (SPEC R4) and fires AgentInitialized. A
// failure is kept and answered to every request; the actor then stops, so
// that the next message tries again. The load and the hooks run with a
// context that ends when the agent is closed (cause ErrClosed) or its
// System closes (actors.ErrClosed): the actor answers nothing until they
// return (its Stopping included), no message can reach it meanwhile, and
// both Closes wait for it. No goroutine watches for either: the context
// descends from the System's (System.Context), and the agent's Close
// calls its cancel function (core.activation).
func (x *agentActor) activate() {
	cfg := &x.core.cfg
	x.jobCtx = context.WithValue(context.Background(), jobKey{}, &jobChain{core: x.core})
	x.d = &data{kv: &State{}, interrupts: interrupt.NewState()}
	parent := x.jobCtx
	if cfg.Session != nil || hook.Has[AgentInitializedEvent](x.core.hooks) {
		// The load and the hooks may wait: their context ends when the
		// agent is closed or its System closes.
		var cancel context.CancelCauseFunc
		parent, cancel = context.WithCancelCause(x.sys.Context())
		parent = context.WithValue(parent, jobKey{}, x.jobCtx.Value(jobKey{}))
		x.core.activation.begin(cancel)
		defer func() {
			x.core.activation.end()
			cancel(nil)
		}()
	}
	ctx := context.WithValue(parent, activationKey{}, x.core)
	restore := cfg.Restore
	if cfg.Session != nil {
		sess, rec, err := x.core.load(ctx)
		if err != nil {
			x.loadErr = err
			return
		}
		x.sess, restore = sess, rec
	} else if !x.first {
		x.loadErr = fmt.Errorf("agent %q: %w", cfg.ID, ErrFaulted)
		return
	}
	x.d = x.core.dataOf(restore)
	// A passivation of this agent kept its own answers: they hold while
	// no other writer saved since (see job.answeredElsewhere).
	x.d.answered = x.core.kept.take(x.sess)
	j := newJob(x.core, x.d, x.sess, nil)
	if err := hook.Run(ctx, x.core.hooks, &AgentInitializedEvent{Agent: j.view()}); err != nil {
		x.loadErr = fmt.Errorf("AgentInitialized hook: %w", err)
	}
}

// load reads the agent's session from its store (Config.Session): a
// writer of its own and the stored agent, nil when the store has none.
// It waits for the store until ctx ends or Config.LoadTimeout has passed.
func (c *core) load(ctx context.Context) (*persistence.AgentSession, *Snapshot, error) {
	cfg := &c.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.LoadTimeout)
	defer cancel()
	sess, rec, err := cfg.Session.OpenAgent(ctx, actors.RecordID(cfg.OwnerPath, cfg.ID))
	if err != nil {
		return nil, nil, fmt.Errorf("restore agent %q: %w", cfg.ID, err)
	}
	if rec == nil {
		return sess, nil, nil
	}
	s, err := fromRecord(sess.Key(), rec)
	if err != nil {
		return nil, nil, fmt.Errorf("restore agent %q: %w", cfg.ID, err)
	}
	return sess, s, nil
}

// dataOf is the agent's data restored from s, or, with none, its initial
// history (Config.Messages).
func (c *core) dataOf(s *Snapshot) *data {
	d := &data{kv: &State{}, interrupts: interrupt.NewState()}
	if s != nil {
		d.messages = model.CloneMessages(s.Messages)
		d.kv.replace(s.State)
		if s.Interrupts != nil {
			d.interrupts.Restore(s.Interrupts)
		}
		d.pending, d.usage = s.Pending.clone(), s.Usage
	} else {
		d.messages = model.CloneMessages(c.cfg.Messages)
	}
	d.messages = d.messages[:len(d.messages):len(d.messages)]
	return d
}

// failed answers a request of an actor whose activation failed, and stops
// it after the requests already queued.
func (x *agentActor) failed(c actor.Context) bool {
	if x.loadErr == nil {
		return false
	}
	x.respond(c, ErrorToWire(x.loadErr))
	x.die(c)
	return true
}

// dieIfFailed stops the actor if its activation failed: a message that
// needs no answer about its state (a Cancel, an abandon: nothing of this
// activation runs or waits) ends it at once, as one that is answered
// with the failure does, so that it holds no registry slot or memory
// until its idle timeout and the next message loads again.
func (x *agentActor) dieIfFailed(c actor.Context) {
	if x.loadErr != nil {
		x.die(c)
	}
}

// die stops the actor whose load failed, so that the next message loads
// again; what is sent to it meanwhile waits for that activation.
func (x *agentActor) die(c actor.Context) {
	if !x.dead {
		x.dead = true
		actors.Passivate(c)
	}
}

// respond replies to the sender, if there is one.
func (x *agentActor) respond(c actor.Context, msg any) {
	if c.Sender() != nil {
		c.Respond(msg)
	}
}

func (x *agentActor) enqueue(c actor.Context, r *request) {
	if l, ok := r.reply.(*localReply); ok {
		l.taken.Store(true)
	}
	switch {
	case x.loadErr != nil:
		r.reply.finish(nil, x.loadErr)
		x.die(c)
	case x.closed:
		r.reply.finish(nil, ErrClosed)
	case x.running != nil:
		x.queue = append(x.queue, r)
	case x.abandoned(r):
	default:
		x.start(c, r)
	}
}

// abandoned answers r, and reports true, if its in-process caller's
// context has ended before the job could start (the caller has its error
// already, and its localAbandon is on its way): such a job never starts,
// as a queued one is dropped, so no hook fires and nothing is saved for a
// call its caller gave up (an activation that waited for its store, say).
func (x *agentActor) abandoned(r *request) bool {
	if r.caller == nil || r.caller.Err() == nil {
		return false
	}
	r.reply.finish(nil, abandonCause(r.caller))
	return true
}

// start runs r as the job, on a goroutine of its own.
func (x *agentActor) start(c actor.Context, r *request) {
	x.seq++
	seq := x.seq
	ctx, cancel := context.WithCancelCause(withCallerValues(x.jobCtx, x.core, r.caller))
	r.seq, r.cancel = seq, cancel
	x.running = r
	self, root := c.Self(), x.sys.Root()
	var commit func(*data)
	if x.sess != nil {
		commit = func(d *data) { root.Send(self, &jobCommit{seq: seq, d: d}) }
	}
	j := newJob(x.core, x.d.draft(), x.sess, commit)
	j.run = runState{ctx: ctx, cancel: cancel, req: r, self: self, root: root, sys: x.sys, done: jobDone{seq: seq}}
	x.job = j
	// The job runs on a goroutine the actor hands it to: the caller's own,
	// when the caller waits with a context that cannot end (it would sit
	// idle until the outcome, and nothing could make it stop waiting
	// earlier), else one of the System's pool. Either way the job reports
	// to the actor by message and the actor owns what it commits.
	if !r.reply.lend(j) {
		x.sys.Go(j.execute)
	}
}

// withCallerValues is job (the context of k's jobs), carrying caller's
// values too when there is a caller that may have any; when caller is the
// context of another agent's job, k's place in the chain is recorded.
func withCallerValues(job context.Context, k *core, caller context.Context) context.Context {
	ctx := actors.WithCallerValues(job, caller)
	if ctx == job {
		return job
	}
	if up, ok := caller.Value(jobKey{}).(*jobChain); ok {
		ctx = context.WithValue(ctx, jobKey{}, &jobChain{core: k, up: up})
	}
	return ctx
}

// runState is what a job needs to run as its actor's job and report.
type runState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	req    *request
	self   *actor.PID
	root   *actor.RootContext
	sys    *actors.System
	done   jobDone // the message that ends it
	end    jobEnd  // tells when it has returned (or will never run)
}

// jobEnd tells when a job has returned: run, refused by its System's
// Close, or handed to a lent goroutine that then did not run it. Safe for
// concurrent use.
type jobEnd struct {
	mu    sync.Mutex
	ended bool
	ch    chan struct{} // made by wait, closed by end
}

// end records that the job has returned (or will never run).
func (e *jobEnd) end() {
	e.mu.Lock()
	e.ended = true
	if e.ch != nil {
		close(e.ch)
	}
	e.mu.Unlock()
}

// wait returns a channel closed once the job has returned; nil if it has.
func (e *jobEnd) wait() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	if e.ch == nil {
		e.ch = make(chan struct{})
	}
	return e.ch
}

// execute runs the job as one of its System's jobs (System.Run), which
// the System's Close waits for; a job its System's Close came before
// does not run, and fails with actors.ErrClosed.
func (a *job) execute() {
	run := &a.run
	defer run.end.end()
	if run.sys.Run(a.work) {
		return
	}
	run.cancel(nil)
	done := &run.done
	done.d, done.res, done.err = nil, nil, actors.ErrClosed
	run.root.Send(run.self, done)
	run.req.reply.finish(nil, done.err)
}

// work runs the job's request and reports its end: to the actor (the
// new state, or none after a panic), then to the caller.
func (a *job) work() {
	run := &a.run
	done := &run.done
	defer func() {
		run.cancel(nil)
		if p := recover(); p != nil {
			done.d, done.res, done.err = nil, nil, &PanicError{Where: "agent " + a.cfg.ID, Value: p}
		}
		// The actor gets the new state before the caller hears of it:
		// anything the caller sends next queues behind jobDone.
		run.root.Send(run.self, done)
		run.req.reply.finish(done.res, done.err)
	}()
	done.res, done.err = a.runRequest(run.ctx, run.req)
	done.d = a.result()
	a.reload(done)
}

// reload loads the session again into done after the job lost a save to
// another writer (persistence.ErrConflict, SPEC S4: another process
// resumed or ran this agent first). Its state is stale, and every later
// save would fail the same way: the next work starts from the stored
// state instead. A load that fails leaves done as it is (the next
// conflict tries again); so does a save parked for an orchestrator's
// commit, which the orchestrator takes from this writer.
//
// A job refused for the agent's interrupt state (a resume while not
// interrupted, an unknown interrupt id, a prompt while interrupted)
// saved nothing, so no save could have told it that the state it judged
// by is stale: it loads the session to find out. If another writer saved
// since, the refusal becomes that writer's *persistence.ConflictError
// and the next work starts from the stored state, as after a lost save;
// if not, the refusal stands (with the writer just opened, at the same
// version). Only this error path pays the load.
func (a *job) reload(done *jobDone) {
	if a.sess == nil || a.sess.Parked() {
		return
	}
	conflict := errors.Is(done.err, persistence.ErrConflict)
	if !conflict && !refusedByInterrupts(done.err) {
		return
	}
	sess, s, err := a.core.load(context.Background())
	if err != nil {
		return
	}
	if !conflict {
		behind := a.sess.Behind(sess.Owner)
		if behind == nil {
			// Up to date: the refusal stands. The writer just opened
			// replaces the old one all the same (it is at the same
			// version, and the Session may have taken it for the agent's:
			// a node's does, to park its saves).
			done.sess = sess
			return
		}
		done.err = fmt.Errorf("agent %q: %w; it refused the call on that stale state (%v) and holds the stored one now",
			a.cfg.ID, behind, done.err)
		done.res = nil
	}
	done.sess, done.d = sess, a.core.dataOf(s)
}

// refusedByInterrupts reports whether err refuses an input for the
// owner's interrupt state (SPEC I7) in a way a stale state could cause:
// responses while it waits for none, an id it does not have, or other
// content while it waits.
func refusedByInterrupts(err error) bool {
	return errors.Is(err, interrupt.ErrNotInterrupted) || errors.Is(err, interrupt.ErrUnknownID) ||
		errors.Is(err, interrupt.ErrResumeRequired)
}

func (x *agentActor) done(c actor.Context, m *jobDone) {
	if x.running == nil || m.seq != x.running.seq {
		return
	}
	x.running, x.job = nil, nil
	if m.d != nil {
		x.d = m.d
	}
	if m.sess != nil {
		x.sess = m.sess
	}
	if x.closed {
		for _, reply := range x.closers {
			reply(&braidv1.AgentDone{})
		}
		x.closers = nil
		return
	}
	for len(x.queue) > 0 {
		next := x.queue[0]
		x.queue[0] = nil
		x.queue = x.queue[1:]
		if !x.abandoned(next) {
			x.start(c, next)
			return
		}
	}
}

// cancel finds the job m stops (the running one, or the named invocation,
// running or queued): it reports whether there is one, and returns stop,
// which stops it with the cause of m's reason (nothing if none).
func (x *agentActor) cancel(m *braidv1.AgentCancel) (found bool, stop func()) {
	var cause error
	switch m.GetReason() {
	case braidv1.CancelReason_CANCEL_REASON_CALLER_CANCELED:
		cause = context.Canceled
	case braidv1.CancelReason_CANCEL_REASON_CALLER_DEADLINE:
		cause = context.DeadlineExceeded
	case braidv1.CancelReason_CANCEL_REASON_CUT_OFF:
		cause = actors.ErrCutOff
	default:
		cause = ErrCancelled
	}
	id := m.GetInvocationId()
	if id != "" {
		for i, r := range x.queue {
			if r.id == id {
				x.queue = append(x.queue[:i], x.queue[i+1:]...)
				return true, func() { r.reply.finish(nil, cause) }
			}
		}
	}
	if x.running == nil || (id != "" && x.running.id != id) {
		return false, func() {}
	}
	run := x.running
	return true, func() { run.cancel(cause) }
}

// drop stops r with cause: removed if queued (answered with cause),
// cancelled if it runs.
func (x *agentActor) drop(r *request, cause error) {
	for i, q := range x.queue {
		if q == r {
			x.queue = append(x.queue[:i], x.queue[i+1:]...)
			r.reply.finish(nil, cause)
			return
		}
	}
	if x.running != nil && x.running == r {
		x.running.cancel(cause)
	}
}

// stopping: the actor stops (its System closes, its identity is released,
// or its supervisor stopped it after a fault in Receive): the running job
// is cancelled, the queued requests are rejected and the pending Close
// requests answered, since no message reaches this actor from now on.
// (A passivation stops an actor with nothing running or queued.)
func (x *agentActor) stopping() {
	if x.running == nil && x.sess != nil && x.d != nil && len(x.d.answered) > 0 {
		// A passivation: the next activation of this Agent gives its
		// own answers again, as a live actor would.
		x.core.kept.keep(x.sess, x.d.answered)
	}
	if x.running != nil {
		x.running.cancel(ErrClosed)
	}
	for _, r := range x.queue {
		r.reply.finish(nil, fmt.Errorf("%w: its actor stopped", ErrClosed))
	}
	x.queue = nil
	for _, reply := range x.closers {
		reply(&braidv1.AgentDone{})
	}
	x.closers = nil
}

// close cancels the running job, rejects the queued ones, and replies once
// nothing runs; the actor then only answers queries and rejects work.
func (x *agentActor) close(c actor.Context) {
	x.closed = true
	for _, r := range x.queue {
		r.reply.finish(nil, ErrClosed)
	}
	x.queue = nil
	var reply func(any)
	if s := c.Sender(); s != nil {
		reply = func(msg any) { x.sys.Root().Send(s, msg) }
	} else {
		reply = func(any) {}
	}
	if x.running == nil {
		reply(&braidv1.AgentDone{})
		return
	}
	x.running.cancel(ErrClosed)
	x.closers = append(x.closers, reply)
}

func (x *agentActor) status() *braidv1.AgentStatus {
	s := &braidv1.AgentStatus{Queued: int32(len(x.queue)), Messages: int32(len(x.d.messages))}
	var unanswered []interrupt.Interrupt
	if x.d.interrupts.Activated() {
		unanswered = x.d.interrupts.Unanswered()
	}
	switch {
	case x.running != nil:
		s.State = braidv1.AgentState_AGENT_STATE_RUNNING
	case len(unanswered) > 0:
		s.State = braidv1.AgentState_AGENT_STATE_INTERRUPTED
	case x.d.pending != nil || (!x.d.interrupts.Activated() && awaitsModel(x.d.messages)):
		s.State = braidv1.AgentState_AGENT_STATE_INCOMPLETE
	default:
		s.State = braidv1.AgentState_AGENT_STATE_IDLE
	}
	s.Interrupts = interruptsToWire(unanswered)
	return s
}

// runRequest runs one request on the job's goroutine.
func (a *job) runRequest(ctx context.Context, r *request) (any, error) {
	switch r.kind {
	case reqSetMessages:
		return nil, a.setMessages(ctx, r.msgs, r.del)
	case reqCallTool:
		return a.callTool(ctx, r.tool, r.input)
	case reqSetState:
		return nil, a.setState(ctx, r.tool, r.input, r.del)
	}
	values, err := decodeValues(r.values)
	if err != nil {
		return nil, fmt.Errorf("%w: invocation values: %v", ErrBadInput, err)
	}
	var emit func(Event) bool
	if r.reply.streaming() {
		emit = r.reply.emit
	}
	return a.invoke(ctx, r.in, values, emit)
}

// ErrInterruptedReset is returned by SetMessages while the agent waits for
// interrupt responses.
var ErrInterruptedReset = errors.New("cannot replace the history while the agent is interrupted: resume it first")

func (a *job) setMessages(ctx context.Context, msgs []model.Message, drop bool) error {
	if a.interrupts.Activated() && !drop {
		return ErrInterruptedReset
	}
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%w: message %d: %v", ErrBadInput, i, err)
		}
	}
	if err := validateHistory(msgs); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	old := a.history()
	var interrupts *interrupt.State
	var pending *Pending
	if drop {
		interrupts, pending = a.interrupts.Clone(), a.pendingCopy()
		a.interrupts.Clear()
		a.setPending(nil)
	}
	c := model.CloneMessages(msgs)
	a.mu.Lock()
	// A new history ends the latest invocation: a history that awaits the
	// model is carried on from zero usage (Snapshot.Usage).
	usage := a.usage
	a.messages, a.usage = c[:len(c):len(c)], model.Usage{}
	a.mu.Unlock()
	if err := a.saveFrom(ctx, persistence.SaveInvocation, 0); err != nil {
		a.mu.Lock()
		a.messages, a.usage = old, usage
		a.mu.Unlock()
		if drop {
			a.interrupts.Restore(interrupts)
			a.setPending(pending)
		}
		return err
	}
	return nil
}

func (a *job) setState(ctx context.Context, key string, value json.RawMessage, del bool) error {
	if del {
		a.kv.Delete(key)
	} else if err := a.kv.Set(key, value); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return a.save(ctx, persistence.SaveInvocation)
}

func (a *job) callTool(ctx context.Context, name string, input json.RawMessage) (model.ToolResult, error) {
	t, ok := a.tools.get(name)
	if !ok {
		return model.ToolResult{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	if a.interrupts.Activated() {
		return model.ToolResult{}, ErrInterruptedDirect
	}
	tu := model.ToolUse{ToolUseID: "direct-" + name, Name: name, Input: input}
	tc := tool.NewContext(tu, nil, a.kv, nil)
	content, err := tool.Invoke(ctx, t, tc, input)
	if errors.Is(err, interrupt.ErrNotInterruptible) {
		return model.ToolResult{}, fmt.Errorf("tool %q: %w", name, ErrDirectInterrupt)
	}
	res := model.ToolResult{ToolUseID: tu.ToolUseID, Status: model.ToolSuccess, Content: content}
	if err != nil {
		res = model.ErrorResult(tu.ToolUseID, err.Error())
	}
	// The tool may have changed the state: saved like an invocation's end.
	if serr := a.save(ctx, persistence.SaveInvocation); serr != nil {
		return model.ToolResult{}, serr
	}
	return res, nil
}

func rawValues(m map[string][]byte) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// protoReply answers a protobuf sender.
type protoReply struct {
	sys    *actors.System
	to     *actor.PID
	stream bool
	done   bool // finished: a second finish sends nothing
}

func (r *protoReply) streaming() bool { return r.stream }

func (r *protoReply) lend(*job) bool { return false }

func (r *protoReply) emit(ev Event) bool {
	if r.to == nil {
		return true
	}
	w, err := EventToWire(ev)
	if err == nil {
		r.sys.Root().Send(r.to, w)
	}
	return true
}

func (r *protoReply) finish(res any, err error) {
	if r.to == nil || r.done {
		return
	}
	r.done = true
	if err != nil {
		r.sys.Root().Send(r.to, ErrorToWire(err))
		return
	}
	switch v := res.(type) {
	case *Result:
		w, werr := ResultToWire(v)
		if werr != nil {
			r.sys.Root().Send(r.to, ErrorToWire(werr))
			return
		}
		r.sys.Root().Send(r.to, w)
	case model.ToolResult:
		b, werr := json.Marshal(v)
		if werr != nil {
			r.sys.Root().Send(r.to, ErrorToWire(werr))
			return
		}
		r.sys.Root().Send(r.to, &braidv1.AgentToolResult{Result: b})
	default:
		r.sys.Root().Send(r.to, &braidv1.AgentDone{})
	}
}

// localReply answers an in-process caller through channels. It is part
// of its request (one allocation for both).
type localReply struct {
	events  chan Event    // nil unless streaming
	abandon chan struct{} // closed when a streaming caller stops reading
	// signal carries the job to run, when the caller lends its goroutine
	// (lends), and then nil once the outcome (res, err) is set. It holds
	// one value, enough for both: the caller takes the job before the
	// job can finish.
	signal chan *job
	lends  bool
	res    any
	err    error
	done   bool // finished: a second finish does nothing (on the actor's goroutine)
	// taken is set when the actor receives the request: from then on
	// its outcome always comes (the actor, or the job, finishes it), so
	// a caller waits for it even after the identity is released.
	taken atomic.Bool
}

// init makes what the reply still lacks (signal may come from a pool;
// lends is set by a caller that waits without a context that can end).
func (r *localReply) init(stream bool) {
	if r.signal == nil {
		r.signal = make(chan *job, 1)
	}
	if stream {
		r.lends = false
		r.events = make(chan Event, 64)
		r.abandon = make(chan struct{})
	}
}

func (r *localReply) streaming() bool { return r.events != nil }

func (r *localReply) lend(j *job) bool {
	if !r.lends {
		return false
	}
	r.signal <- j
	return true
}

func (r *localReply) emit(ev Event) bool {
	select {
	case r.events <- ev:
		return true
	case <-r.abandon:
		return false
	}
}

func (r *localReply) finish(res any, err error) {
	if r.done {
		return
	}
	r.done = true
	r.res, r.err = res, err
	r.signal <- nil
}
