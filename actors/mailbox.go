package actors

import (
	"runtime"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// mailbox is the Proto.Actor mailbox of Braid's actors, plugged in with
// actor.WithMailbox. It keeps Proto.Actor's contract (system messages
// before user messages, SuspendMailbox/ResumeMailbox, a panic escalated
// to the supervisor, a yield every throughput messages, a MessageBatch
// posted as its messages and then itself) and differs from Proto.Actor's
// unbounded mailboxes in what a message costs: the queues are slices
// reused once drained (no node allocated per message) and the function it
// schedules is made once (the default mailbox makes one per schedule).
// With the inline dispatcher, both were most of the allocations of a
// request to an owner that answers at once. The queues are guarded by one
// mutex, held only to push or pop.
type mailbox struct {
	mu        sync.Mutex
	user      queue
	system    queue
	running   bool // scheduled or processing: a post only queues
	suspended bool

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
	process    func() // m.processMessages, made once
	// first, if set, runs the mailbox's first run instead of the
	// dispatcher (then it is cleared): see registryActor.live.
	first func(func())
}

func newMailbox() actor.Mailbox {
	m := &mailbox{}
	m.process = m.processMessages
	return m
}

// queue is a FIFO on a slice whose storage is reused once it is drained.
type queue struct {
	items []any
	head  int
}

func (q *queue) push(m any) { q.items = append(q.items, m) }

func (q *queue) pop() (any, bool) {
	if q.head == len(q.items) {
		return nil, false
	}
	m := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if cap(q.items) > 64 {
			q.items = nil // a burst does not keep its storage
		}
	}
	return m, true
}

func (q *queue) len() int { return len(q.items) - q.head }

func (m *mailbox) PostUserMessage(message any) {
	if batch, ok := message.(actor.MessageBatch); ok {
		for _, msg := range batch.GetMessages() {
			m.PostUserMessage(msg)
		}
	} else if env, ok := message.(*actor.MessageEnvelope); ok {
		if batch, ok := env.Message.(actor.MessageBatch); ok {
			for _, msg := range batch.GetMessages() {
				m.PostUserMessage(msg)
			}
		}
	}
	m.post(&m.user, message)
}

func (m *mailbox) PostSystemMessage(message any) { m.post(&m.system, message) }

func (m *mailbox) post(q *queue, message any) {
	m.mu.Lock()
	q.push(message)
	if m.running {
		m.mu.Unlock()
		return
	}
	m.running = true
	first := m.first
	m.first = nil
	m.mu.Unlock()
	if first != nil {
		first(m.process)
		return
	}
	m.dispatcher.Schedule(m.process)
}

func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

func (m *mailbox) Start() {}

func (m *mailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.user.len()
}

// processMessages runs messages until none is left (or only user messages
// while suspended); a panic in one is escalated and the run goes on with
// the next.
func (m *mailbox) processMessages() {
	for idle := false; !idle; {
		idle = m.run()
	}
}

// run processes messages and reports whether the mailbox went idle; false
// after a panic, which it escalated.
func (m *mailbox) run() (idle bool) {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	t := m.dispatcher.Throughput()
	for i := 0; ; i++ {
		if i >= t {
			i = 0
			runtime.Gosched()
		}
		m.mu.Lock()
		if sm, ok := m.system.pop(); ok {
			m.mu.Unlock()
			msg = sm
			switch sm.(type) {
			case *actor.SuspendMailbox:
				m.setSuspended(true)
			case *actor.ResumeMailbox:
				m.setSuspended(false)
			default:
				m.invoker.InvokeSystemMessage(sm)
			}
			continue
		}
		if !m.suspended {
			if um, ok := m.user.pop(); ok {
				m.mu.Unlock()
				msg = um
				m.invoker.InvokeUserMessage(um)
				continue
			}
		}
		m.running = false
		m.mu.Unlock()
		return true
	}
}

func (m *mailbox) setSuspended(v bool) {
	m.mu.Lock()
	m.suspended = v
	m.mu.Unlock()
}
