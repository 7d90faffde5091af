// Package actorstest has test helpers that follow the lifecycle of a
// System's owners through its Observer.
package actorstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/actors"
)

// System returns an actor system of its own, with the default config,
// closed when the test ends: the runtime another process would have.
func System(t testing.TB) *actors.System {
	t.Helper()
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		t.Fatalf("actor system: %v", err)
	}
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	return sys
}

// Lifecycles records what happened to a System's owners: pass its Observe
// as actors.Config.Observer. Safe for concurrent use.
type Lifecycles struct {
	mu         sync.Mutex
	live       map[actors.Identity]bool
	passivated map[actors.Identity]int
	changed    chan struct{} // a signal after every event
}

// NewLifecycles returns an empty record.
func NewLifecycles() *Lifecycles {
	return &Lifecycles{live: map[actors.Identity]bool{}, passivated: map[actors.Identity]int{}, changed: make(chan struct{}, 1)}
}

// Observe is the System's Observer.
func (l *Lifecycles) Observe(id actors.Identity, lc actors.Lifecycle) {
	l.mu.Lock()
	switch lc {
	case actors.Activated:
		l.live[id] = true
	case actors.Passivated:
		delete(l.live, id)
		l.passivated[id]++
	case actors.Stopped:
		delete(l.live, id)
	}
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// AwaitNoneLive returns once no owner is live, and fails t if that takes
// longer than a minute (the limit only turns a hang into a failure). Call
// it when nothing sends to the owners any more, so that none can be
// activated again: an owner's first activation may come before the work
// that a test waits on (an agent's New activates it, and under load its
// idle timeout can end before the next message), so waiting for some
// number of passivations would not say that each one passivated after it.
func (l *Lifecycles) AwaitNoneLive(t testing.TB) {
	t.Helper()
	limit := time.After(time.Minute)
	for {
		l.mu.Lock()
		n := len(l.live)
		l.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-l.changed:
		case <-limit:
			t.Fatalf("%d owners still live", n)
		}
	}
}

// Passivated reports how many times id was passivated.
func (l *Lifecycles) Passivated(id actors.Identity) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.passivated[id]
}

// PassivatedKinds returns "kind:path" of every owner passivated at least
// once.
func (l *Lifecycles) PassivatedKinds() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for id := range l.passivated {
		out[id.Kind+":"+id.Path] = true
	}
	return out
}
