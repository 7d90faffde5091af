package actors_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// limit only turns a deadlock into a failure: no test waits for it to pass.
const limit = 5 * time.Second

// idle is the IdleTimeout of tests that passivate: short, but every test
// waits for the events it causes, never for the time itself.
const idle = 20 * time.Millisecond

// ---- helpers ---------------------------------------------------------------

func newSystem(t *testing.T) *actors.System {
	t.Helper()
	// The observer runs on the registry's goroutine: blockRegistry holds
	// the registry there, in the activation of the identity "blocker".
	var self atomic.Pointer[actors.System]
	cfg := actors.DefaultConfig()
	cfg.Observer = func(id actors.Identity, l actors.Lifecycle) {
		if id != ident("blocker") || l != actors.Activated {
			return
		}
		if b, ok := blockers.Load(self.Load()); ok {
			close(b.(*blocker).entered)
			<-b.(*blocker).release
		}
	}
	sys, err := actors.NewSystem(cfg)
	require.NoError(t, err)
	self.Store(sys)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		assert.NoError(t, sys.Close(ctx))
	})
	return sys
}

// ctxT is a context that ends with the test's time limit.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("no %s within %v", what, limit)
		var zero T
		return zero
	}
}

// none asserts that nothing is in ch now.
func none[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Errorf("unexpected %s: %v", what, v)
	default:
	}
}

func ident(path string) actors.Identity {
	return actors.Identity{SessionID: "s1", Kind: "test", Path: path}
}

// Messages of the test actors.
type (
	// msg is recorded by the actor and answered with a reply if it has a
	// sender.
	msg struct{ from, seq int }
	// reply answers a msg; inst is the instance that received it.
	reply struct {
		m    msg
		inst int
	}
	// hold blocks the actor's Receive until release is closed. It is a test
	// device that freezes an interleaving: owners never block in Receive.
	hold struct {
		entered chan<- struct{}
		release <-chan struct{}
	}
	boom  struct{} // panics in Receive
	twice struct{} // answered twice
	// keep: the actor keeps the sender and answers nothing yet.
	keep struct{ kept chan<- struct{} }
	// answerKept: the actor answers the kept sender with "late".
	answerKept struct{ done chan<- struct{} }
)

type event struct {
	inst int
	kind string // started, stopping, stopped, restarting
}

type got struct {
	inst int
	m    msg
}

// probe watches every actor its producer makes for one identity: their
// lifecycle events, the msgs they receive and the calls of Idle.
type probe struct {
	passivator bool
	idle       func(call int) bool // answer of Idle; nil: always idle
	startPanic func(inst int) bool // the instance panics in Started; nil: none does

	produced  atomic.Int32
	idleCalls atomic.Int32
	events    chan event
	got       chan got
	idles     chan int
	overflow  atomic.Bool
}

func newProbe(t *testing.T, passivator bool) *probe {
	p := &probe{
		passivator: passivator,
		events:     make(chan event, 1024),
		got:        make(chan got, 1<<14),
		idles:      make(chan int, 1024),
	}
	t.Cleanup(func() { assert.False(t, p.overflow.Load(), "a probe channel overflowed") })
	return p
}

func push[T any](p *probe, ch chan T, v T) {
	select {
	case ch <- v:
	default:
		p.overflow.Store(true)
	}
}

func (p *probe) producer() actor.Actor {
	a := &probeActor{p: p, inst: int(p.produced.Add(1))}
	if p.passivator {
		return &passiveActor{a}
	}
	return a
}

func (p *probe) config(idleTimeout time.Duration) actors.BindConfig {
	return actors.BindConfig{Producer: p.producer, IdleTimeout: idleTimeout}
}

type probeActor struct {
	p    *probe
	inst int
	kept *actor.PID
}

func (a *probeActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		push(a.p, a.p.events, event{a.inst, "started"})
		if a.p.startPanic != nil && a.p.startPanic(a.inst) {
			panic("boom in Started")
		}
	case *actor.Stopping:
		push(a.p, a.p.events, event{a.inst, "stopping"})
	case *actor.Stopped:
		push(a.p, a.p.events, event{a.inst, "stopped"})
	case *actor.Restarting:
		push(a.p, a.p.events, event{a.inst, "restarting"})
	case msg:
		push(a.p, a.p.got, got{a.inst, m})
		if c.Sender() != nil {
			c.Respond(reply{m: m, inst: a.inst})
		}
	case hold:
		m.entered <- struct{}{}
		<-m.release
	case boom:
		panic("boom")
	case twice:
		c.Respond("first")
		c.Respond("second")
	case keep:
		a.kept = c.Sender()
		close(m.kept)
	case answerKept:
		c.Send(a.kept, "late")
		close(m.done)
	}
}

// passiveActor is a probeActor that implements actors.Passivator.
type passiveActor struct{ *probeActor }

func (a *passiveActor) Idle() bool {
	n := int(a.p.idleCalls.Add(1))
	push(a.p, a.p.idles, n)
	if a.p.idle == nil {
		return true
	}
	return a.p.idle(n)
}

var _ actors.Passivator = (*passiveActor)(nil)

func bind(t *testing.T, sys *actors.System, id actors.Identity, cfg actors.BindConfig) *actors.Binding {
	t.Helper()
	b, err := sys.Registry().Bind(ctxT(t), id, cfg)
	require.NoError(t, err)
	return b
}

// passivating binds an identity whose actor got one message and is being
// passivated: the registry holds the routes to it until gate is closed,
// which lets the passivation end.
func passivating(t *testing.T) (b *actors.Binding, gate chan struct{}) {
	t.Helper()
	sys := newSystem(t)
	p := newProbe(t, true)
	gate = make(chan struct{})
	p.idle = func(call int) bool {
		if call == 2 { // the passivation request: the registry is stopping it
			<-gate
		}
		return true
	}
	b = bind(t, sys, ident("a"), p.config(idle))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	next(t, p.idles, "idle report")
	next(t, p.idles, "passivation request")
	return b, gate
}

// blockRegistry keeps the registry's actor busy until the returned
// function is called (the cleanup calls it too): it activates a fresh
// identity, whose activation the System's observer (run by the registry)
// holds. Requests sent meanwhile queue in the registry's mailbox in the
// order sent.
func blockRegistry(t *testing.T, sys *actors.System) (release func()) {
	t.Helper()
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	_, loaded := blockers.LoadOrStore(sys, b)
	require.False(t, loaded, "one blockRegistry per System")
	blocked := bind(t, sys, ident("blocker"), newProbe(t, false).config(0))
	go func() { _, _ = blocked.Activate(context.Background()) }()
	next(t, b.entered, "the registry activating the blocker")
	var once sync.Once
	release = func() { once.Do(func() { close(b.release) }) }
	t.Cleanup(release)
	return release
}

// blockers are the blockRegistry holds, by System (of newSystem).
var blockers sync.Map

type blocker struct{ entered, release chan struct{} }

// ---- Bind ------------------------------------------------------------------

func TestIdentity_StringIsSessionKindPath(t *testing.T) {
	assert.Equal(t, "s/agent/a/b", actors.Identity{SessionID: "s", Kind: "agent", Path: "a/b"}.String())
	assert.Equal(t, "/node/x", actors.Identity{Kind: "node", Path: "x"}.String())
}

func TestBind_RefusesASecondBindingOfOneIdentity(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	assert.Equal(t, ident("a"), b.Identity())

	_, err := sys.Registry().Bind(ctxT(t), ident("a"), p.config(0))
	require.ErrorIs(t, err, actors.ErrBound)
	assert.Contains(t, err.Error(), ident("a").String())
	assert.Contains(t, err.Error(), "close the live one first, or use it", "the message says what to do")

	// Another identity is not affected.
	bind(t, sys, ident("b"), p.config(0))
}

func TestBind_AfterUnbindTheIdentityCanBeBoundAgain(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	require.NoError(t, b.Unbind(ctxT(t)))

	p2 := newProbe(t, false)
	b2 := bind(t, sys, ident("a"), p2.config(0))
	b2.Send(msg{seq: 2})
	assert.Equal(t, got{1, msg{seq: 2}}, next(t, p2.got, "message to the new binding"))
}

func TestBind_WithoutProducerIsAnError(t *testing.T) {
	sys := newSystem(t)
	b, err := sys.Registry().Bind(ctxT(t), ident("a"), actors.BindConfig{IdleTimeout: idle})
	require.Error(t, err)
	assert.Nil(t, b)
	assert.NotErrorIs(t, err, actors.ErrBound)
	// Nothing was claimed.
	bind(t, sys, ident("a"), newProbe(t, false).config(0))
}

// SPEC R5: a call whose context has ended already reports the context's
// error; it does not race the registry's answer.
func TestRegistryCalls_ReturnCanceledForAnAlreadyCancelledContext(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The registry answers at once, so a select between its answer and
	// ctx.Done() picks either: try often enough to see both.
	const tries = 32
	for i := range tries {
		nb, err := sys.Registry().Bind(ctx, ident("c"+strconv.Itoa(i)), p.config(0))
		if !assert.ErrorIs(t, err, context.Canceled, "Bind, try %d", i) {
			assert.NotNil(t, nb)
			break
		}
	}
	for i := range tries {
		_, err := b.Activate(ctx)
		if !assert.ErrorIs(t, err, context.Canceled, "Activate, try %d", i) {
			break
		}
	}
	for i := range tries {
		_, err := b.Live(ctx)
		if !assert.ErrorIs(t, err, context.Canceled, "Live, try %d", i) {
			break
		}
	}
	for i := range tries {
		if !assert.ErrorIs(t, b.Unbind(ctx), context.Canceled, "Unbind, try %d", i) {
			break
		}
	}
}

// SPEC R5: an Unbind whose context has ended still unbinds: the actor is
// stopped and the identity released, though the caller did not wait. A
// close that gives up waiting must not leave its identity bound.
func TestUnbind_WhoseContextEndedStillReleasesTheIdentity(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	bg, stop := context.WithTimeout(context.Background(), limit)
	defer stop()
	_, err := b.Activate(bg)
	require.NoError(t, err)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Unbind(ended), context.Canceled)
	live, err := b.Live(bg) // answered after the unbinding, in order
	require.NoError(t, err)
	assert.False(t, live, "the actor is being stopped")
	require.NoError(t, b.Unbind(bg), "a later Unbind waits for the same release")
	bind(t, sys, ident("a"), newProbe(t, false).config(0))
}

// SPEC R5: a call whose context expires while the registry is busy ends
// with the context's error, and the registry serves later calls.
func TestRegistryCalls_ReturnDeadlineExceededWhileTheRegistryIsBusy(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	release := blockRegistry(t, sys)

	expiring := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	_, err := sys.Registry().Bind(expiring(), ident("new"), p.config(0))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Bind")
	_, err = b.Activate(expiring())
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Activate")
	_, err = b.Live(expiring())
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Live")
	_, err = b.Ask(expiring(), msg{seq: 1})
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Ask")
	assert.ErrorIs(t, b.Unbind(expiring()), context.DeadlineExceeded, "Unbind")

	release()
	// The queued requests are served, and so are new ones.
	b2 := bind(t, sys, ident("after"), p.config(0))
	live, err := b2.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live)
}

// A caller whose Bind gave up (its context ended) may retry at once: the
// abandoned bind must not make the retry fail with ErrBound, which says
// that somebody else owns the identity.
func TestBind_RetryAfterAnAbandonedBindIsNotErrBound(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	release := blockRegistry(t, sys)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := sys.Registry().Bind(ctx, ident("a"), p.config(0))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// The retry, sent right after the abandoned Bind returned.
	_, retried := sys.Registry().BindNoWait(ident("a"), p.config(0))
	release()
	assert.NoError(t, next(t, retried, "answer to the retried bind"),
		"the abandoned bind still held the identity when the retry arrived")
}

// ---- activation and order --------------------------------------------------

func TestBinding_ProducerIsNotCalledUntilTheFirstMessage(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))

	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live, "live before any message")
	assert.Zero(t, p.produced.Load(), "producer called before any message")
	none(t, p.events, "lifecycle event before any message")

	b.Send(msg{seq: 1})
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	assert.Equal(t, got{1, msg{seq: 1}}, next(t, p.got, "first message"))
	assert.EqualValues(t, 1, p.produced.Load())
	live, err = b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)
}

func TestBinding_SendsThroughOneBindingArriveInOrder(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	const n = 2000
	for i := 1; i <= n; i++ {
		b.Send(msg{seq: i})
	}
	for i := 1; i <= n; i++ {
		require.Equal(t, got{1, msg{seq: i}}, next(t, p.got, "message "+strconv.Itoa(i)))
	}
	assert.EqualValues(t, 1, p.produced.Load())
}

// Messages sent through one Binding arrive in the order sent even when the
// first ones are still queued at the registry as the activation makes the
// actor reachable directly.
func TestBinding_SendsArriveInOrderWhenTheActivationOvertakesQueuedRoutes(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	release := blockRegistry(t, sys)

	// Not live: both queue at the busy registry.
	entered, rel := make(chan struct{}), make(chan struct{})
	b.Send(hold{entered: entered, release: rel})
	b.Send(msg{seq: 1})
	release()
	// The registry activated the actor for the hold and is delivering it.
	next(t, entered, "actor entering the first message")
	b.Send(msg{seq: 2}) // the actor is live now
	close(rel)

	first := next(t, p.got, "first msg")
	second := next(t, p.got, "second msg")
	assert.Equal(t, []int{1, 2}, []int{first.m.seq, second.m.seq},
		"msg 2 went straight to the actor and overtook msg 1, still queued at the registry")
}

// ---- Activate --------------------------------------------------------------

func TestActivate_StartsTheActorAndReturnsAPIDAPlainSenderCanUse(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))

	pid, err := b.Activate(ctxT(t))
	require.NoError(t, err)
	require.NotNil(t, pid)
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)

	again, err := b.Activate(ctxT(t))
	require.NoError(t, err)
	assert.True(t, pid.Equal(again), "a live actor is not activated again")
	assert.EqualValues(t, 1, p.produced.Load())

	in := actors.NewInbox(sys)
	defer in.Close()
	sys.Root().RequestWithCustomSender(pid, msg{seq: 1}, in.PID())
	rep, err := in.Receive(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, reply{msg{seq: 1}, 1}, rep)
	sys.Root().Send(pid, msg{seq: 2})
	assert.Equal(t, got{1, msg{seq: 1}}, next(t, p.got, "request"))
	assert.Equal(t, got{1, msg{seq: 2}}, next(t, p.got, "plain send"))
}

func TestActivate_OfAReleasedBindingIsErrUnbound(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	require.NoError(t, b.Unbind(ctxT(t)))
	_, err := b.Activate(ctxT(t))
	assert.ErrorIs(t, err, actors.ErrUnbound)
	assert.Zero(t, p.produced.Load())
}

// An Activate that arrives during a passivation waits for it; if the
// binding is released meanwhile it is answered with ErrUnbound, not left
// waiting for its context.
func TestActivate_HeldDuringPassivationIsAnsweredWhenUnbound(t *testing.T) {
	b, gate := passivating(t)

	activated := b.ActivateNoWait()
	unbound := b.UnbindNoWait()
	close(gate)
	next(t, unbound, "unbind")
	pid := next(t, activated, "answer to the held Activate")
	assert.Nil(t, pid)
}

// ---- passivation -----------------------------------------------------------

func TestPassivation_StopsAnIdleActorAndTheNextMessageActivatesANewOne(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	b := bind(t, sys, ident("a"), p.config(idle))

	b.Send(msg{seq: 1})
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	assert.Equal(t, got{1, msg{seq: 1}}, next(t, p.got, "first message"))
	assert.Equal(t, event{1, "stopping"}, next(t, p.events, "passivation"))
	assert.Equal(t, event{1, "stopped"}, next(t, p.events, "passivation"))
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live, "live after passivation")
	assert.EqualValues(t, 1, p.produced.Load())

	b.Send(msg{seq: 2})
	assert.Equal(t, event{2, "started"}, next(t, p.events, "second activation"))
	assert.Equal(t, got{2, msg{seq: 2}}, next(t, p.got, "message to the new instance"))
	assert.EqualValues(t, 2, p.produced.Load(), "a new instance comes from the producer")
}

func TestPassivation_AnActorReportingBusyIsNotPassivated(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	p.idle = func(int) bool { return false }
	b := bind(t, sys, ident("a"), p.config(idle))

	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	for range 3 { // three idle timeouts passed
		next(t, p.idles, "Idle call")
	}
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	none(t, p.events, "lifecycle event of a busy actor")

	b.Send(msg{seq: 2})
	assert.Equal(t, got{1, msg{seq: 2}}, next(t, p.got, "message to the same instance"))
	assert.EqualValues(t, 1, p.produced.Load())
}

// witnessPassivation activates an idle actor with IdleTimeout idle and
// waits until it is passivated: at least idle has passed since the call.
func witnessPassivation(t *testing.T, sys *actors.System) {
	t.Helper()
	w := newProbe(t, true)
	b := bind(t, sys, ident("witness"), w.config(idle))
	defer func() { require.NoError(t, b.Unbind(ctxT(t))) }()
	b.Send(msg{})
	for {
		if e := next(t, w.events, "witness passivation"); e.kind == "stopped" {
			return
		}
	}
}

func TestPassivation_ZeroIdleTimeoutNeverPassivates(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")

	witnessPassivation(t, sys)
	assert.Zero(t, p.idleCalls.Load(), "Idle asked without an IdleTimeout")
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	none(t, p.events, "lifecycle event")
}

func TestPassivation_AnActorThatIsNoPassivatorIsNeverPassivated(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(idle))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")

	witnessPassivation(t, sys)
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	none(t, p.events, "lifecycle event")
}

// An actor idle when it reports but busy when the passivation request
// arrives refuses it: it stays live, with its state, and keeps receiving
// messages; it is passivated once it is idle again.
func TestPassivation_RefusedByAnActorBusyAgainKeepsItLive(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	var allow atomic.Bool
	p.idle = func(call int) bool { return call == 1 || allow.Load() }
	b := bind(t, sys, ident("a"), p.config(idle))

	b.Send(msg{seq: 1})
	assert.Equal(t, got{1, msg{seq: 1}}, next(t, p.got, "first message"))
	assert.Equal(t, 1, next(t, p.idles, "idle report"))
	assert.Equal(t, 2, next(t, p.idles, "passivation request"))

	const n = 100
	for i := 2; i <= n; i++ {
		b.Send(msg{seq: i})
	}
	for i := 2; i <= n; i++ {
		require.Equal(t, got{1, msg{seq: i}}, next(t, p.got, "message after the refusal"))
	}
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live)
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	none(t, p.events, "lifecycle event after the refusal")
	assert.EqualValues(t, 1, p.produced.Load())

	allow.Store(true)
	assert.Equal(t, event{1, "stopping"}, next(t, p.events, "passivation once idle"))
}

// SPEC R4: Live asked while a passivation is under way answers how it
// ended: an actor that refuses it (busy again) is live, and one that
// stops is not; neither is reported passivated before it has decided.
func TestLive_DuringAPassivationAnswersItsOutcome(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			sys := newSystem(t)
			p := newProbe(t, true)
			gate := make(chan struct{})
			p.idle = func(call int) bool {
				if call == 2 { // the passivation request: the registry waits for the answer
					<-gate
					return !refuse
				}
				return call == 1
			}
			b := bind(t, sys, ident("a"), p.config(idle))
			b.Send(msg{seq: 1})
			next(t, p.got, "first message")
			next(t, p.idles, "idle report")
			next(t, p.idles, "passivation request")
			asked := b.LiveNoWait() // queued behind the passivation's outcome
			close(gate)
			assert.Equal(t, refuse, next(t, asked, "Live's answer"))
		})
	}
}

// SPEC R4: passivation and re-activation are transparent: while the actor
// keeps passivating, every message sent through Send and Ask by many
// goroutines arrives exactly once, and each goroutine's in the order sent.
func TestPassivation_NoMessageIsLostOrReorderedWhileTheActorKeepsPassivating(t *testing.T) {
	const (
		senders   = 8
		perSender = 1500 // a multiple of 10: the last message is an Ask
	)
	sys := newSystem(t)
	log := &seqLog{next: make([]int, senders)}
	for i := range log.next {
		log.next[i] = 1
	}
	stops, idles := newSignal(), newSignal()
	var produced atomic.Int32
	b := bind(t, sys, ident("busy"), actors.BindConfig{
		Producer: func() actor.Actor {
			return &seqActor{inst: int(produced.Add(1)), log: log, stops: stops, idles: idles}
		},
		IdleTimeout: time.Millisecond,
	})
	t.Cleanup(func() { // ends a stuck registry, if a failure left one
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		_ = b.Unbind(ctx)
	})

	ctx := ctxT(t)
	errs := make(chan error, senders)
	for s := range senders {
		go func() { errs <- sendSeq(ctx, b, s, perSender, stops, idles) }()
	}
	for range senders {
		require.NoError(t, next(t, errs, "a sender to finish"))
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Empty(t, log.bad, "messages lost, duplicated or out of order")
	assert.Equal(t, senders*perSender, log.count, "messages received")
	for s, n := range log.next {
		assert.Equal(t, perSender+1, n, "sender %d", s)
	}
	n, _ := stops.load()
	assert.GreaterOrEqual(t, n, 3, "passivations: the test did not exercise passivation")
	t.Logf("%d messages, %d activations", senders*perSender, produced.Load())
}

// sendSeq sends msgs 1..n from sender s: every tenth is an Ask, and after
// every fiftieth the sender waits until the actor that answered it has
// passivated, or (every other time) only until an idle timeout, so that
// sends meet the actor starting, reporting idle, stopping and stopped.
func sendSeq(ctx context.Context, b *actors.Binding, s, n int, stops, idles *signal) error {
	for seq := 1; seq <= n; seq++ {
		m := msg{from: s, seq: seq}
		if seq%10 != 0 {
			b.Send(m)
			continue
		}
		idle0, _ := idles.load()
		rep, err := b.Ask(ctx, m)
		if err != nil {
			return fmt.Errorf("sender %d, ask %d: %w", s, seq, err)
		}
		r, ok := rep.(reply)
		if !ok || r.m != m {
			return fmt.Errorf("sender %d, ask %d: reply %v", s, seq, rep)
		}
		if seq%50 != 0 {
			continue
		}
		untilStopped := seq%100 == 0
		for {
			st, stCh := stops.load()
			id, idCh := idles.load()
			if st >= r.inst || (!untilStopped && id > idle0) {
				break
			}
			select {
			case <-stCh:
			case <-idCh:
			case <-ctx.Done():
				return fmt.Errorf("sender %d after %d: no passivation: %w", s, seq, ctx.Err())
			}
		}
	}
	return nil
}

// signal is a counter that goroutines wait on.
type signal struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) inc() {
	s.mu.Lock()
	s.n++
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// load returns the count and a channel closed when it changes.
func (s *signal) load() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.ch
}

// seqLog is the "store" of seqActor: it outlives the instances and checks
// that each sender's messages arrive once each and in order.
type seqLog struct {
	mu    sync.Mutex
	next  []int // per sender: the seq expected next
	count int
	bad   []string
}

func (l *seqLog) add(m msg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if m.seq != l.next[m.from] && len(l.bad) < 20 {
		l.bad = append(l.bad, fmt.Sprintf("sender %d: got %d, want %d", m.from, m.seq, l.next[m.from]))
	}
	if m.seq >= l.next[m.from] {
		l.next[m.from] = m.seq + 1
	}
}

type seqActor struct {
	inst         int
	log          *seqLog
	stops, idles *signal
}

func (a *seqActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Stopped:
		a.stops.inc() // instances stop in order: the count is the last one stopped
	case msg:
		a.log.add(m)
		if c.Sender() != nil {
			c.Respond(reply{m: m, inst: a.inst})
		}
	}
}

func (a *seqActor) Idle() bool {
	a.idles.inc()
	return true
}

// SPEC R4: a Binding's direct send runs an idle actor's mailbox on the sender's
// goroutine (the inline dispatcher). If the actor's idle tick is processed
// in that run (the message before it took longer than the IdleTimeout),
// the passivation it starts must not wait for that very send to finish:
// the registry would spin on its drained message forever, on the
// sender's goroutine, and every caller of the registry would hang.
//
// The actor reports busy until it holds the message: on a busy machine
// the sending goroutine may start later than the IdleTimeout, and the
// actor's own timer would otherwise passivate it first, so that the
// message went through the registry to a new activation. Its start is
// quick (it runs inside Activate), so the direct send finds its mailbox
// idle and runs it on the sender's goroutine.
func TestPassivation_StartedInsideADirectSendCompletes(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	var holding atomic.Bool
	p.idle = func(int) bool { return holding.Load() }
	cfg := p.config(idle)
	cfg.QuickStart = true
	b := bind(t, sys, ident("a"), cfg)
	pid, err := b.Activate(ctxT(t))
	require.NoError(t, err)

	entered, rel := make(chan struct{}), make(chan struct{})
	sent := make(chan struct{})
	go func() {
		b.Send(hold{entered: entered, release: rel}) // direct: the actor is live
		close(sent)
	}()
	next(t, entered, "actor entering the held message")
	holding.Store(true)                     // idle once the held message is over
	sys.Root().Send(pid, actors.IdleTick()) // the timer fires meanwhile
	witnessPassivation(t, sys)              // the held message took longer than idle
	close(rel)

	select {
	case <-sent:
	case <-time.After(limit):
		t.Error("Send never returned: the registry waits for this very send to finish before it passivates")
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		require.NoError(t, b.Unbind(ctx), "an Unbind ends the registry's loop")
		return
	}
	for {
		if e := next(t, p.events, "passivation"); e.kind == "stopped" {
			break
		}
	}
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live)
}

// An idle actor reports once and waits for the registry's answer: a busy
// registry is not sent a report per live actor per IdleTimeout, which
// makes it slower still (see ManyIdentities below).
//
// The actor reports busy until the registry is blocked: a test goroutine
// late by more than the IdleTimeout would otherwise have its report
// answered, and the passivation's own Idle call counted as a repeat.
func TestPassivation_AnUnansweredIdleReportIsNotRepeated(t *testing.T) {
	sys := newSystem(t)
	clock := newSystem(t) // its registry measures time while sys's is busy
	p := newProbe(t, true)
	var blocked atomic.Bool
	reported := make(chan int, 1) // the Idle call that reported idle
	p.idle = func(call int) bool {
		if !blocked.Load() {
			return false
		}
		select {
		case reported <- call:
		default:
		}
		return true
	}
	b := bind(t, sys, ident("a"), p.config(idle))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	release := blockRegistry(t, sys)
	blocked.Store(true)
	call := next(t, reported, "idle report")

	for range 3 { // at least 3 × idle pass
		witnessPassivation(t, clock)
	}
	assert.EqualValues(t, call, p.idleCalls.Load(), "idle reports sent while the first was unanswered")

	release()
	for {
		if e := next(t, p.events, "passivation"); e.kind == "stopped" {
			break
		}
	}
}

// SPEC R4 at scale: many small actors all passivate, and all come back on
// their next message, each message received once.
func TestPassivation_ManyIdentitiesAllPassivateAndComeBack(t *testing.T) {
	const n = 10000
	sys := newSystem(t)
	m := newMany(n)
	var produced atomic.Int32
	cfg := actors.BindConfig{
		Producer: func() actor.Actor {
			produced.Add(1)
			return &manyActor{m: m}
		},
		IdleTimeout: idle,
	}
	bs := make([]*actors.Binding, n)
	ctx := ctxT(t)
	for i := range bs {
		b, err := sys.Registry().Bind(ctx, ident("many/"+strconv.Itoa(i)), cfg)
		require.NoError(t, err)
		bs[i] = b
	}
	m.sendAll(t, bs, 1)
	m.wait(t, m.done[1], "all first messages")
	m.wait(t, m.allStopped, "all passivations")
	assert.EqualValues(t, n, produced.Load())

	m.sendAll(t, bs, 2)
	m.wait(t, m.done[2], "all second messages")
	assert.EqualValues(t, 2*n, produced.Load(), "each came back as a new instance")
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range n {
		if m.seen[1][i] != 1 || m.seen[2][i] != 1 {
			t.Fatalf("identity %d: first message received %d times, second %d times", i, m.seen[1][i], m.seen[2][i])
		}
	}
}

type many struct {
	n          int
	mu         sync.Mutex
	seen       [3][]int
	count      [3]int
	done       [3]chan struct{}
	stopped    int
	allStopped chan struct{}
	received   *signal
}

func newMany(n int) *many {
	m := &many{n: n, allStopped: make(chan struct{}), received: newSignal()}
	for i := range m.seen {
		m.seen[i] = make([]int, n)
		m.done[i] = make(chan struct{})
	}
	return m
}

// sendAll sends msg seq to every binding, a chunk at a time: the next
// chunk goes once the last one has arrived, so the registry never has a
// backlog of more than a chunk (see AnUnansweredIdleReportIsNotRepeated
// for what a backlog longer than the IdleTimeout does to it).
func (m *many) sendAll(t *testing.T, bs []*actors.Binding, seq int) {
	t.Helper()
	const chunk = 500
	for lo := 0; lo < len(bs); lo += chunk {
		hi := min(lo+chunk, len(bs))
		for i := lo; i < hi; i++ {
			bs[i].Send(msg{from: i, seq: seq})
		}
		for {
			_, changed := m.received.load()
			m.mu.Lock()
			arrived := m.count[seq]
			m.mu.Unlock()
			if arrived >= hi {
				break
			}
			select {
			case <-changed:
			case <-time.After(limit):
				t.Fatalf("message %d: %d of the first %d arrived within %v", seq, arrived, hi, limit)
			}
		}
	}
}

func (m *many) wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(limit):
		m.mu.Lock()
		defer m.mu.Unlock()
		t.Fatalf("no %s within %v: of %d, %d first and %d second messages received, %d passivated",
			what, limit, m.n, m.count[1], m.count[2], m.stopped)
	}
}

type manyActor struct{ m *many }

func (a *manyActor) Receive(c actor.Context) {
	m := a.m
	switch x := c.Message().(type) {
	case *actor.Stopped:
		m.mu.Lock()
		m.stopped++
		if m.stopped == m.n {
			close(m.allStopped)
		}
		m.mu.Unlock()
	case msg:
		m.mu.Lock()
		m.seen[x.seq][x.from]++
		m.count[x.seq]++
		if m.count[x.seq] == m.n {
			close(m.done[x.seq])
		}
		m.mu.Unlock()
		m.received.inc()
	}
}

func (a *manyActor) Idle() bool { return true }

// ---- faults ----------------------------------------------------------------

// SPEC R6: an owner whose Receive panics is stopped, never restarted in
// place with fresh state; its next message activates a fresh instance
// through the producer (which loads its state from the store).
func TestRegistry_AnActorWhoseReceivePanicsIsStoppedNotRestarted(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	require.Equal(t, event{1, "started"}, next(t, p.events, "start"))
	next(t, p.got, "first message")

	b.Send(boom{})
	require.Equal(t, event{1, "stopping"}, next(t, p.events, "event after the panic"),
		"the supervisor in place restarted the actor with fresh state")
	require.Equal(t, event{1, "stopped"}, next(t, p.events, "stop after the panic"))
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live)
	assert.EqualValues(t, 1, p.produced.Load())

	b.Send(msg{seq: 2})
	assert.Equal(t, event{2, "started"}, next(t, p.events, "fresh activation"))
	assert.Equal(t, got{2, msg{seq: 2}}, next(t, p.got, "message to the fresh instance"))
	assert.EqualValues(t, 2, p.produced.Load())
}

// SPEC R6, R5: the messages an owner had not begun when it panicked are
// not lost with it: they reach its next activation, in the order sent, a
// request's answer included, and so does a message sent after the panic.
// Before, they were dropped with the stopped actor (or sent on to its dead
// id until the registry learnt of the stop), and a caller waited forever.
func TestRegistry_MessagesAnActorHadNotBegunWhenItPanickedReachItsNextActivation(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	entered, release := make(chan struct{}), make(chan struct{})
	// From a goroutine of its own: a send may run the actor on the
	// sender's goroutine, and this one holds it.
	go b.Send(hold{entered: entered, release: release})
	next(t, entered, "the actor holding")
	require.Equal(t, event{1, "started"}, next(t, p.events, "start"))

	// Queued behind the hold, straight in the actor's mailbox: the panic,
	// then a message and a request it never begins.
	b.Send(boom{})
	b.Send(msg{seq: 1})
	in := actors.NewInbox(sys)
	defer in.Close()
	b.Request(msg{seq: 2}, in)
	close(release)

	require.Equal(t, event{1, "stopping"}, next(t, p.events, "the panicked actor stopping"))
	// The next activation may start before the stopped one has seen its
	// Stopped (the registry is told first).
	events := []event{next(t, p.events, "the panicked actor stopped")}
	if events[0] != (event{1, "stopped"}) {
		events = append(events, next(t, p.events, "the panicked actor stopped"))
	}
	b.Send(msg{seq: 3})
	if len(events) == 1 {
		events = append(events, next(t, p.events, "the next activation"))
	}
	assert.ElementsMatch(t, []event{{1, "stopped"}, {2, "started"}}, events)
	for _, seq := range []int{1, 2, 3} {
		assert.Equal(t, got{2, msg{seq: seq}}, next(t, p.got, fmt.Sprintf("message %d", seq)))
	}
	rep, err := in.Receive(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, reply{m: msg{seq: 2}, inst: 2}, rep, "the request's answer")
	none(t, p.got, "message")
}

// SPEC R5, R6: the caller of the very message whose handling panicked gets
// an answer too: an Ask ends at once with the *FaultError naming the
// identity and the panic (an owner that knows its messages answers them
// itself, actors.FaultAnswerer), not when its context ends; the next
// message reaches a fresh activation.
func TestRegistry_AnAskWhoseMessagePanicsEndsWithTheFault(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	_, err := b.Ask(context.Background(), boom{})
	var fe *actors.FaultError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, ident("a"), fe.Identity)
	assert.Equal(t, "boom", fe.Value)
	assert.False(t, fe.Starting)

	rep, err := b.Ask(ctxT(t), msg{seq: 1})
	require.NoError(t, err)
	assert.Equal(t, reply{m: msg{seq: 1}, inst: 2}, rep)
}

// SPEC R6: an owner that panics while starting is not activated again
// (it would panic at every activation, and the messages it never began
// would go round forever): its identity is released, and the wait for an
// answer it held ends with an error that names the fault. The identity
// can then be bound again.
func TestRegistry_AnActorThatPanicsWhileStartingReleasesItsIdentity(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	p.startPanic = func(inst int) bool { return inst == 2 }
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")

	b.Send(boom{})
	_, err := b.Ask(ctxT(t), msg{seq: 2})
	require.ErrorIs(t, err, actors.ErrUnbound)
	var fe *actors.FaultError
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.Starting)
	assert.Equal(t, ident("a"), fe.Identity)
	assert.Contains(t, err.Error(), "boom in Started")
	select {
	case <-b.Released():
	default:
		t.Fatal("the binding is not released")
	}
	require.ErrorIs(t, b.Err(), actors.ErrUnbound)
	_, err = b.Activate(ctxT(t))
	require.ErrorAs(t, err, &fe)
	none(t, p.got, "message")

	b2 := bind(t, sys, ident("a"), p.config(0))
	rep, err := b2.Ask(ctxT(t), msg{seq: 3})
	require.NoError(t, err)
	assert.Equal(t, reply{m: msg{seq: 3}, inst: 3}, rep)
}

// SPEC R6, R5: under faults, no message sent through a binding is lost or
// reordered: senders each send a numbered sequence, some messages make
// the actor panic, and every other one reaches some activation, each
// sender's in the order sent; so too when the actor also passivates
// between them, and when it starts on the sender's goroutine. Once all
// are delivered, the binding sends directly again (nothing is left
// counted as routed).
func TestRegistry_FaultsLoseAndReorderNoMessage(t *testing.T) {
	for _, c := range []struct {
		name        string
		passivating bool
		quick       bool
	}{{"live", false, false}, {"passivating", true, false}, {"passivating, quick start", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			sys := newSystem(t)
			p := newProbe(t, c.passivating)
			cfg := p.config(0)
			if c.passivating {
				cfg = p.config(time.Millisecond)
			}
			cfg.QuickStart = c.quick
			b := bind(t, sys, ident("a"), cfg)
			const senders, per = 4, 300
			var wg sync.WaitGroup
			for from := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for seq := range per {
						if seq%37 == 5 && from == 0 {
							b.Send(boom{})
						}
						b.Send(msg{from: from, seq: seq})
					}
				}()
			}
			wg.Wait()
			last := make([]int, senders)
			for i := range last {
				last[i] = -1
			}
			for range senders * per {
				g := next(t, p.got, "message")
				require.Equal(t, last[g.m.from]+1, g.m.seq, "sender %d's messages in order", g.m.from)
				last[g.m.from] = g.m.seq
			}
			assert.Greater(t, p.produced.Load(), int32(5), "the actor panicked and came back")
			// The registry's bookkeeping of the last delivery is done once
			// it has answered a later request.
			_, err := b.Live(ctxT(t))
			require.NoError(t, err)
			assert.Zero(t, b.Routed(), "sends go straight to the actor again")
		})
	}
}

// ---- Unbind ----------------------------------------------------------------

func TestUnbind_StopsTheLiveActorAndWaitsForIt(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	assert.Equal(t, event{1, "started"}, next(t, p.events, "start"))

	require.NoError(t, b.Unbind(ctxT(t)))
	// Stopping is handled when Unbind returns: nothing to wait for. The
	// owner's Stopped may still run (the registry is told first, on the
	// goroutine that stops the owner, which is not always the registry's).
	select {
	case e := <-p.events:
		assert.Equal(t, event{1, "stopping"}, e)
	default:
		t.Error("Unbind returned before the actor was stopping")
	}
	assert.Equal(t, event{1, "stopped"}, next(t, p.events, "stopped"))
	live, err := b.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live)
}

func TestUnbind_DropsMessagesSentAfterIt(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "first message")
	require.NoError(t, b.Unbind(ctxT(t)))

	b.Send(msg{seq: 2})
	in := actors.NewInbox(sys)
	defer in.Close()
	b.Request(msg{seq: 3}, in)
	_, err := b.Ask(ctxT(t), msg{seq: 4})
	assert.ErrorIs(t, err, actors.ErrUnbound, "no answer can come: the Ask ends at once")
	_, err = b.Activate(ctxT(t)) // after the sends in the registry's mailbox
	require.ErrorIs(t, err, actors.ErrUnbound)

	assert.EqualValues(t, 1, p.produced.Load(), "activated after Unbind")
	none(t, p.got, "message sent after Unbind")
}

// A Binding that was released keeps nothing of the identity: what is sent
// through it does not reach the next binding of the same identity.
func TestUnbind_ReleasedBindingNeverReachesTheNextBindingOfItsIdentity(t *testing.T) {
	sys := newSystem(t)
	old := newProbe(t, false)
	b1 := bind(t, sys, ident("a"), old.config(0))
	require.NoError(t, b1.Unbind(ctxT(t)))

	p := newProbe(t, false)
	b2 := bind(t, sys, ident("a"), p.config(0))
	b1.Send(msg{seq: 1})
	live, err := b2.Live(ctxT(t)) // after b1's send in the registry's mailbox
	require.NoError(t, err)
	assert.False(t, live, "a send through the released binding activated the new one")
	none(t, p.got, "message through the released binding")

	_, err = b1.Activate(ctxT(t))
	assert.ErrorIs(t, err, actors.ErrUnbound, "Activate through the released binding")
	live, err = b1.Live(ctxT(t))
	require.NoError(t, err)
	assert.False(t, live, "Live through the released binding")
}

func TestUnbind_TwiceIsFineAndLeavesTheNextBindingAlone(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b1 := bind(t, sys, ident("a"), p.config(0))
	b1.Send(msg{seq: 1})
	next(t, p.got, "first message")
	require.NoError(t, b1.Unbind(ctxT(t)))
	require.NoError(t, b1.Unbind(ctxT(t)))

	p2 := newProbe(t, false)
	b2 := bind(t, sys, ident("a"), p2.config(0))
	b2.Send(msg{seq: 2})
	next(t, p2.got, "message to the new binding")
	require.NoError(t, b1.Unbind(ctxT(t)))
	live, err := b2.Live(ctxT(t))
	require.NoError(t, err)
	assert.True(t, live, "unbinding a released binding again stopped the identity's new binding")
}

func TestUnbind_OfAPassivatedIdentityReturnsWithoutActivating(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, true)
	b := bind(t, sys, ident("a"), p.config(idle))
	b.Send(msg{seq: 1})
	for {
		if e := next(t, p.events, "passivation"); e.kind == "stopped" {
			break
		}
	}
	require.NoError(t, b.Unbind(ctxT(t)))
	assert.EqualValues(t, 1, p.produced.Load())
	none(t, p.events, "lifecycle event")
	_, err := sys.Registry().Bind(ctxT(t), ident("a"), p.config(0))
	assert.NoError(t, err, "released")
}

// ---- Ask and Request -------------------------------------------------------

func TestAsk_ReturnsTheReply(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	for i := 1; i <= 100; i++ { // inboxes are reused from the second on
		rep, err := b.Ask(ctxT(t), msg{seq: i})
		require.NoError(t, err)
		require.Equal(t, reply{msg{seq: i}, 1}, rep)
	}
}

func TestAsk_WhoseContextEndsReturnsItsErrorAndItsLateReplyReachesNoLaterAsk(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	_, err := b.Ask(ctxT(t), msg{seq: 0}) // an inbox in the free list
	require.NoError(t, err)

	for _, c := range []struct {
		name    string
		timeout time.Duration // 0: cancelled instead
		want    error
	}{
		{"cancelled", 0, context.Canceled},
		{"deadline", 20 * time.Millisecond, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if c.timeout > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), c.timeout)
			}
			defer cancel()
			kept := make(chan struct{})
			asked := make(chan error, 1)
			go func() {
				_, err := b.Ask(ctx, keep{kept: kept})
				asked <- err
			}()
			next(t, kept, "request to reach the actor")
			if c.timeout == 0 {
				cancel()
			}
			assert.ErrorIs(t, next(t, asked, "Ask to end"), c.want)

			done := make(chan struct{})
			b.Send(answerKept{done: done})
			next(t, done, "late reply")
			for i := 1; i <= 3; i++ {
				rep, err := b.Ask(ctxT(t), msg{seq: i})
				require.NoError(t, err)
				assert.Equal(t, reply{msg{seq: i}, 1}, rep, "a later Ask got the late reply")
			}
		})
	}
}

// Ask waits for one reply; a second reply to the same request must not be
// taken for the answer of a later Ask.
func TestAsk_ASecondReplyReachesNoLaterAsk(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	rep, err := b.Ask(ctxT(t), twice{})
	require.NoError(t, err)
	assert.Equal(t, "first", rep)

	rep, err = b.Ask(ctxT(t), msg{seq: 1})
	require.NoError(t, err)
	assert.Equal(t, reply{msg{seq: 1}, 1}, rep, "a later Ask got the second reply of an earlier one")
}

func TestRequest_RepliesReachTheInboxInOrder(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	in := actors.NewInbox(sys)
	defer in.Close()
	for i := 1; i <= 50; i++ {
		b.Request(msg{seq: i}, in)
	}
	for i := 1; i <= 50; i++ {
		rep, err := in.Receive(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, reply{msg{seq: i}, 1}, rep)
	}
}

// ---- Inbox -----------------------------------------------------------------

func TestInbox_ReceiveReturnsMessagesInOrder(t *testing.T) {
	sys := newSystem(t)
	in := actors.NewInbox(sys)
	defer in.Close()
	const n = 10000 // sending never blocks, read or not
	for i := range n {
		sys.Root().Send(in.PID(), i)
	}
	for i := range n {
		m, err := in.Receive(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, i, m)
	}
}

func TestInbox_ReceiveWaitsForAMessage(t *testing.T) {
	sys := newSystem(t)
	in := actors.NewInbox(sys)
	defer in.Close()
	res := make(chan any, 1)
	ctx := ctxT(t)
	go func() {
		m, err := in.Receive(ctx)
		if err != nil {
			res <- err
			return
		}
		res <- m
	}()
	none(t, res, "message from an empty inbox")
	sys.Root().Send(in.PID(), "x")
	assert.Equal(t, "x", next(t, res, "message"))
}

func TestInbox_ReceiveReturnsTheContextErrorWhenItEnds(t *testing.T) {
	sys := newSystem(t)
	in := actors.NewInbox(sys)
	defer in.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := in.Receive(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := in.Receive(ctx)
		errc <- err
	}()
	cancel()
	assert.ErrorIs(t, next(t, errc, "Receive to end"), context.Canceled)

	// The inbox still works.
	sys.Root().Send(in.PID(), "after")
	m, err := in.Receive(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "after", m)
}

func TestInbox_ReceiveReturnsErrClosedAfterClose(t *testing.T) {
	sys := newSystem(t)
	in := actors.NewInbox(sys)
	errc := make(chan error, 1)
	ctx := ctxT(t)
	go func() {
		_, err := in.Receive(ctx)
		errc <- err
	}()
	in.Close()
	assert.ErrorIs(t, next(t, errc, "waiting Receive to end"), actors.ErrClosed)
	_, err := in.Receive(ctxT(t))
	assert.ErrorIs(t, err, actors.ErrClosed)
	in.Close() // twice is a no-op
}

func TestInbox_SendingToAClosedInboxNeverBlocks(t *testing.T) {
	sys := newSystem(t)
	in := actors.NewInbox(sys)
	sys.Root().Send(in.PID(), "before")
	in.Close()
	done := make(chan struct{})
	go func() {
		for i := range 10000 {
			sys.Root().Send(in.PID(), i)
		}
		close(done)
	}()
	next(t, done, "sends to a closed inbox to return")
	_, err := in.Receive(ctxT(t))
	assert.ErrorIs(t, err, actors.ErrClosed, "messages of a closed inbox are dropped")
}

func TestInbox_ReceivesTheRespondOfAnActor(t *testing.T) {
	sys := newSystem(t)
	pid, err := sys.Spawn(func() actor.Actor {
		return actor.ReceiveFunc(func(c actor.Context) {
			if s, ok := c.Message().(string); ok {
				c.Respond("re: " + s)
			}
		})
	})
	require.NoError(t, err)
	in := actors.NewInbox(sys)
	defer in.Close()
	sys.Root().RequestWithCustomSender(pid, "hi", in.PID())
	m, err := in.Receive(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "re: hi", m)
}

// ---- System ----------------------------------------------------------------

// SPEC R5: a Close that finds another Close of the System under way waits
// for it (or for its own context): it never reports the System closed
// while its actors may still run. Its context bounds only its wait.
func TestSystem_ASecondCloseWaitsForTheFirst(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	b.Send(msg{seq: 1})
	next(t, p.got, "message")
	release := blockRegistry(t, sys) // the first Close waits for the registry
	first := make(chan error, 1)
	go func() { first <- sys.Close(context.Background()) }()
	next(t, sys.Done(), "the first Close to begin")

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sys.Close(gone), context.Canceled, "a second Close while the first still stops the actors")
	select {
	case <-b.Released():
		t.Fatal("the identity was released while the registry was held")
	default:
	}

	release()
	assert.NoError(t, next(t, first, "the first Close"))
	assert.NoError(t, sys.Close(ctxT(t)), "a Close after the first ended")
	next(t, b.Released(), "the identity released")
}

func TestSystem_CloseStopsTheRegistrysActors(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	ps := make([]*probe, 3)
	for i := range ps {
		ps[i] = newProbe(t, i == 0)
		b, err := sys.Registry().Bind(ctxT(t), ident(strconv.Itoa(i)), ps[i].config(time.Hour))
		require.NoError(t, err)
		b.Send(msg{seq: i})
		next(t, ps[i].got, "message")
	}
	require.NoError(t, sys.Close(ctxT(t)))
	for i, p := range ps {
		var kinds []string
		for len(p.events) > 0 {
			kinds = append(kinds, (<-p.events).kind)
		}
		assert.Equal(t, []string{"started", "stopping", "stopped"}, kinds, "actor %d, when Close returned", i)
	}
	require.NoError(t, sys.Close(ctxT(t)), "twice")
}

// After Close, the registry's calls fail at once with ErrClosed instead of
// waiting for their context.
func TestSystem_RegistryCallsAfterCloseReturnErrClosed(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	b, err := sys.Registry().Bind(ctxT(t), ident("a"), newProbe(t, false).config(0))
	require.NoError(t, err)
	require.NoError(t, sys.Close(ctxT(t)))

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = sys.Registry().Bind(ctx, ident("b"), newProbe(t, false).config(0))
	assert.ErrorIs(t, err, actors.ErrClosed, "Bind")
	_, err = b.Ask(ctx, msg{})
	assert.ErrorIs(t, err, actors.ErrClosed, "Ask")
}

func TestSystem_GoRunsTheFunction(t *testing.T) {
	sys := newSystem(t)
	done := make(chan int, 1)
	sys.Go(func() { done <- 42 })
	assert.Equal(t, 42, next(t, done, "function to run"))
}

// Concurrent Go calls all run, at the same time: none waits for another
// to finish, more of them than the pool keeps, twice so the second round
// runs on the workers the first left.
func TestSystem_ConcurrentGoCallsAllRunAtOnce(t *testing.T) {
	sys := newSystem(t)
	const n, callers = 600, 6
	for round := range 2 {
		var arrived atomic.Int32
		all, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var left atomic.Int32
		left.Store(n)
		for range callers {
			go func() {
				for range n / callers {
					sys.Go(func() {
						if arrived.Add(1) == n {
							close(all)
						}
						<-release
						if left.Add(-1) == 0 {
							close(finished)
						}
					})
				}
			}()
		}
		next(t, all, fmt.Sprintf("round %d: all %d functions running", round, n))
		close(release)
		next(t, finished, "all functions to finish")
	}
}

func TestSystem_GoStillRunsAfterClose(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	warm := make(chan struct{})
	sys.Go(func() { close(warm) }) // leaves a waiting worker
	next(t, warm, "warm-up")
	require.NoError(t, sys.Close(ctxT(t)))
	done := make(chan struct{})
	sys.Go(func() { close(done) })
	next(t, done, "function after Close")
}

func TestDefault_IsOneSystemWithOneRegistry(t *testing.T) {
	a, err := actors.Default()
	require.NoError(t, err)
	b, err := actors.Default()
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Same(t, a.Registry(), b.Registry())
}

// SPEC R5: Activate and Bind after the System closed end with ErrClosed,
// like every other call of the registry, instead of waiting for an answer
// the stopped registry cannot send.
func TestRegistryCalls_AfterTheSystemClosedReturnErrClosed(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	b := bind(t, sys, ident("a"), newProbe(t, false).config(0))
	require.NoError(t, sys.Close(ctxT(t)))
	done := make(chan error, 3)
	go func() { _, err := b.Activate(context.Background()); done <- err }()
	go func() { _, err := b.Live(context.Background()); done <- err }()
	go func() {
		_, err := sys.Registry().Bind(context.Background(), ident("b"), newProbe(t, false).config(0))
		done <- err
	}()
	for range 3 {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, actors.ErrClosed)
		case <-time.After(limit):
			t.Fatal("a registry call after System.Close never returned")
		}
	}
	assert.NoError(t, b.Unbind(context.Background()), "the System's Close released it")
}

// SPEC R4, R5: a request held for an activation while its identity's
// actor is being passivated is dropped when the identity is unbound
// meanwhile; its Ask ends then (ErrUnbound) instead of waiting forever
// for an answer that cannot come.
func TestUnbind_EndsTheAskOfARequestItDropped(t *testing.T) {
	b, gate := passivating(t)
	asked := make(chan error, 1)
	go func() { _, err := b.Ask(context.Background(), msg{seq: 2}); asked <- err }()
	require.Eventually(t, func() bool { // the Ask's request goes to the registry, which holds it: passivating
		return b.Routed() == 1
	}, limit, time.Millisecond)
	unbound := b.UnbindNoWait()
	close(gate)
	next(t, unbound, "unbind")
	select {
	case err := <-asked:
		assert.ErrorIs(t, err, actors.ErrUnbound)
	case <-time.After(limit):
		t.Fatal("an Ask whose request the Unbind dropped never ended")
	}
}

// SPEC R3, R5: the caller whose request activates an owner runs the
// owner's start on its own goroutine while it waits; a caller that stopped
// waiting first leaves the start to the System's pool, so the owner still
// starts and answers later requests.
func TestActivation_ByACallerThatGaveUpStillStartsTheOwner(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	release := blockRegistry(t, sys)
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan error, 1)
	go func() { _, err := b.Ask(ctx, msg{seq: 1}); asked <- err }()
	require.Eventually(t, func() bool { return b.Routed() > 0 }, limit, time.Millisecond, "the Ask's route waits in the registry")
	cancel()
	require.ErrorIs(t, <-asked, context.Canceled)
	release() // the registry activates the owner for a caller that left

	assert.Equal(t, event{1, "started"}, next(t, p.events, "the owner starts anyway"))
	rep, err := b.Ask(ctxT(t), msg{seq: 2})
	require.NoError(t, err)
	assert.Equal(t, reply{m: msg{seq: 2}, inst: 1}, rep)
}

// SPEC R3: an owner's start handed to the Inbox of the request that
// activated it is run by the System's pool if that Inbox is closed
// unread: the owner still starts and gets the request.
func TestActivation_StartHandedToAnInboxClosedUnreadStillRuns(t *testing.T) {
	sys := newSystem(t)
	p := newProbe(t, false)
	b := bind(t, sys, ident("a"), p.config(0))
	in := actors.NewInbox(sys)
	b.Request(msg{seq: 1}, in)
	require.Eventually(t, func() bool { return b.Routed() == 0 }, limit, time.Millisecond, "delivered")
	none(t, p.events, "a start before the Inbox is read or closed")
	in.Close()
	assert.Equal(t, event{1, "started"}, next(t, p.events, "the owner starts"))
	assert.Equal(t, got{1, msg{seq: 1}}, next(t, p.got, "and gets the request"))
}

// SPEC R4, R5: an Ask whose direct send reaches an actor that has just
// stopped (an Unbind, or a Close of the agent, stopping it while the send
// was on its way) is never answered with Proto.Actor's dead-letter notice:
// the registry routes it again, to the next activation, or nowhere once
// the identity is released, which ends the Ask with ErrUnbound. Before,
// Ask returned the *actor.DeadLetterResponse as the actor's reply, and an
// agent's Status or Cancel racing its Close failed with "unexpected reply
// *actor.DeadLetterResponse".
func TestAsk_ThatReachesAStoppedActorIsRoutedAgainNotAnsweredWithADeadLetter(t *testing.T) {
	for _, unbind := range []bool{false, true} {
		t.Run(map[bool]string{false: "reactivated", true: "unbound"}[unbind], func(t *testing.T) {
			sys := newSystem(t)
			p := newProbe(t, false)
			b := bind(t, sys, ident("a"), p.config(0))
			pid, err := b.Activate(ctxT(t))
			require.NoError(t, err)
			// The actor stops while the binding still sends to it
			// directly: the registry, busy, has not heard of the stop.
			release := blockRegistry(t, sys)
			require.NoError(t, sys.Root().StopFuture(pid).Wait())
			if unbind {
				// Asked for, not waited for: it is in the registry's
				// mailbox before anything the Ask sends there.
				cancelled, cancel := context.WithCancel(context.Background())
				cancel()
				require.ErrorIs(t, b.Unbind(cancelled), context.Canceled)
			}
			type answer struct {
				rep any
				err error
			}
			dead := make(chan struct{}, 1)
			sub := sys.Root().ActorSystem().EventStream.Subscribe(func(ev any) {
				if d, ok := ev.(*actor.DeadLetterEvent); ok && d.Message == (msg{seq: 2}) {
					dead <- struct{}{}
				}
			})
			defer sys.Root().ActorSystem().EventStream.Unsubscribe(sub)
			asked := make(chan answer, 1)
			go func() {
				rep, err := b.Ask(ctxT(t), msg{seq: 2})
				asked <- answer{rep, err}
			}()
			next(t, dead, "the ask's message reaching the stopped actor")
			if unbind {
				release()
				got := next(t, asked, "the ask's end")
				assert.Nil(t, got.rep)
				assert.ErrorIs(t, got.err, actors.ErrUnbound)
				return
			}
			release()
			got := next(t, asked, "the ask's answer")
			require.NoError(t, got.err)
			assert.Equal(t, reply{m: msg{seq: 2}, inst: 2}, got.rep, "answered by the next activation")
		})
	}
}
