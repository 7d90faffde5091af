package sqlite

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// The read pool keeps every connection it opened: loads from many clients
// at once do not close connections past database/sql's default idle limit
// of two and open new ones, each of which reads the schema and prepares
// the load statements again.
func TestReadPool_KeepsAllItsConnectionsBetweenBusyPeriods(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Dir: t.TempDir(), ReadConns: 4})
	require.NoError(t, err)
	defer s.Close()

	busy := func() {
		conns := make([]*sql.Conn, s.cfg.ReadConns)
		for i := range conns {
			c, err := s.r.Conn(ctx) // all at once, as concurrent loads
			require.NoError(t, err)
			conns[i] = c
		}
		for _, c := range conns {
			require.NoError(t, c.Close()) // back to the pool
		}
	}
	busy()
	opened := s.r.Stats().OpenConnections
	require.Equal(t, s.cfg.ReadConns, opened)
	for range 3 {
		busy()
	}
	st := s.r.Stats()
	require.Zero(t, st.MaxIdleClosed, "connections closed for the idle limit")
	require.Equal(t, opened, st.OpenConnections)
	require.Equal(t, s.cfg.ReadConns, st.Idle)
}
