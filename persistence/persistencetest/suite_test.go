package persistencetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

func memoryHarness(t *testing.T) persistencetest.Harness {
	s := persistence.NewMemoryStore()
	return persistencetest.Harness{Store: s, Tamper: func(t *testing.T, k persistence.Key, fn func(*persistence.Record)) {
		require.True(t, s.Tamper(k, fn), "no record %s", k)
	}}
}

// SPEC S1–S5: the memory store, the reference, passes the suite.
func TestMemoryStore_Conformance(t *testing.T) {
	persistencetest.Run(t, memoryHarness)
}

func BenchmarkMemoryStore(b *testing.B) {
	persistencetest.Bench(b, func(*testing.B) persistence.Store { return persistence.NewMemoryStore() })
}
