package persistence_test

import (
	"os"
	"testing"
)

// pgDSN returns the PostgreSQL server of the tests; under CI (CI=true) a
// missing one fails the test rather than skipping it.
func pgDSN(t *testing.T) string {
	dsn := os.Getenv("BRAID_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BRAID_TEST_POSTGRES_DSN is not set under CI=true: .ci/run must start PostgreSQL")
		}
		t.Skip("BRAID_TEST_POSTGRES_DSN not set")
	}
	return dsn
}
