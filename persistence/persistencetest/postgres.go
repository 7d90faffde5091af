package persistencetest

import (
	"os"
	"testing"
)

// PostgresDSN returns the PostgreSQL server of the tests, from
// BRAID_TEST_POSTGRES_DSN. Without it the test is skipped, except under
// CI=true, where it fails: CI must run the PostgreSQL tests (.ci/run
// starts a server; locally, scripts/with-postgres.sh does).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("BRAID_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BRAID_TEST_POSTGRES_DSN is not set under CI=true: .ci/run must start PostgreSQL (scripts/with-postgres.sh)")
		}
		t.Skip("BRAID_TEST_POSTGRES_DSN not set; run under scripts/with-postgres.sh to include PostgreSQL")
	}
	return dsn
}
