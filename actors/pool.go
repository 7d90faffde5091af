package actors

import (
	"sync/atomic"
)

// pool runs functions on goroutines it keeps: a worker that finishes waits
// for the next function instead of exiting, so the stack it grew is used
// again. Starting a goroutine per mailbox run or per job (Proto.Actor's
// default dispatcher starts one per run) costs a fresh stack that grows,
// by copying, to the depth of an agent's work every time; on a busy
// agent that was most of the actor messaging. At most maxIdle workers
// wait; the others exit when done, so a burst of concurrent jobs does not
// leave its goroutines behind. Safe for concurrent use.
type pool struct {
	work    chan func()
	quit    chan struct{}
	idle    atomic.Int32
	maxIdle int32
}

func newPool(maxIdle int) *pool {
	return &pool{work: make(chan func()), quit: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// Go runs fn on a waiting worker, or on a new one.
func (p *pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		go p.worker(fn)
	}
}

func (p *pool) worker(fn func()) {
	for {
		fn()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
			p.idle.Add(-1)
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

// stop makes the waiting workers exit; running ones exit when done. Go
// still works after stop (it starts a goroutine per call).
func (p *pool) stop() { close(p.quit) }

// inline is the Proto.Actor dispatcher of Braid's actors: a mailbox that
// is not running runs on the goroutine of the sender that finds it idle,
// until it is empty (a sender that finds it running only queues). Braid's
// actors never block in Receive (long work runs on the pool, SPEC R3), so
// a send costs the sender the receiver's bookkeeping and no goroutine
// switch; a reply channel or an Inbox is then the only wake-up a request
// takes each way.
type inline struct{ throughput int }

func (inline) Schedule(fn func()) { fn() }
func (d inline) Throughput() int  { return d.throughput }
