package twostores

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
)

// Pair names a way two runtimes share a store; Open returns the store of
// each (closed when the test ends).
type Pair struct {
	Name string
	Open func(t *testing.T) (persistence.Store, persistence.Store)
}

// Pairs returns every way a test should try: SQLite opened twice on one
// folder (without fsync), and one memory store.
func Pairs() []Pair {
	return []Pair{
		{"sqlite", func(t *testing.T) (persistence.Store, persistence.Store) {
			dir := t.TempDir()
			open := func() persistence.Store {
				st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, NoFsync: true})
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				return st
			}
			return open(), open()
		}},
		{"memory", func(*testing.T) (persistence.Store, persistence.Store) {
			st := memory.New()
			return st, st
		}},
	}
}
