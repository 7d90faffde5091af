package persistence

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// MemoryStore keeps records in memory, for tests. Safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[Key]*Record
	closed  bool
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{records: map[Key]*Record{}} }

// Load implements Store.
func (s *MemoryStore) Load(ctx context.Context, key Key) (*Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	r, ok := s.records[key]
	if !ok {
		return nil, ErrNotFound
	}
	c := cloneRecord(r)
	if err := CheckLoaded(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Save implements Store.
func (s *MemoryStore) Save(ctx context.Context, _ SaveOptions, changes ...Change) ([]int64, error) {
	if err := CheckSave(changes); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	for _, c := range changes {
		var cur int64
		old, ok := s.records[c.Key]
		if ok {
			if err := CheckStored(c.Key, old.Version); err != nil {
				return nil, err
			}
			cur = old.Version
		}
		if cur != c.Base {
			return nil, &ConflictError{Key: c.Key, Expected: c.Base, Actual: cur}
		}
		if ok && old.SchemaVersion != SchemaVersion {
			return nil, SchemaDamage(c.Key, "record", old.SchemaVersion)
		}
		if ok && old.Incarnation != c.Incarnation {
			return nil, &ConflictError{Key: c.Key, Expected: c.Base, Actual: cur, Recreated: true}
		}
		if ok && c.From > len(old.Messages) {
			return nil, ErrFromPastEnd(c, len(old.Messages))
		}
	}
	now := time.Now().UTC()
	versions := make([]int64, len(changes))
	for i, c := range changes {
		r := s.records[c.Key]
		if r == nil {
			r = &Record{Key: c.Key, Incarnation: c.Incarnation}
			s.records[c.Key] = r
		}
		r.SchemaVersion, r.Version, r.UpdatedAt, r.Data = SchemaVersion, r.Version+1, now, bytes.Clone(c.Data)
		r.Messages = r.Messages[:c.From]
		for _, m := range c.Messages {
			r.Messages = append(r.Messages, bytes.Clone(m))
		}
		versions[i] = r.Version
	}
	return versions, nil
}

// Sync implements Store: memory has nothing to make durable.
func (s *MemoryStore) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return ctx.Err()
}

// Delete implements Store.
func (s *MemoryStore) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	delete(s.records, key)
	return nil
}

// DeleteSession implements Store.
func (s *MemoryStore) DeleteSession(ctx context.Context, sessionID string) (int, error) {
	if err := ValidateID("session", sessionID); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	n := 0
	for k := range s.records {
		if k.SessionID == sessionID {
			delete(s.records, k)
			n++
		}
	}
	return n, nil
}

// Session implements Store.
func (s *MemoryStore) Session(ctx context.Context, sessionID string) ([]*Record, error) {
	if err := ValidateID("session", sessionID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	var out []*Record
	for k, r := range s.records {
		if k.SessionID != sessionID {
			continue
		}
		c := cloneRecord(r)
		if err := CheckLoaded(c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Record) int {
		return cmp.Or(cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.ID, b.Key.ID))
	})
	return out, nil
}

// Sessions implements Store.
func (s *MemoryStore) Sessions(ctx context.Context) ([]SessionInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	by := map[string]*SessionInfo{}
	for k, r := range s.records {
		in := by[k.SessionID]
		if in == nil {
			in = &SessionInfo{SessionID: k.SessionID}
			by[k.SessionID] = in
		}
		in.Records++
		if r.UpdatedAt.After(in.UpdatedAt) {
			in.UpdatedAt = r.UpdatedAt
		}
	}
	out := make([]SessionInfo, 0, len(by))
	for _, in := range by {
		out = append(out, *in)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.SessionID, b.SessionID) })
	return out, nil
}

// Close implements Store.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Tamper lets fn change a stored record in place, bypassing every check,
// as a person editing the database by hand would: for damage tests. It
// reports whether the record exists.
func (s *MemoryStore) Tamper(key Key, fn func(*Record)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if ok {
		fn(r)
	}
	return ok
}

func cloneRecord(r *Record) *Record {
	c := *r
	c.Data = bytes.Clone(r.Data)
	c.Messages = make([]json.RawMessage, len(r.Messages))
	for i, m := range r.Messages {
		c.Messages[i] = bytes.Clone(m)
	}
	return &c
}
