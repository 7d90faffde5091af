package actors

import (
	"context"
	"sync"
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
	jobs    *jobs // counts every function from Go until it returns
}

func newPool(maxIdle int, jobs *jobs) *pool {
	return &pool{work: make(chan func()), quit: make(chan struct{}), maxIdle: int32(maxIdle), jobs: jobs}
}

// Go runs fn on a waiting worker, or on a new one.
func (p *pool) Go(fn func()) {
	p.jobs.add(false)
	select {
	case p.work <- fn:
	default:
		go p.worker(fn)
	}
}

func (p *pool) worker(fn func()) {
	for {
		p.call(fn)
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

// call runs fn and counts it done, even if it panics.
func (p *pool) call(fn func()) {
	defer p.jobs.done()
	fn()
}

// stop makes the waiting workers exit; running ones exit when done. Go
// still works after stop (it starts a goroutine per call).
func (p *pool) stop() { close(p.quit) }

// jobs counts the System's jobs that have not returned (the functions
// given to Go, and those Run runs), so that Close can wait for them.
// Safe for concurrent use.
type jobs struct {
	mu      sync.Mutex
	n       int
	closing bool          // Close has begun: Run refuses
	idle    chan struct{} // made by wait, closed when n drops to zero
}

// add counts a job, unless refuse is set and Close has begun; it reports
// whether it counted it.
func (j *jobs) add(refuse bool) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if refuse && j.closing {
		return false
	}
	j.n++
	return true
}

// done ends a job add counted.
func (j *jobs) done() {
	j.mu.Lock()
	j.n--
	if j.n == 0 && j.idle != nil {
		close(j.idle)
		j.idle = nil
	}
	j.mu.Unlock()
}

// close makes Run refuse from now on.
func (j *jobs) close() {
	j.mu.Lock()
	j.closing = true
	j.mu.Unlock()
}

// wait returns once no job runs, or ctx's error once ctx ends.
func (j *jobs) wait(ctx context.Context) error {
	idle := j.idleChan()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// idleChan returns a channel closed once no job runs, or nil when none
// runs now.
func (j *jobs) idleChan() <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.n == 0 {
		return nil
	}
	if j.idle == nil {
		j.idle = make(chan struct{})
	}
	return j.idle
}

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
