package memory_test

import (
	"testing"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S1–S5: the memory store, the reference, passes the conformance suite.
func TestStore_Conformance(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T) persistencetest.Harness {
		s := memory.New()
		return persistencetest.Harness{Store: s, Tamper: func(t *testing.T, key persistence.Key, fn func(*persistence.Record)) {
			t.Helper()
			if !s.Tamper(key, fn) {
				t.Fatalf("tamper: no record %s", key)
			}
		}}
	})
}

func BenchmarkStore(b *testing.B) {
	persistencetest.Bench(b, func(*testing.B) persistence.Store { return memory.New() })
}
