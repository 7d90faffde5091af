package persistence_test

import (
	"testing"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S1–S5: the memory store passes the conformance suite.
func TestMemoryStore_Conformance(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T) persistencetest.Harness {
		s := persistence.NewMemoryStore()
		return persistencetest.Harness{Store: s, Tamper: func(t *testing.T, key persistence.Key, fn func(*persistence.Record)) {
			t.Helper()
			if !s.Tamper(key, fn) {
				t.Fatalf("tamper: no record %s", key)
			}
		}}
	})
}

func BenchmarkMemoryStore(b *testing.B) {
	persistencetest.Bench(b, func(b *testing.B) persistence.Store { return persistence.NewMemoryStore() })
}
