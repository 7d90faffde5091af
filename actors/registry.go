package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Identity names an owner (SPEC R4): the session it belongs to, its kind
// ("agent", "orchestrator", "node") and its owner path within the session.
// An owner without a session has an empty SessionID and a Path that is
// unique in its process.
type Identity struct {
	SessionID string
	Kind      string
	Path      string
}

// String returns "session/kind/path".
func (id Identity) String() string { return id.SessionID + "/" + id.Kind + "/" + id.Path }

// Errors of the registry.
var (
	// ErrBound: the identity is bound already in this registry (one live
	// owner per identity, SPEC R4).
	ErrBound = errors.New("identity is bound already in this actors.System: one live agent, graph or swarm per session, kind, owner path and id; close the live one first, or use it")
	// ErrUnbound: the binding was released.
	ErrUnbound = errors.New("identity is not bound")
)

// FaultError reports that an owner's actor panicked in its Receive
// (SPEC R6). The registry stops such an actor the way it passivates one:
// the messages it had not begun go to the next activation, which comes
// back from the store (or, without one, answers that it cannot) once the
// jobs of the stopped one have returned (JobWaiter). An actor
// that panicked while starting is not activated again: its identity is
// released, and waits for its answers end with an error that wraps
// ErrUnbound and this.
type FaultError struct {
	Identity Identity
	Value    any  // the panic's value
	Starting bool // the panic was in the actor's start
}

func (e *FaultError) Error() string {
	if e.Starting {
		return fmt.Sprintf("%s: its actor panicked while starting: %v", e.Identity, e.Value)
	}
	return fmt.Sprintf("%s: its actor panicked: %v", e.Identity, e.Value)
}

// FaultAnswerer is implemented by an owner that can answer the message
// whose handling panicked (its caller would wait for nothing): the shell
// calls AnswerFault with it right after the panic, on the actor's
// goroutine, unless it was the start. An owner that does not implement it
// has the message's sender, if it has one, sent the *FaultError (which
// Binding.Ask returns as its error).
type FaultAnswerer interface {
	AnswerFault(c actor.Context, msg any, err *FaultError)
}

// OwnMessages is implemented by an owner some of whose messages come from
// its own goroutines (a job's end, a node's report): after the owner
// panicked they are dropped with it, where any other message it had not
// begun goes on to its next activation. An owner that does not implement
// it has all of them go on.
type OwnMessages interface {
	OwnMessage(msg any) bool
}

// LiveOnly is implemented by a message about the work of the live actor
// only (in Braid, the notice that a caller stopped waiting for a call):
// sent to an identity whose actor is not live (passivated, or stopped
// after a fault), it is dropped rather than activating the actor, since
// no work of a new activation can be what it is about, and the load it
// would cost is wasted. Messages sent through one Binding keep their
// order, so a call sent before it that is still on its way activates
// the actor first, and it then reaches that activation. LiveOnly itself
// does nothing; only the type matters.
type LiveOnly interface {
	LiveOnly()
}

// JobWaiter is implemented by an owner whose jobs (its work on goroutines
// of the System, SPEC R3) may outlive its actor: the actor's stop cancels
// them, but each returns when it can, and may save until then (with the
// session writer of the activation that started it). JobsReturned is
// called on the actor's goroutine once the owner has handled its
// Stopping; it returns a channel that is closed once every job of this
// activation has returned, including one handed to a goroutine that then
// never ran it, or nil when none runs. Until it is closed the registry
// holds the identity as it does during a passivation: messages to it
// wait, and it is neither activated again nor released, so that no job
// of a stopped activation runs beside the next one (SPEC R4: an owner is
// active at most once). The wait ends early when the System closes. A
// job cut off so that ignores its cancelled context and then asks its own
// owner with a context that cannot end therefore waits until the System
// closes (with its own context, the ask ends at once). An owner that does
// not implement it is activated again, or released, as soon as its actor
// has stopped.
type JobWaiter interface {
	JobsReturned() <-chan struct{}
}

// Passivator is implemented by an actor that can be passivated: Idle
// reports, on the actor's goroutine, whether it has no work in flight and
// holds nothing that is not in its store, so that stopping it loses
// nothing. An actor that does not implement it is never passivated.
type Passivator interface {
	Idle() bool
}

// BindConfig says how the registry activates an identity.
type BindConfig struct {
	// Producer makes a fresh actor for an activation; the actor loads its
	// state from the store when it starts.
	Producer actor.Producer
	// IdleTimeout passivates the actor (stops it, freeing its memory) once
	// it has received nothing for this long and reports itself idle; the
	// next message activates it again. Zero never passivates.
	IdleTimeout time.Duration
	// QuickStart says the actor's start (its Started) neither waits (no
	// store, no I/O) nor runs code that may call the registry (no user
	// hooks): it then runs on the goroutine that activates it, the
	// registry's, which saves a hand-off. Otherwise it runs on the
	// System's pool.
	QuickStart bool
}

// Registry maps identities to live actors (SPEC R4): a message to a bound
// identity activates its actor if it is not live, and a live actor that
// stays idle for its IdleTimeout is passivated. The table is owned by the
// registry's own actor, and the owners are its children, so a System's
// Close stops them all. One Registry per System; nothing outside actors/
// sees a PID of an owner, so a cluster's identity lookup can take its place.
//
// Supervision: an owner whose Receive panics is stopped, never restarted
// with fresh state (SPEC R6); the next message activates it from its store.
type Registry struct {
	sys *System
	pid *actor.PID
}

func newRegistry(sys *System, observe func(Identity, Lifecycle)) (*Registry, error) {
	r := &Registry{sys: sys}
	if observe == nil {
		observe = func(Identity, Lifecycle) {}
	}
	pid, err := sys.Spawn(func() actor.Actor {
		return &registryActor{entries: map[Identity]*entry{}, dispatch: sys.mailboxes(), startOn: sys.pool.Go,
			goJob: sys.Go, closed: sys.done, observe: observe}
	})
	if err != nil {
		return nil, err
	}
	r.pid = pid
	return r, nil
}

// shutdown releases every identity and returns the live actors.
func (r *Registry) shutdown(ctx context.Context) ([]*actor.PID, error) {
	reply := make(chan []*actor.PID, 1)
	r.sys.Root().Send(r.pid, &shutdownReq{reply: reply})
	select {
	case live := <-reply:
		return live, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Bind claims id for a producer. The actor is not started until the first
// message (or Activate). Binding an identity that is bound already is
// ErrBound.
func (r *Registry) Bind(ctx context.Context, id Identity, cfg BindConfig) (*Binding, error) {
	if cfg.Producer == nil {
		return nil, fmt.Errorf("bind %s: no producer", id)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-r.sys.done:
		return nil, ErrClosed
	default:
	}
	reply := make(chan error, 1)
	b := &Binding{r: r, id: id, live: newLiveRef()}
	r.sys.Root().Send(r.pid, &bindReq{id: id, cfg: cfg, live: b.live, reply: reply})
	select {
	case err := <-reply:
		if err != nil {
			return nil, fmt.Errorf("bind %s: %w", id, err)
		}
		return b, nil
	case <-ctx.Done():
		// Queued behind the bind, before any later request of this caller.
		r.sys.Root().Send(r.pid, &unbindReq{id: id, live: b.live, reply: make(chan struct{}, 1)})
		return nil, ctx.Err()
	case <-r.sys.done:
		return nil, ErrClosed
	}
}

// Binding is a caller's claim on one identity: it sends to the identity's
// actor, activating it as needed. Safe for concurrent use.
//
// While the actor is live, messages go to it directly, without passing
// through the registry's mailbox; the registry stops that before it
// passivates the actor (see liveRef), and routes them itself meanwhile.
type Binding struct {
	r    *Registry
	id   Identity
	live *liveRef
}

// liveRef is a Binding's view of its live actor, written by the registry:
// pid is the live actor while direct sends are allowed, nil otherwise;
// senders counts sends in progress that may be using it. Before it
// passivates an actor, the registry clears pid and waits for senders to
// reach zero, so every direct send is in the actor's mailbox before the
// passivation request is.
type liveRef struct {
	// released is closed when the registry releases the identity: from
	// then on nothing sent through the binding reaches an actor.
	released chan struct{}
	cause    error // why, when it is not an Unbind or a System's Close; set before released is closed
	pid      atomic.Pointer[actor.PID]
	senders  atomic.Int32
	routed   atomic.Int32 // routes of this binding not yet delivered or dropped
	draining atomic.Bool  // the registry waits for senders to reach zero
}

func newLiveRef() *liveRef { return &liveRef{released: make(chan struct{})} }

// send delivers msg (with sender, if not nil) directly when the actor is
// live, or through the registry.
func (b *Binding) send(msg any, sender *actor.PID) {
	root := b.r.sys.Root()
	b.live.senders.Add(1)
	if pid := b.live.pid.Load(); pid != nil && b.live.routed.Load() == 0 {
		if sender != nil {
			root.RequestWithCustomSender(pid, msg, sender)
		} else {
			root.Send(pid, msg)
		}
		if b.live.senders.Add(-1) == 0 && b.live.draining.Load() {
			root.Send(b.r.pid, &drained{id: b.id, pid: pid})
		}
		return
	}
	b.live.routed.Add(1)
	if b.live.senders.Add(-1) == 0 && b.live.draining.Load() {
		root.Send(b.r.pid, &drained{id: b.id})
	}
	root.Send(b.r.pid, &route{id: b.id, live: b.live, msg: msg, sender: sender, counted: true})
}

// Identity returns the bound identity.
func (b *Binding) Identity() Identity { return b.id }

// Send delivers msg to the identity's actor, activating it if needed.
// Messages sent through one Binding arrive in the order sent. A message
// to a released binding is dropped.
func (b *Binding) Send(msg any) { b.send(msg, nil) }

// Request is Send with replies going to replyTo.
func (b *Binding) Request(msg any, replyTo *Inbox) { b.send(msg, replyTo.PID()) }

// Ask sends msg and waits for one reply, or for ctx to end.
func (b *Binding) Ask(ctx context.Context, msg any) (any, error) {
	select {
	case <-b.r.sys.done:
		return nil, ErrClosed
	default:
	}
	in := b.r.sys.inboxes.get(b.r.sys)
	b.Request(msg, in)
	rep, err := in.receive(ctx, b.live.released)
	for err == nil {
		if _, dead := rep.(*actor.DeadLetterResponse); !dead {
			break
		}
		// The actor stopped before it took msg: a direct send raced its
		// stop (an Unbind stops it without waiting for the sends in
		// progress). The registry, which knows why it stopped, routes msg
		// again: to the next activation, or nowhere once the identity is
		// released, which ends this wait with ErrUnbound. Never a reply.
		b.r.sys.Root().Send(b.r.pid, &route{id: b.id, live: b.live, msg: msg, sender: in.PID()})
		rep, err = in.receive(ctx, b.live.released)
	}
	if err != nil {
		in.Close() // a late reply must not reach a later ask
		if errors.Is(err, ErrUnbound) {
			err = b.Err()
		}
		return nil, err
	}
	if fe, ok := rep.(*FaultError); ok {
		b.r.sys.inboxes.put(in)
		return nil, fe
	}
	b.r.sys.inboxes.put(in)
	return rep, nil
}

// Activate activates the identity's actor if it is not live and returns its
// process id, for code that talks Proto.Actor directly (tests, and the
// cluster layer). The id is valid until the actor is passivated.
func (b *Binding) Activate(ctx context.Context) (*actor.PID, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reply := make(chan *actor.PID, 1)
	b.r.sys.Root().Send(b.r.pid, &activateReq{id: b.id, live: b.live, reply: reply})
	select {
	case pid := <-reply:
		if pid == nil {
			return nil, fmt.Errorf("activate %s: %w", b.id, b.unboundErr())
		}
		return pid, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.r.sys.done:
		return nil, ErrClosed
	}
}

// Released is closed once the identity is released (unbound, its System
// closed, or its actor panicked while starting): a message sent through
// the binding, or held for an activation, is then dropped, so a wait for
// its answer should end (with Err).
func (b *Binding) Released() <-chan struct{} { return b.live.released }

// unboundErr is Err for a binding known to be released or being released.
func (b *Binding) unboundErr() error {
	if err := b.Err(); err != nil {
		return err
	}
	return ErrUnbound
}

// Err is nil until the identity is released, then ErrUnbound; when the
// release was the registry's, after the actor panicked while starting,
// the error wraps the *FaultError too.
func (b *Binding) Err() error {
	select {
	case <-b.live.released:
	default:
		return nil
	}
	if b.live.cause != nil {
		return fmt.Errorf("%w: %w", ErrUnbound, b.live.cause)
	}
	return ErrUnbound
}

// Live reports whether the identity's actor is live (not passivated). Asked
// while a passivation is under way, it answers once the actor has stopped
// or refused to (it was busy again).
func (b *Binding) Live(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	reply := make(chan bool, 1)
	b.r.sys.Root().Send(b.r.pid, &liveReq{id: b.id, live: b.live, reply: reply})
	select {
	case live := <-reply:
		return live, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-b.r.sys.done:
		return false, ErrClosed
	}
}

// Unbind stops the identity's actor, if live, and releases the identity
// once it has stopped (handled Stopping; its Stopped may still run). It
// waits for that until ctx ends, and then returns ctx's error, but the
// unbinding goes on: it is asked for even when ctx has ended already. Messages sent after it are dropped. Unbinding twice
// is a no-op, and so is unbinding in a closed System (its Close released
// every identity).
func (b *Binding) Unbind(ctx context.Context) error {
	select {
	case <-b.r.sys.done:
		return nil
	default:
	}
	reply := make(chan struct{}, 1)
	b.r.sys.Root().Send(b.r.pid, &unbindReq{id: b.id, live: b.live, reply: reply})
	if err := ctx.Err(); err != nil {
		return err // asked for; not waited for
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.r.sys.done:
		return nil
	}
}

// Messages of the registry actor (in-process only: a cluster replaces the
// registry, not these).
type (
	bindReq struct {
		id    Identity
		cfg   BindConfig
		live  *liveRef
		reply chan error
	}
	route struct {
		id      Identity
		live    *liveRef
		msg     any
		sender  *actor.PID
		counted bool // counted in live.routed
	}
	activateReq struct {
		id    Identity
		live  *liveRef
		reply chan *actor.PID
	}
	liveReq struct {
		id    Identity
		live  *liveRef
		reply chan bool
	}
	unbindReq struct {
		id    Identity
		live  *liveRef
		reply chan struct{}
	}
	// idleReport: the shell's actor is idle; the registry answers with
	// passivateReq after it has stopped routing to it.
	idleReport struct {
		id  Identity
		pid *actor.PID
	}
	passivateReq struct{}
	// shutdownReq: the system closes; the registry releases every
	// identity and answers with the live actors, which System.Close stops.
	shutdownReq struct{ reply chan []*actor.PID }
	// drained: check again whether direct sends have stopped.
	drained struct {
		id  Identity
		pid *actor.PID
	}
	passivateRefused struct {
		id  Identity
		pid *actor.PID
	}
	// stoppedReport: the shell's actor stopped (passivated, unbound, or
	// stopped after a panic), and the jobs of its owner have returned
	// (JobWaiter).
	stoppedReport struct {
		id  Identity
		pid *actor.PID
	}
	// faultReport: the shell's actor panicked; the registry stops it as it
	// passivates one, and it stops on passivateReq whatever its state.
	faultReport struct {
		id  Identity
		pid *actor.PID
		err *FaultError
	}
	// bounce: a message the faulted shell's actor had not begun, for the
	// next activation. Every message sent to that actor directly was sent
	// before any routed while it stops, so bounced ones go first.
	bounce struct {
		id     Identity
		pid    *actor.PID
		msg    any
		sender *actor.PID
	}
)

type entry struct {
	cfg       BindConfig
	live      *liveRef
	pid       *actor.PID // nil while passivated
	stopping  bool       // passivation or unbind asked; routes wait in held
	held      []*route
	bounced   int // held[:bounced] came back from a faulted actor
	unbinding []chan struct{}
	asked     bool        // passivateReq sent
	fault     *FaultError // the live actor panicked: it stops
}

// entryOf returns the entry of the binding whose liveRef is live.
func (x *registryActor) entryOf(id Identity, live *liveRef) (*entry, bool) {
	e, ok := x.entries[id]
	if !ok || e.live != live {
		return nil, false
	}
	return e, true
}

// dropHeld drops the held routes and answers the held activations.
func dropHeld(e *entry) {
	for _, h := range e.held {
		switch a := h.msg.(type) {
		case *activateReq:
			a.reply <- nil
		case *liveReq:
			a.reply <- false
		}
		if h.counted {
			e.live.routed.Add(-1)
		}
	}
	e.held, e.bounced = nil, 0
}

// registryActor owns the identity table.
type registryActor struct {
	entries  map[Identity]*entry
	props    *actor.Props          // of every owner's shell
	next     atomic.Pointer[shell] // the shell Spawn's producer returns
	dispatch actor.Dispatcher
	startOn  func(func()) // the System's pool: where an owner starts by default
	goJob    func(func()) // System.Go: where a shell waits for its owner's jobs
	closed   <-chan struct{}
	first    func(func()) // where the owner being spawned starts (see live)
	observe  func(Identity, Lifecycle)
}

func (x *registryActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		// Spawned from the root, not as the registry's children: Proto.
		// Actor's set of children keeps a pointer to a removed child in its
		// array until the slot is reused, which held every passivated owner
		// in memory. The shell recovers an owner's panics (SPEC R6); the
		// guardian strategy, which supervises a root-spawned actor, stops
		// one that panics anyway, never restarting it with fresh state
		// behind its callers' backs.
		stop := actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
		x.props = actor.PropsFromProducer(x.produce, actor.WithGuardian(stop), actor.WithDispatcher(x.dispatch), actor.WithMailbox(x.ownerMailbox))
	case *bindReq:
		if _, ok := x.entries[m.id]; ok {
			m.reply <- ErrBound
			return
		}
		x.entries[m.id] = &entry{cfg: m.cfg, live: m.live}
		m.reply <- nil
	case *route:
		e, ok := x.entryOf(m.id, m.live)
		if !ok || e.unbinding != nil {
			if m.counted {
				m.live.routed.Add(-1)
			}
			return // released: dropped
		}
		if e.stopping {
			e.held = append(e.held, m)
			return
		}
		x.deliver(c, m.id, e, m)
	case *activateReq:
		e, ok := x.entryOf(m.id, m.live)
		if !ok || e.unbinding != nil {
			m.reply <- nil
			return
		}
		if e.stopping {
			// Answered once the passivation is over, in order.
			e.held = append(e.held, &route{id: m.id, live: m.live, msg: m})
			return
		}
		m.reply <- x.live(c, m.id, e, nil)
	case *liveReq:
		e, ok := x.entryOf(m.id, m.live)
		if ok && e.stopping && e.unbinding == nil {
			// Answered once the passivation is over, in order: the
			// actor may yet refuse it and stay live.
			e.held = append(e.held, &route{id: m.id, live: m.live, msg: m})
			return
		}
		m.reply <- ok && e.pid != nil && e.unbinding == nil
	case *unbindReq:
		e, ok := x.entryOf(m.id, m.live)
		if !ok {
			m.reply <- struct{}{}
			return
		}
		e.unbinding = append(e.unbinding, m.reply)
		dropHeld(e)
		e.live.pid.Store(nil)
		if e.pid == nil {
			x.release(m.id, e)
			return
		}
		e.stopping = true
		c.Stop(e.pid) // a passivation in flight ends the same way
	case *idleReport:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.pid.Equal(m.pid) || e.stopping {
			return
		}
		x.stop(c, m.id, e)
	case *drained:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.stopping || e.unbinding != nil || e.asked {
			return
		}
		x.passivateWhenDrained(c, m.id, e)
	case *passivateRefused:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.pid.Equal(m.pid) || e.unbinding != nil {
			return
		}
		e.stopping, e.asked = false, false
		e.live.draining.Store(false)
		e.live.pid.Store(e.pid)
		x.flush(c, m.id, e)
	case *shutdownReq:
		var live []*actor.PID
		for id, e := range x.entries {
			if e.pid != nil {
				live = append(live, e.pid)
			}
			e.live.pid.Store(nil)
			dropHeld(e)
			close(e.live.released)
			for _, r := range e.unbinding {
				r <- struct{}{}
			}
			delete(x.entries, id)
		}
		m.reply <- live
	case *faultReport:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.pid.Equal(m.pid) {
			return
		}
		e.fault = m.err
		if e.stopping {
			return // a passivation's request, sent or to come, stops it; an unbind stopped it
		}
		x.stop(c, m.id, e)
	case *bounce:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.pid.Equal(m.pid) || e.unbinding != nil {
			return // released: dropped
		}
		// Counted: a send meanwhile goes through the registry, after it,
		// not straight to the next activation before it is delivered.
		r := &route{id: m.id, live: e.live, msg: m.msg, sender: m.sender, counted: true}
		e.live.routed.Add(1)
		e.held = slices.Insert(e.held, e.bounced, r)
		e.bounced++
	case *stoppedReport:
		e, ok := x.entries[m.id]
		if !ok || e.pid == nil || !e.pid.Equal(m.pid) {
			return
		}
		passivated := e.stopping && e.unbinding == nil && e.fault == nil
		fault := e.fault
		e.pid, e.stopping, e.asked, e.fault, e.bounced = nil, false, false, nil, 0
		e.live.pid.Store(nil)
		e.live.draining.Store(false)
		if passivated {
			x.observe(m.id, Passivated)
		} else {
			x.observe(m.id, Stopped)
		}
		if e.unbinding == nil && fault != nil && fault.Starting {
			// It would panic again at every activation.
			e.live.cause = fault
			x.release(m.id, e) // first: a held Activate answered below reads the cause
			dropHeld(e)
			return
		}
		if e.unbinding != nil {
			x.release(m.id, e)
			return
		}
		x.flush(c, m.id, e) // held routes activate it again
	}
}

// live returns the identity's actor, activating it if needed. The owner
// starts inline if its binding says it starts quickly, else on handTo (a
// waiting caller's Inbox) if given, else on the System's pool; never on
// this registry's goroutine, where one owner's load and hooks would keep
// every Bind, route and activation of the System waiting, and deadlock it
// if a hook asks the registry anything (builds an agent, say) (SPEC R3).
func (x *registryActor) live(c actor.Context, id Identity, e *entry, handTo func(func())) *actor.PID {
	if e.pid != nil {
		return e.pid
	}
	// The shell is handed to the shared Props' producer, which Spawn calls
	// before it returns (one Props per registry: a Props per activation
	// would cost more than a third of an idle owner's memory).
	x.next.Store(&shell{inner: e.cfg.Producer(), id: id, idle: e.cfg.IdleTimeout, registry: c.Self(),
		goJob: x.goJob, closed: x.closed})
	switch {
	case e.cfg.QuickStart:
		x.first = nil
	case handTo != nil:
		x.first = handTo
	default:
		x.first = x.startOn
	}
	e.pid = c.ActorSystem().Root.Spawn(x.props)
	x.next.Store(nil)
	x.first = nil
	e.live.pid.Store(e.pid)
	x.observe(id, Activated)
	return e.pid
}

// ownerMailbox is the shared Props' mailbox producer, which Spawn calls
// after produce: the mailbox's first run (the owner's Started) goes where
// live chose.
func (x *registryActor) ownerMailbox() actor.Mailbox {
	m := newMailbox().(*mailbox)
	m.first = x.first
	return m
}

// produce is the shared Props' producer: the shell live prepared. Owners
// are never restarted (their supervisor stops them), so it is called by
// Spawn only; a call without a prepared shell gets one that stops itself.
func (x *registryActor) produce() actor.Actor {
	if sh := x.next.Swap(nil); sh != nil {
		return sh
	}
	return &shell{}
}

// stop begins a passivation (or the stop of a faulted actor): nothing is
// sent to the actor from now on (routes wait in held, direct sends stop),
// and passivateReq goes once the direct sends in progress are in its
// mailbox.
func (x *registryActor) stop(c actor.Context, id Identity, e *entry) {
	e.stopping = true
	e.live.pid.Store(nil)
	e.live.draining.Store(true)
	x.passivateWhenDrained(c, id, e)
}

// passivateWhenDrained sends the passivation request once no direct send
// is in progress, checking again through its own mailbox until then.
func (x *registryActor) passivateWhenDrained(c actor.Context, id Identity, e *entry) {
	if e.live.senders.Load() > 0 {
		return // the last of them sends drained
	}
	e.asked = true
	c.Send(e.pid, &passivateReq{})
}

func (x *registryActor) deliver(c actor.Context, id Identity, e *entry, m *route) {
	switch a := m.msg.(type) {
	case *activateReq:
		a.reply <- x.live(c, id, e, nil)
		return
	case *liveReq:
		a.reply <- e.pid != nil
		return
	}
	if _, ok := m.msg.(LiveOnly); ok && e.pid == nil {
		if m.counted {
			e.live.routed.Add(-1)
		}
		return // about the work of an actor that is gone: dropped
	}
	var handTo func(func())
	if e.pid == nil && m.sender != nil {
		// A caller waits on an Inbox for the answer to m: it runs the
		// owner's start itself, on its own goroutine, rather than a pool
		// goroutine it would then wait for, unless its wait can end
		// (Inbox.receive hands the start to the pool then, SPEC R5).
		if p, ok := c.ActorSystem().ProcessRegistry.Get(m.sender); ok {
			if ip, ok := p.(inboxProcess); ok {
				handTo = func(run func()) { ip.in.putStart(ip.gen, run) }
			}
		}
	}
	pid := x.live(c, id, e, handTo)
	if m.sender != nil {
		c.RequestWithCustomSender(pid, m.msg, m.sender)
	} else {
		c.Send(pid, m.msg)
	}
	if m.counted {
		e.live.routed.Add(-1)
	}
}

// flush delivers the routes held during a passivation, in order.
func (x *registryActor) flush(c actor.Context, id Identity, e *entry) {
	held := e.held
	e.held = nil
	for _, m := range held {
		x.deliver(c, id, e, m)
	}
}

func (x *registryActor) release(id Identity, e *entry) {
	delete(x.entries, id)
	close(e.live.released)
	for _, r := range e.unbinding {
		r <- struct{}{}
	}
}

// shell runs an owner's actor and the passivation protocol around it.
// Idleness is its own clock, not Proto.Actor's receive timeout (whose timer
// goroutine writes the actor context's fields unguarded, a data race under
// load): one timer per actor sends idleTick to the actor itself, and the
// actor, on its own goroutine, checks the time of its last message.
type shell struct {
	inner    actor.Actor
	id       Identity
	idle     time.Duration
	registry *actor.PID
	timer    *time.Timer
	last     time.Time // of the last message but ticks
	faulted  bool      // the owner panicked: the shell waits to be stopped
	// stopSeen: the owner has had its Stopping. Proto.Actor goes on
	// delivering messages to an actor whose children are still stopping;
	// the owner sees none of them (it has answered what it held and
	// cancelled its jobs): they go back to the registry, as a faulted
	// owner's do, and reach the next activation.
	stopSeen bool
	goJob    func(func())
	closed   <-chan struct{} // the System's Done
	// returned is the owner's JobWaiter channel, asked for at Stopping:
	// the stop is reported once it is closed.
	returned <-chan struct{}
}

// idleTick: the shell's idle timer fired.
type idleTick struct{}

// passivateNow: the owner asks to be passivated now (Passivate).
type passivateNow struct{}

// Passivate asks the registry to passivate the calling owner now, by the
// protocol of its idle timeout: once its Passivator reports it idle, the
// registry stops sending to it, waits for the sends in progress, and stops
// it; what is sent meanwhile waits for the next activation. It is how an
// owner stops so that the next message starts it afresh (an agent whose
// load failed): unlike a PoisonPill, nothing sent to it in the meantime is
// lost. Call it from the owner's Receive; an owner that does not implement
// Passivator, or is not idle, is not passivated.
func Passivate(c actor.Context) { c.Send(c.Self(), passivateNow{}) }

func (s *shell) Receive(c actor.Context) {
	if s.inner == nil { // stopped, or made by no activation (see produce)
		if _, ok := c.Message().(*actor.Started); ok {
			c.Stop(c.Self())
		}
		return
	}
	if s.faulted || s.stopSeen {
		s.receiveFaulted(c)
		return
	}
	switch c.Message().(type) {
	case *actor.Started:
		if s.idle > 0 {
			s.last = time.Now()
			self, root := c.Self(), c.ActorSystem().Root
			s.timer = time.AfterFunc(s.idle, func() { root.Send(self, idleTick{}) })
		}
	case idleTick:
		if since := time.Since(s.last); since < s.idle {
			s.timer.Reset(s.idle - since)
			return
		}
		if p, ok := s.inner.(Passivator); ok && p.Idle() {
			c.Send(s.registry, &idleReport{id: s.id, pid: c.Self()})
			return // the registry answers with passivateReq, or stops it
		}
		s.timer.Reset(s.idle)
		return
	case passivateNow:
		if p, ok := s.inner.(Passivator); ok && p.Idle() {
			c.Send(s.registry, &idleReport{id: s.id, pid: c.Self()})
		}
		return
	case *passivateReq:
		if p, ok := s.inner.(Passivator); ok && p.Idle() {
			c.Stop(c.Self())
		} else {
			c.Send(s.registry, &passivateRefused{id: s.id, pid: c.Self()})
			if s.timer != nil {
				s.timer.Reset(s.idle)
			}
		}
		return
	case *actor.Stopping:
		if s.timer != nil {
			s.timer.Stop()
		}
		s.stopSeen = true
		s.stopping(c)
		return
	case *actor.Stopped:
		s.stopped(c)
		return
	default:
		if s.timer != nil {
			s.last = time.Now()
		}
	}
	s.receive(c)
}

// receive hands the message to the owner. If the owner panics, the shell
// reports it and from then on waits to be stopped (receiveFaulted): the
// owner's state is whatever the panic left, so it gets nothing more but
// its Stopping and Stopped (SPEC R6).
func (s *shell) receive(c actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			_, starting := c.Message().(*actor.Started)
			s.faulted = true
			if s.timer != nil {
				s.timer.Stop()
			}
			fe := &FaultError{Identity: s.id, Value: r, Starting: starting}
			c.Send(s.registry, &faultReport{id: s.id, pid: c.Self(), err: fe})
			if !starting {
				s.answerFault(c, fe)
			}
		}
	}()
	s.inner.Receive(c)
}

// answerFault answers the message whose handling panicked (FaultAnswerer).
func (s *shell) answerFault(c actor.Context, fe *FaultError) {
	defer func() { _ = recover() }() // the owner's state is what the panic left
	if a, ok := s.inner.(FaultAnswerer); ok {
		a.AnswerFault(c, c.Message(), fe)
		return
	}
	if sender := c.Sender(); sender != nil {
		c.Send(sender, fe)
	}
}

// receiveFaulted: the owner panicked and the registry stops the actor the
// way it passivates one, or the owner has had its Stopping and the actor
// waits for its children to stop. Meanwhile the messages sent to it
// directly are sent back to the registry, for the next activation, except
// those of the owner's own goroutines (OwnMessages), whose work died with
// it.
func (s *shell) receiveFaulted(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Stopping:
		s.stopping(c)
	case *actor.Stopped:
		s.stopped(c)
	case *passivateReq:
		c.Stop(c.Self())
	case idleTick, passivateNow, actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		if own, ok := s.inner.(OwnMessages); ok && own.OwnMessage(msg) {
			return
		}
		c.Send(s.registry, &bounce{id: s.id, pid: c.Self(), msg: msg, sender: c.Sender()})
	}
}

// stopping lets the owner see its Stopping (it cancels its jobs), then
// asks it for the channel its jobs close once they have returned.
func (s *shell) stopping(c actor.Context) {
	s.receiveQuietly(c)
	w, ok := s.inner.(JobWaiter)
	if !ok {
		return
	}
	func() {
		defer func() { _ = recover() }() // no channel: reported at once
		s.returned = w.JobsReturned()
	}()
}

// stopped reports the stop, at once or once the owner's jobs have
// returned, then lets the owner see it.
func (s *shell) stopped(c actor.Context) {
	// Reported (or its waiter started) first: the registry must learn of
	// the stop even if the owner's own Stopped handling fails.
	report := &stoppedReport{id: s.id, pid: c.Self()}
	if returned := s.returned; returned != nil && !isClosed(returned) {
		// A job of this activation still runs: the identity stays held
		// (its messages wait in the registry) until it has returned, or
		// the System closes (its Close waits for this waiter, a job of
		// its own, and for the owner's jobs anyway).
		root, registry, closed := c.ActorSystem().Root, s.registry, s.closed
		s.goJob(func() {
			select {
			case <-returned:
			case <-closed:
			}
			root.Send(registry, report)
		})
	} else {
		c.Send(s.registry, report)
	}
	s.returned = nil
	s.receiveQuietly(c)
	s.inner = nil // nothing of the owner outlives it
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// receiveQuietly hands a stopping actor's Stopping or Stopped to the
// owner; a panic there changes nothing (the actor stops either way).
func (s *shell) receiveQuietly(c actor.Context) {
	defer func() { _ = recover() }()
	s.inner.Receive(c)
}
