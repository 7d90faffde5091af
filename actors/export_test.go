package actors

import "github.com/asynkron/protoactor-go/actor"

// Test-only hooks. Each sends one registry request exactly as the exported
// call does, but returns its reply channel instead of waiting on it, so a
// test can fix the order of requests in the registry's mailbox while the
// registry is busy.

// BindNoWait is the first half of Bind.
func (r *Registry) BindNoWait(id Identity, cfg BindConfig) (*Binding, <-chan error) {
	reply := make(chan error, 1)
	b := &Binding{r: r, id: id, live: newLiveRef()}
	r.sys.Root().Send(r.pid, &bindReq{id: id, cfg: cfg, live: b.live, reply: reply})
	return b, reply
}

// ActivateNoWait is the first half of Activate.
func (b *Binding) ActivateNoWait() <-chan *actor.PID {
	reply := make(chan *actor.PID, 1)
	b.r.sys.Root().Send(b.r.pid, &activateReq{id: b.id, live: b.live, reply: reply})
	return reply
}

// UnbindNoWait is the first half of Unbind.
func (b *Binding) UnbindNoWait() <-chan struct{} {
	reply := make(chan struct{}, 1)
	b.r.sys.Root().Send(b.r.pid, &unbindReq{id: b.id, live: b.live, reply: reply})
	return reply
}

// IdleTick is the message the shell's idle timer sends to the actor.
func IdleTick() any { return idleTick{} }

// Routed is the number of the binding's messages the registry holds or
// has not delivered yet.
func (b *Binding) Routed() int32 { return b.live.routed.Load() }

// LiveNoWait is the first half of Live.
func (b *Binding) LiveNoWait() <-chan bool {
	reply := make(chan bool, 1)
	b.r.sys.Root().Send(b.r.pid, &liveReq{id: b.id, live: b.live, reply: reply})
	return reply
}
