package actors

import (
	"context"
	"fmt"
	"sync"
)

// Closing runs a handle's close exactly once, to its end, whatever its
// callers' contexts do: a caller's context bounds only that caller's wait
// (SPEC R5). A close that stopped halfway because its caller gave up
// would leave an identity bound, or an actor running, that no later Close
// could release. The zero value is ready to use.
type Closing struct {
	mu   sync.Mutex
	done chan struct{} // closed when fn has returned; nil before the first Do
	err  error         // fn's, set before done is closed
}

// Do runs fn on its first call and waits for it to return, or for ctx to
// end: Do then returns ctx's error and fn goes on, on a goroutine of its
// own (when ctx cannot end, fn runs on the caller's goroutine). Every
// later call waits for the same fn and returns its error. fn must return
// at the latest when the System closes.
func (c *Closing) Do(ctx context.Context, fn func() error) error {
	c.mu.Lock()
	first := c.done == nil
	if first {
		c.done = make(chan struct{})
	}
	done := c.done
	c.mu.Unlock()
	if first {
		run := func() {
			defer close(done) // a panic in fn must not leave later calls waiting
			defer func() {
				if r := recover(); r != nil {
					c.err = fmt.Errorf("close panicked: %v", r)
				}
			}()
			c.err = fn()
		}
		if ctx.Done() == nil {
			run()
			return c.err
		}
		go run()
	}
	select {
	case <-done:
		return c.err
	default:
	}
	select {
	case <-done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
