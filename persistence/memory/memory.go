package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/persistence"
)

// Store is a persistence.Store that keeps records in memory, for tests:
// nothing survives the process. Safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	records map[persistence.Key]*persistence.Record
	closed  bool
}

// New returns an empty Store.
func New() *Store { return &Store{records: map[persistence.Key]*persistence.Record{}} }

// Load implements persistence.Store.
func (s *Store) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return nil, persistence.ErrNotFound
	}
	c := cloneRecord(r)
	if err := persistence.CheckLoaded(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Save implements persistence.Store.
func (s *Store) Save(ctx context.Context, _ persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if err := persistence.CheckSave(changes); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	for _, c := range changes {
		var cur int64
		old, ok := s.records[c.Key]
		if ok {
			if err := persistence.CheckStored(c.Key, old.Version); err != nil {
				return nil, err
			}
			cur = old.Version
		}
		if cur != c.Base {
			return nil, &persistence.ConflictError{Key: c.Key, Expected: c.Base, Actual: cur}
		}
		if ok && old.SchemaVersion != persistence.SchemaVersion {
			return nil, persistence.SchemaDamage(c.Key, "record", old.SchemaVersion)
		}
		if ok && old.Incarnation != c.Incarnation {
			return nil, &persistence.ConflictError{Key: c.Key, Expected: c.Base, Actual: cur, Recreated: true}
		}
		if ok && c.From > len(old.Messages) {
			return nil, persistence.ErrFromPastEnd(c, len(old.Messages))
		}
	}
	now := time.Now().UTC()
	versions := make([]int64, len(changes))
	for i, c := range changes {
		r := s.records[c.Key]
		if r == nil {
			r = &persistence.Record{Key: c.Key, Incarnation: c.Incarnation}
			s.records[c.Key] = r
		}
		r.SchemaVersion, r.Version, r.UpdatedAt, r.Data = persistence.SchemaVersion, r.Version+1, now, bytes.Clone(c.Data)
		r.Messages = r.Messages[:c.From]
		for _, m := range c.Messages {
			r.Messages = append(r.Messages, bytes.Clone(m))
		}
		versions[i] = r.Version
	}
	return versions, nil
}

// Sync implements persistence.Store: memory has nothing to make durable.
func (s *Store) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persistence.ErrClosed
	}
	return ctx.Err()
}

// Delete implements persistence.Store.
func (s *Store) Delete(ctx context.Context, key persistence.Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.records, key)
	return nil
}

// DeleteSession implements persistence.Store.
func (s *Store) DeleteSession(ctx context.Context, sessionID string) (int, error) {
	if err := persistence.ValidateID("session", sessionID); err != nil {
		return 0, err
	}
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for k := range s.records {
		if k.SessionID == sessionID {
			delete(s.records, k)
			n++
		}
	}
	return n, nil
}

// Session implements persistence.Store.
func (s *Store) Session(ctx context.Context, sessionID string) ([]*persistence.Record, error) {
	if err := persistence.ValidateID("session", sessionID); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []*persistence.Record
	for k, r := range s.records {
		if k.SessionID != sessionID {
			continue
		}
		c := cloneRecord(r)
		if err := persistence.CheckLoaded(c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *persistence.Record) int {
		return cmp.Or(cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.ID, b.Key.ID))
	})
	return out, nil
}

// Sessions implements persistence.Store.
func (s *Store) Sessions(ctx context.Context) ([]persistence.SessionInfo, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	by := map[string]*persistence.SessionInfo{}
	for k, r := range s.records {
		in := by[k.SessionID]
		if in == nil {
			in = &persistence.SessionInfo{SessionID: k.SessionID}
			by[k.SessionID] = in
		}
		in.Records++
		if r.UpdatedAt.After(in.UpdatedAt) {
			in.UpdatedAt = r.UpdatedAt
		}
	}
	out := make([]persistence.SessionInfo, 0, len(by))
	for _, in := range by {
		out = append(out, *in)
	}
	slices.SortFunc(out, func(a, b persistence.SessionInfo) int { return cmp.Compare(a.SessionID, b.SessionID) })
	return out, nil
}

// Close implements persistence.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Tamper lets fn change a stored record in place, bypassing every check,
// as a person editing the database by hand would: for damage tests. It
// reports whether the record exists.
func (s *Store) Tamper(key persistence.Key, fn func(*persistence.Record)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if ok {
		fn(r)
	}
	return ok
}

func cloneRecord(r *persistence.Record) *persistence.Record {
	c := *r
	c.Data = bytes.Clone(r.Data)
	c.Messages = make([]json.RawMessage, len(r.Messages))
	for i, m := range r.Messages {
		c.Messages[i] = bytes.Clone(m)
	}
	return &c
}

// enter locks the store for a call with ctx: ctx's error, or
// persistence.ErrClosed once Close was called, and the store is not
// locked then.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return persistence.ErrClosed
	}
	return nil
}
