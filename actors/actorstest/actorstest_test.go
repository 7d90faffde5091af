package actorstest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
)

func TestLifecycles_AwaitNoneLiveWaitsForTheLastOwnerToStop(t *testing.T) {
	l := actorstest.NewLifecycles()
	a := actors.Identity{SessionID: "s", Kind: "agent", Path: "a"}
	b := actors.Identity{SessionID: "s", Kind: "agent", Path: "b"}
	l.Observe(a, actors.Activated)
	l.Observe(a, actors.Passivated)
	l.Observe(a, actors.Activated) // activated again: live once more
	l.Observe(b, actors.Activated)
	done := make(chan struct{})
	go func() {
		l.AwaitNoneLive(t)
		close(done)
	}()
	l.Observe(a, actors.Passivated)
	select {
	case <-done:
		t.Fatal("returned while b is live")
	default:
	}
	l.Observe(b, actors.Stopped)
	<-done
	assert.Equal(t, 2, l.Passivated(a))
	assert.Equal(t, 0, l.Passivated(b))
	assert.Equal(t, map[string]bool{"agent:a": true}, l.PassivatedKinds())
}
