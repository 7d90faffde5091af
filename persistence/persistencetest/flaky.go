package persistencetest

import (
	"context"
	"sync/atomic"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// ErrLoadsFail is what a FailingLoads store's loads return while Failing
// is set.
var ErrLoadsFail = errorString("disk on fire")

type errorString string

func (e errorString) Error() string { return string(e) }

// FailingLoads is a memory store whose loads fail with ErrLoadsFail while
// Failing is set: a store that is down for a while, to test what an
// owner's activation does when its load fails and once the store is back.
type FailingLoads struct {
	*memory.Store
	Failing atomic.Bool
}

// NewFailingLoads returns a FailingLoads over a new memory store, loading.
func NewFailingLoads() *FailingLoads {
	return &FailingLoads{Store: memory.New()}
}

// Load fails while Failing is set, and loads from the memory store
// otherwise.
func (s *FailingLoads) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if s.Failing.Load() {
		return nil, ErrLoadsFail
	}
	return s.Store.Load(ctx, key)
}
