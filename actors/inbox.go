package actors

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Inbox is a mailbox a Go caller reads: it has a process id, so actors can
// reply to it (one reply, or a stream of them), and Receive waits for the
// next message with the caller's context (SPEC R5). Sending to an Inbox
// never blocks the sender: messages queue until read. Close it when done;
// messages sent after Close are dropped.
type Inbox struct {
	sys *System
	pid *actor.PID

	mu     sync.Mutex
	queue  []any
	wake   chan struct{} // has a value while queue is not empty
	closed bool
	gen    uint64 // of the process id; messages to an older one are dropped
}

// NewInbox returns an open inbox of sys.
func NewInbox(sys *System) *Inbox {
	in := &Inbox{sys: sys, wake: make(chan struct{}, 1)}
	reg := sys.sys.ProcessRegistry
	in.pid, _ = reg.Add(inboxProcess{in: in}, "inbox$"+reg.NextId())
	return in
}

// PID returns the inbox's process id, the sender to give a request.
func (in *Inbox) PID() *actor.PID { return in.pid }

// Receive returns the next message, or ctx's error once ctx ends, or
// ErrClosed after Close or once the System is closed (no reply can come
// then).
func (in *Inbox) Receive(ctx context.Context) (any, error) { return in.receive(ctx, nil) }

// receive is Receive that also ends, with ErrUnbound, once stop is closed
// (nil: never) and nothing is queued.
func (in *Inbox) receive(ctx context.Context, stop <-chan struct{}) (any, error) {
	for {
		in.mu.Lock()
		if len(in.queue) > 0 {
			m := in.queue[0]
			in.queue[0] = nil
			in.queue = in.queue[1:]
			if len(in.queue) > 0 {
				select {
				case in.wake <- struct{}{}:
				default:
				}
			}
			in.mu.Unlock()
			if s, ok := m.(startRun); ok {
				// An owner's start, which this reader waits for. It runs
				// here only for a reader whose wait nothing can end: a
				// start may wait for a store, and a context that ends
				// must end the wait at once (SPEC R5).
				if ctx.Done() == nil {
					s.run()
				} else {
					in.sys.pool.Go(s.run)
				}
				continue
			}
			return m, nil
		}
		closed := in.closed
		in.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-in.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-in.sys.done:
			return nil, ErrClosed
		case <-stop:
			stop = nil // a reply sent before the release may be queued
			in.mu.Lock()
			empty := len(in.queue) == 0
			in.mu.Unlock()
			select {
			case <-in.sys.done:
				continue // the System's Close released it: ErrClosed
			default:
			}
			if empty {
				return nil, ErrUnbound
			}
		}
	}
}

// Close removes the inbox from the system; later messages are dropped and
// a waiting Receive returns ErrClosed. Closing twice is a no-op.
func (in *Inbox) Close() {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return
	}
	in.closed = true
	pending := in.queue
	in.queue = nil
	in.mu.Unlock()
	in.startUnread(pending)
	in.sys.sys.ProcessRegistry.Remove(in.pid)
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// startRun is an owner's first mailbox run, handed by the registry to the
// Inbox of the caller that waits for the owner's answer (registryActor.
// deliver): the reader runs it when it reads it, or the System's pool
// does if the Inbox is closed or renewed first.
type startRun struct{ run func() }

// putStart queues an owner's first run for the reader of the Inbox (of
// generation gen), or gives it to the pool if nobody will read it.
func (in *Inbox) putStart(gen uint64, run func()) {
	in.mu.Lock()
	if in.closed || gen != in.gen {
		in.mu.Unlock()
		in.sys.pool.Go(run)
		return
	}
	in.queue = append(in.queue, startRun{run: run})
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// startUnread gives the owners' starts among messages that will not be
// read (a Close, a renew) to the pool: the owners must still start.
func (in *Inbox) startUnread(msgs []any) {
	for _, m := range msgs {
		if s, ok := m.(startRun); ok {
			in.sys.pool.Go(s.run)
		}
	}
}

func (in *Inbox) put(gen uint64, m any) {
	in.mu.Lock()
	if in.closed || gen != in.gen {
		in.mu.Unlock()
		return
	}
	in.queue = append(in.queue, m)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// inboxProcess is the Proto.Actor process behind an Inbox.
type inboxProcess struct {
	in  *Inbox
	gen uint64
}

func (p inboxProcess) SendUserMessage(_ *actor.PID, message any) {
	p.in.put(p.gen, actor.UnwrapEnvelopeMessage(message))
}

// renew gives the inbox a new process id and empties it: what is sent to
// the old id from now on is dropped.
func (in *Inbox) renew() {
	in.mu.Lock()
	in.gen++
	gen := in.gen
	pending := in.queue
	in.queue = nil
	select {
	case <-in.wake:
	default:
	}
	in.mu.Unlock()
	in.startUnread(pending)
	reg := in.sys.sys.ProcessRegistry
	reg.Remove(in.pid)
	in.pid, _ = reg.Add(inboxProcess{in: in, gen: gen}, "inbox$"+reg.NextId())
}

func (p inboxProcess) SendSystemMessage(*actor.PID, any) {}

func (p inboxProcess) Stop(*actor.PID) { p.in.Close() }

// inboxes keeps the inboxes of asks that got their one reply, for the next
// ask: an ask then costs no process registration. An inbox whose ask ended
// otherwise is closed, never kept, so no late reply reaches another ask.
type inboxes struct {
	mu   sync.Mutex
	free []*Inbox
}

func (f *inboxes) get(sys *System) *Inbox {
	f.mu.Lock()
	if n := len(f.free); n > 0 {
		in := f.free[n-1]
		f.free = f.free[:n-1]
		f.mu.Unlock()
		return in
	}
	f.mu.Unlock()
	return NewInbox(sys)
}

func (f *inboxes) put(in *Inbox) {
	f.mu.Lock()
	if len(f.free) < 64 {
		in.renew()
		f.free = append(f.free, in)
		in = nil
	}
	f.mu.Unlock()
	if in != nil {
		in.Close()
	}
}
