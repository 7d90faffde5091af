package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/memory"
)

// saveLog is a store that keeps what it committed, in order, so that a
// test can rebuild the session as it stood after any save: what a crash
// right after that save leaves (a save is atomic, SPEC S6). Where
// copyingStore reads the whole session back after every save, saveLog
// keeps each save's changes (and any delete) and replays them in a fresh
// memory store when a copy is asked for: the cost is that of the few
// copies a test resumes from, not a read of the session per save. The
// memory store's replay is exact: versions follow from each change's
// Base, incarnations are the changes' own; only update times differ,
// and an export does not carry them into the store it is written to.
// last checks the replay of every save against the wrapped store itself.
type saveLog struct {
	persistence.Store
	session string
	mu      sync.Mutex
	ops     []func(context.Context, persistence.Store) error
	saves   []int // saves[k]: ops up to and with save k
}

func (s *saveLog) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	return s.save(ctx, opts, true, changes...)
}

// write writes exp into the wrapped store as export.Write does: the
// session a process starts from, replayed before the saves but not
// counted as one.
func (s *saveLog) write(ctx context.Context, exp *export.Session) error {
	return export.Write(ctx, uncountedSaves{s}, exp)
}

// uncountedSaves is a saveLog whose saves are replayed, not counted.
type uncountedSaves struct{ *saveLog }

func (u uncountedSaves) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	return u.save(ctx, opts, false, changes...)
}

func (s *saveLog) save(ctx context.Context, opts persistence.SaveOptions, counted bool, changes ...persistence.Change) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.Store.Save(ctx, opts, changes...)
	if err == nil {
		kept := make([]persistence.Change, len(changes))
		for i, c := range changes {
			c.Data = bytes.Clone(c.Data)
			c.Messages = make([]json.RawMessage, len(c.Messages))
			for j, m := range changes[i].Messages {
				c.Messages[j] = bytes.Clone(m)
			}
			kept[i] = c
		}
		s.ops = append(s.ops, func(ctx context.Context, st persistence.Store) error {
			_, err := st.Save(ctx, opts, kept...)
			return err
		})
		if counted {
			s.saves = append(s.saves, len(s.ops))
		}
	}
	return v, err
}

func (s *saveLog) Delete(ctx context.Context, key persistence.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.Store.Delete(ctx, key)
	if err == nil {
		s.ops = append(s.ops, func(ctx context.Context, st persistence.Store) error { return st.Delete(ctx, key) })
	}
	return err
}

func (s *saveLog) DeleteSession(ctx context.Context, sessionID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.Store.DeleteSession(ctx, sessionID)
	if err == nil {
		s.ops = append(s.ops, func(ctx context.Context, st persistence.Store) error {
			_, err := st.DeleteSession(ctx, sessionID)
			return err
		})
	}
	return n, err
}

// count returns how many saves s committed.
func (s *saveLog) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saves)
}

// copy returns the session as it stood right after save k (from 0).
func (s *saveLog) copy(t *testing.T, k int) *export.Session {
	t.Helper()
	s.mu.Lock()
	ops := s.ops[:s.saves[k]]
	s.mu.Unlock()
	ctx := context.Background()
	st := memory.New()
	for i, op := range ops {
		require.NoError(t, op(ctx, st), "replay of operation %d of %d", i+1, len(ops))
	}
	exp, err := export.Read(ctx, st, s.session)
	require.NoError(t, err)
	return exp
}

// last returns the session as the wrapped store holds it, and checks
// that the replay of every save rebuilds it (update times aside): the
// copies are what the store committed.
func (s *saveLog) last(t *testing.T) *export.Session {
	t.Helper()
	held, err := export.Read(context.Background(), s.Store, s.session)
	require.NoError(t, err)
	replayed := s.copy(t, s.count()-1)
	require.Equal(t, withoutUpdateTimes(held), withoutUpdateTimes(replayed), "the replay of the saves rebuilds what the store holds")
	return held
}

// withoutUpdateTimes returns exp with its records' update times zeroed.
func withoutUpdateTimes(exp *export.Session) *export.Session {
	c := *exp
	c.Records = append([]export.Record(nil), exp.Records...)
	for i := range c.Records {
		c.Records[i].UpdatedAt = time.Time{}
	}
	return &c
}
