package actors_test

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// lateProbe is an owner with a child actor whose stop waits for release,
// so that the owner's actor stays stopping after its Stopping; during its
// Stopping it sends itself a message, which Proto.Actor would deliver to
// it while its child stops.
type lateProbe struct {
	childStopping chan struct{}
	release       chan struct{}
	got           chan any // what the owner received after its Stopping
	stopped       bool
}

func (p *lateProbe) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.Spawn(actor.PropsFromFunc(func(cc actor.Context) {
			if _, ok := cc.Message().(*actor.Stopping); ok {
				close(p.childStopping)
				<-p.release
			}
		}))
	case *actor.Stopping:
		p.stopped = true
		c.Send(c.Self(), "late")
	case string:
		if p.stopped {
			p.got <- m
		}
	}
}

// SPEC R4, R5: an owner sees no message once it has had its Stopping,
// even while its actor waits for its children to stop (an orchestrator's
// nodes): it has answered what it held and cancelled its jobs, and a
// message it took then would start work nobody waits for, or that writes
// after its stop. Such a message goes back to the registry, for the next
// activation (dropped when the identity is being unbound).
func TestShell_R4_AnOwnerSeesNoMessageAfterItsStopping(t *testing.T) {
	sys := newSystem(t)
	p := &lateProbe{childStopping: make(chan struct{}), release: make(chan struct{}), got: make(chan any, 1)}
	b := bind(t, sys, ident("late"), actors.BindConfig{Producer: func() actor.Actor { return p }})
	_, err := b.Activate(ctxT(t))
	require.NoError(t, err)

	unbound := make(chan error, 1)
	go func() { unbound <- b.Unbind(context.Background()) }()
	<-p.childStopping // the owner has had its Stopping; its actor waits for the child
	close(p.release)
	require.NoError(t, <-unbound)
	select {
	case m := <-p.got:
		t.Errorf("the owner received %v after its Stopping", m)
	default:
	}
}
