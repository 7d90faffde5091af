package actors

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Serial is an actor that grants turns one at a time, in the order they are
// asked for: Braid's agents are Serial actors, and their invocations are the
// turns. The actor only decides whose turn it is; the work itself runs on the
// goroutine of the caller that asked (which waits for it anyway), so the
// mailbox stays free while a turn waits on a model or a tool, and no
// goroutine is started per turn. Safe for concurrent use.
type Serial struct {
	sys    *System
	pid    *actor.PID
	mu     sync.RWMutex
	closed bool
}

// NewSerial spawns a Serial actor in sys.
func NewSerial(sys *System) (*Serial, error) { return newSerial(sys, nil) }

// newSerial spawns a Serial whose actor calls onQueued, if not nil, each time
// it queues a turn behind the running one, with the number now queued. It
// runs on the actor's goroutine and must not block. Tests use it to know
// that a turn waits in the queue (export_test.go).
func newSerial(sys *System, onQueued func(queued int)) (*Serial, error) {
	pid, err := sys.Spawn(func() actor.Actor { return &serialActor{onQueued: onQueued} })
	if err != nil {
		return nil, err
	}
	return &Serial{sys: sys, pid: pid}, nil
}

// PID returns the actor's process id.
func (s *Serial) PID() *actor.PID { return s.pid }

// Do runs fn as one turn: after every turn asked for before it, and alone.
// fn runs on the calling goroutine. Do returns ErrClosed if the actor is
// closed (or closes before the turn comes), or ctx's error if ctx ends
// before the turn comes, in which case fn never runs.
func (s *Serial) Do(ctx context.Context, fn func(ctx context.Context)) error {
	t := &turn{granted: make(chan struct{})}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.sys.Root().Send(s.pid, t)
	s.mu.RUnlock()
	select {
	case <-t.granted:
	case <-ctx.Done():
		if t.state.CompareAndSwap(turnQueued, turnAbandoned) {
			return ctx.Err()
		}
		<-t.granted
		if t.err == nil {
			s.sys.Root().Send(s.pid, turnDone{})
			return ctx.Err()
		}
	}
	if t.err != nil {
		return t.err
	}
	defer s.sys.Root().Send(s.pid, turnDone{})
	fn(ctx)
	return nil
}

// Close refuses new turns, rejects the queued ones with ErrClosed, waits for
// the current one to finish (or ctx to end), and stops the actor. Closing
// twice is a no-op.
func (s *Serial) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	drained := make(chan struct{})
	s.sys.Root().Send(s.pid, &closeMsg{done: drained})
	select {
	case <-drained:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.sys.Release(s.pid)
	return nil
}

const (
	turnQueued int32 = iota
	turnGranted
	turnAbandoned
)

type turn struct {
	state   atomic.Int32
	granted chan struct{} // closed when the turn is granted or rejected
	err     error         // set before granted is closed, for a rejection
}

type turnDone struct{}

type closeMsg struct{ done chan struct{} }

type serialActor struct {
	busy     bool
	queue    []*turn
	closing  *closeMsg
	onQueued func(queued int)
}

func (x *serialActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *turn:
		if x.closing != nil {
			reject(m)
			return
		}
		if x.busy {
			x.queue = append(x.queue, m)
			if x.onQueued != nil {
				x.onQueued(len(x.queue))
			}
			return
		}
		x.grant(m)
	case turnDone:
		x.busy = false
		if x.closing != nil {
			close(x.closing.done)
			return
		}
		for len(x.queue) > 0 && !x.busy {
			next := x.queue[0]
			x.queue[0] = nil
			x.queue = x.queue[1:]
			x.grant(next)
		}
	case *closeMsg:
		x.closing = m
		for _, t := range x.queue {
			reject(t)
		}
		x.queue = nil
		if !x.busy {
			close(m.done)
		}
	}
}

// grant gives t the turn, unless its caller gave up waiting.
func (x *serialActor) grant(t *turn) {
	if t.state.CompareAndSwap(turnQueued, turnGranted) {
		x.busy = true
		close(t.granted)
	}
}

func reject(t *turn) {
	if t.state.CompareAndSwap(turnQueued, turnGranted) {
		t.err = ErrClosed
		close(t.granted)
	}
}
