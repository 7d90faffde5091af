package persistencetest

import (
	"context"
	"sync/atomic"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// GatedLoads is a memory store whose loads can be held: while Gate holds a
// channel, a load of a record of Kind (of any kind when Kind is empty)
// sends on Loading and then waits until that channel is closed. It lets a
// test hold an owner's activation at its load, for as long as it wants,
// with a handshake instead of a sleep. Loading must be read for every load
// made while Gate is set.
type GatedLoads struct {
	*memory.Store
	Kind    persistence.Kind
	Gate    atomic.Pointer[chan struct{}]
	Loading chan struct{}
}

// NewGatedLoads returns a GatedLoads over a new memory store, for loads of
// kind (empty: all), with no gate set and Loading buffered for one load.
func NewGatedLoads(kind persistence.Kind) *GatedLoads {
	return &GatedLoads{Store: memory.New(), Kind: kind, Loading: make(chan struct{}, 1)}
}

// Load implements persistence.Store.
func (s *GatedLoads) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if g := s.Gate.Load(); g != nil && (s.Kind == "" || key.Kind == s.Kind) {
		s.Loading <- struct{}{}
		<-*g
	}
	return s.Store.Load(ctx, key)
}
