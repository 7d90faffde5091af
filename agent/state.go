package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"
)

// State is an agent's key/value store (SPEC A11): JSON values only, read as
// copies, saved with the session. Hooks and tools reach it through
// ev.Agent.State() and tc.State. Safe for concurrent use.
type State struct {
	mu sync.RWMutex
	kv map[string]json.RawMessage
}

// Get returns a copy of the JSON value stored under key.
func (s *State) Get(key string) (json.RawMessage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.kv[key]
	if !ok {
		return nil, false
	}
	return bytes.Clone(v), true
}

// GetInto unmarshals the value under key into dst. It reports false, and
// leaves dst alone, when there is no such key.
func (s *State) GetInto(key string, dst any) (bool, error) {
	v, ok := s.Get(key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return true, fmt.Errorf("agent state %q: %w", key, err)
	}
	return true, nil
}

// GetString returns the string under key; false when absent or not a string.
func (s *State) GetString(key string) (string, bool) {
	var str string
	ok, err := s.GetInto(key, &str)
	return str, ok && err == nil
}

// Set stores value under key as JSON. A value that cannot be encoded is an
// error and changes nothing. A json.RawMessage is stored as it is after a
// validity check: one JSON value, in UTF-8 (as JSON text is; a session
// could not store it otherwise). The key must be valid UTF-8 too, so that
// it comes back from the session as it was given.
func (s *State) Set(key string, value any) error {
	if key == "" {
		return fmt.Errorf("agent state: empty key")
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("agent state %q: key is not valid UTF-8", key)
	}
	var raw []byte
	switch v := value.(type) {
	case json.RawMessage:
		if !json.Valid(v) || !utf8.Valid(v) {
			return fmt.Errorf("agent state %q: value is not valid JSON in UTF-8", key)
		}
		raw = bytes.Clone(v)
	default:
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("agent state %q: value is not JSON-encodable: %w", key, err)
		}
		raw = b
	}
	s.mu.Lock()
	if s.kv == nil {
		s.kv = make(map[string]json.RawMessage)
	}
	s.kv[key] = raw
	s.mu.Unlock()
	return nil
}

// Delete removes key.
func (s *State) Delete(key string) {
	s.mu.Lock()
	delete(s.kv, key)
	s.mu.Unlock()
}

// Keys returns the keys, sorted.
func (s *State) Keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.kv))
}

// All returns a copy of the whole store.
func (s *State) All() map[string]json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.kv) == 0 {
		return map[string]json.RawMessage{}
	}
	out := make(map[string]json.RawMessage, len(s.kv))
	for k, v := range s.kv {
		out[k] = bytes.Clone(v)
	}
	return out
}

// copyFrom makes s, unused so far, a copy of other.
func (s *State) copyFrom(other *State) {
	other.mu.RLock()
	defer other.mu.RUnlock()
	if len(other.kv) == 0 {
		return
	}
	s.kv = make(map[string]json.RawMessage, len(other.kv))
	for k, v := range other.kv {
		s.kv[k] = bytes.Clone(v)
	}
}

func (s *State) replace(kv map[string]json.RawMessage) {
	if len(kv) == 0 && len(s.kv) == 0 {
		return
	}
	c := make(map[string]json.RawMessage, len(kv))
	for k, v := range kv {
		c[k] = bytes.Clone(v)
	}
	s.mu.Lock()
	s.kv = c
	s.mu.Unlock()
}

// StateOf returns a store holding a copy of kv (as in Snapshot.State).
func StateOf(kv map[string]json.RawMessage) *State {
	s := &State{}
	s.replace(kv)
	return s
}

// Len returns the number of keys.
func (s *State) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.kv)
}
