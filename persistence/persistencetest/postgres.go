package persistencetest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// PostgresDatabase creates an empty database of its own on dsn's server
// (dsn in URL form, as PostgresDSN gives it) and returns a DSN naming it;
// the database is dropped when the test ends.
func PostgresDatabase(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsn, err)
	}
	defer admin.Close(ctx)
	db := "braid_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE `+db+` WITH (FORCE)`)
			_ = c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("DSN %q is not a URL: %v", dsn, err)
	}
	u.Path = "/" + db
	return u.String()
}
