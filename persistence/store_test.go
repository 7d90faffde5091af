package persistence_test

import (
	"testing"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC S3, S4: every store passes the same suite.
func TestMemoryStore_Conformance(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T) persistence.Store { return persistence.NewMemoryStore() })
}

func TestFileStore_Conformance(t *testing.T) {
	dir := t.TempDir()
	persistencetest.Run(t, func(t *testing.T) persistence.Store {
		s, err := persistence.NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
