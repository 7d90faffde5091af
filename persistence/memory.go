package persistence

import (
	"bytes"
	"context"
	"encoding/json"
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
	return cloneRecord(r), nil
}

// Save implements Store.
func (s *MemoryStore) Save(ctx context.Context, rec *Record, opts SaveOptions) (int64, error) {
	if err := CheckSave(rec, opts); err != nil {
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
	var cur int64
	if old, ok := s.records[rec.Key]; ok {
		cur = old.Version
	}
	if cur != opts.Base {
		return 0, &ConflictError{Key: rec.Key, Expected: opts.Base, Actual: cur}
	}
	c := cloneRecord(rec)
	c.Version = cur + 1
	c.UpdatedAt = time.Now().UTC()
	s.records[rec.Key] = c
	return c.Version, nil
}

// Delete implements Store.
func (s *MemoryStore) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
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

// Close implements Store.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
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

// CheckSave validates a save's arguments, the same way for every store.
// Stores call it first, so bad input is refused alike everywhere.
func CheckSave(rec *Record, opts SaveOptions) error {
	if rec == nil {
		return errNilRecord
	}
	if err := rec.Key.Validate(); err != nil {
		return err
	}
	if rec.SchemaVersion != SchemaVersion {
		return &DamageError{SessionID: rec.Key.SessionID, File: "record to save", Err: errSchema(rec.SchemaVersion)}
	}
	if opts.Base < 0 || opts.Unchanged < 0 || opts.Unchanged > len(rec.Messages) {
		return errBadOptions
	}
	if !validObject(rec.Data) {
		return &DamageError{SessionID: rec.Key.SessionID, File: "record to save", Err: errDataNotObject}
	}
	for i, m := range rec.Messages {
		if !validObject(m) {
			return &DamageError{SessionID: rec.Key.SessionID, File: "record to save", Err: errMessageNotObject(i)}
		}
	}
	return nil
}
