package actors

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Config configures a System.
type Config struct {
	// Logger receives Proto.Actor's log lines. Nil discards them.
	Logger *slog.Logger
	// Observer, if not nil, is told each time the registry activates an
	// owner's actor, passivates one, or sees one stop otherwise (unbound,
	// failed). It runs on the registry's goroutine and must not block:
	// metrics, logs, tests waiting for a passivation.
	Observer func(Identity, Lifecycle)
}

// Lifecycle is what happened to an owner's actor.
type Lifecycle int

// Lifecycle events.
const (
	// Activated: a new actor was started for the identity.
	Activated Lifecycle = iota + 1
	// Passivated: the idle actor was stopped; the next message activates
	// it again.
	Passivated
	// Stopped: the actor stopped otherwise (Unbind, or a fault).
	Stopped
)

func (l Lifecycle) String() string {
	switch l {
	case Activated:
		return "activated"
	case Passivated:
		return "passivated"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// DefaultConfig returns the defaults: a silent logger.
func DefaultConfig() Config { return Config{} }

// System is one Proto.Actor actor system. It is safe for concurrent use.
// Close it when done: it stops every actor spawned through it.
type System struct {
	sys      *actor.ActorSystem
	registry *Registry
	pool     *pool
	jobs     jobs
	inboxes  inboxes
	mu       sync.Mutex
	pids     map[*actor.PID]struct{}
	closed   bool
	done     chan struct{} // closed by Close
	ctx      context.Context
	cancel   context.CancelCauseFunc // ends ctx (ErrClosed) when Close begins
	closing  Closing                 // the shutdown, run once to its end
}

// ErrClosed reports that the system was closed.
var ErrClosed = errors.New("actor system closed")

// NewSystem starts an actor system.
func NewSystem(cfg Config) (*System, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 100}))
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return logger.With("lib", "protoactor")
	}))
	s := &System{sys: sys, pids: make(map[*actor.PID]struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.pool = newPool(256, &s.jobs)
	r, err := newRegistry(s, cfg.Observer)
	if err != nil {
		return nil, err
	}
	s.registry = r
	return s, nil
}

// Done is closed when Close is called: from then on no actor of the
// System answers, so a wait for an answer should end (ErrClosed).
func (s *System) Done() <-chan struct{} { return s.done }

// Context returns a context that ends when Close is called, with cause
// ErrClosed: the parent of work that must stop when the System closes
// and that no message can reach (an owner's activation).
func (s *System) Context() context.Context { return s.ctx }

// Go runs fn on a goroutine of the system's worker pool: an owner's long
// work (SPEC R3) runs there, on a stack grown by earlier work. fn is one
// of the System's jobs: Close waits for it to return, so it must return
// once its owner's actor has stopped (its work cancelled) or the System
// is closed (Done).
func (s *System) Go(fn func()) { s.pool.Go(fn) }

// Run runs fn on the calling goroutine as one of the System's jobs, as Go
// does on the pool's (Close waits for it to return), and reports true;
// once Close has begun it runs nothing and reports false. It is how an
// owner runs a job on a goroutine it was lent (a caller's that waits for
// the job's outcome anyway), and how a job handed over before Close that
// has not begun yet is kept from beginning after it.
func (s *System) Run(fn func()) bool {
	if !s.jobs.add(true) {
		return false
	}
	defer s.jobs.done()
	fn()
	return true
}

// mailboxes is the dispatcher of the system's actors (see inline).
func (s *System) mailboxes() actor.Dispatcher { return inline{throughput: 300} }

// UniqueID returns a short string no other call on s returns: the path of
// an owner that has no session to name it.
func (s *System) UniqueID() string { return s.sys.ProcessRegistry.NextId() }

// Registry returns the system's registry of owners (one per System).
func (s *System) Registry() *Registry { return s.registry }

// Root returns the system's root context.
func (s *System) Root() *actor.RootContext { return s.sys.Root }

// Actor returns the underlying Proto.Actor system.
func (s *System) Actor() *actor.ActorSystem { return s.sys }

// Spawn starts an actor from a producer and tracks it, so Close stops it.
func (s *System) Spawn(producer actor.Producer, opts ...actor.PropsOption) (*actor.PID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	opts = append([]actor.PropsOption{actor.WithDispatcher(s.mailboxes()), actor.WithMailbox(newMailbox)}, opts...)
	pid := s.sys.Root.Spawn(actor.PropsFromProducer(producer, opts...))
	s.pids[pid] = struct{}{}
	return pid, nil
}

// Stop stops one actor and waits until it has stopped or ctx ends.
func (s *System) Stop(ctx context.Context, pid *actor.PID) error {
	s.mu.Lock()
	_, ok := s.pids[pid]
	delete(s.pids, pid)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return stopAndWait(ctx, s.sys, pid)
}

func stopAndWait(ctx context.Context, sys *actor.ActorSystem, pid *actor.PID) error {
	done := make(chan struct{})
	f := sys.Root.StopFuture(pid)
	go func() {
		_ = f.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops every tracked actor, waits for the jobs of the System's
// owners to return (the functions given to Go and run by Run: an
// agent's invocation, an orchestrator's save, a node's run; stopping an
// owner cancels its jobs, and a job not begun by then never begins), and
// shuts the system down. So once Close has returned nil, nothing of the
// System's owners runs any more: a store they used can be closed. A job
// that does not watch its context keeps Close waiting until it returns.
// Close waits for all that until ctx ends, and then returns ctx's error;
// the work goes on (SPEC R5: a caller's context bounds only its wait), and
// every later Close waits for the same work, or for its own ctx, and
// returns its outcome: once one has returned nil, nothing of the System
// runs any more, whatever the earlier ones returned. From the first Close
// on, Run runs nothing, Done is closed and Context has ended. A job of the System (a hook, tool, model or node of
// one of its owners) must not call Close with a context that cannot end:
// Close would wait for that job, which waits for Close.
func (s *System) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.jobs.close()
		close(s.done)
		s.cancel(ErrClosed)
	}
	s.mu.Unlock()
	return s.closing.Do(ctx, func() error { return s.shutdown(context.Background()) })
}

// shutdown is the first Close's work.
func (s *System) shutdown(ctx context.Context) error {
	// The owners first (the registry's, spawned from the root), then the
	// actors spawned through Spawn, the registry's own included.
	pids, err := s.registry.shutdown(ctx)
	s.mu.Lock()
	for p := range s.pids {
		pids = append(pids, p)
	}
	s.pids = nil
	s.mu.Unlock()
	for _, p := range pids {
		if e := stopAndWait(ctx, s.sys, p); e != nil && err == nil {
			err = e
		}
	}
	if err == nil {
		// The owners have stopped and cancelled their jobs.
		err = s.jobs.wait(ctx)
	}
	s.sys.Shutdown()
	s.pool.stop()
	return err
}

// defaultSystem is the process's lazily started default System: the one
// piece of package state of Braid's runtime, documented at Default.
var defaultSystem struct {
	once sync.Once
	sys  *System
	err  error
}

// Default returns the process's default System, started on the first call
// and shared by every owner built without a System of its own (SPEC R4:
// one registry per process). It logs nowhere and lives as long as the
// process; a program that wants to stop its actors, or to log, builds its
// own with NewSystem and passes it in the owners' configs.
func Default() (*System, error) {
	defaultSystem.once.Do(func() { defaultSystem.sys, defaultSystem.err = NewSystem(DefaultConfig()) })
	return defaultSystem.sys, defaultSystem.err
}
