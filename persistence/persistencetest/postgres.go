package persistencetest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

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

// PostgresStandbyDSN returns the DSN of a hot standby of PostgresDSN's
// server (streaming replication: it follows the server, takes no writes),
// from BRAID_TEST_POSTGRES_STANDBY_DSN, which scripts/with-postgres.sh
// sets, as it skips (or fails under CI=true) without it.
func PostgresStandbyDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("BRAID_TEST_POSTGRES_STANDBY_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BRAID_TEST_POSTGRES_STANDBY_DSN is not set under CI=true: .ci/run must start PostgreSQL with its standby (scripts/with-postgres.sh)")
		}
		t.Skip("BRAID_TEST_POSTGRES_STANDBY_DSN not set; run under scripts/with-postgres.sh to include a PostgreSQL standby")
	}
	return dsn
}

// PostgresStandbyCaughtUp returns once the standby of PostgresStandbyDSN
// has replayed everything PostgresDSN's server had committed when it was
// called: a handshake on the replay position the standby reports,
// bounded by 30 s. The position is the WAL's insert position, not its
// write position: a commit with synchronous_commit off (a non-durable
// save) may not be written yet, and a standby caught up to the write
// position would not have it.
func PostgresStandbyCaughtUp(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pgx.Connect(ctx, PostgresDSN(t))
	if err != nil {
		t.Fatalf("connect to the primary: %v", err)
	}
	defer p.Close(context.Background())
	var lsn string
	if err := p.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatalf("the primary's WAL position: %v", err)
	}
	s, err := pgx.Connect(ctx, PostgresStandbyDSN(t))
	if err != nil {
		t.Fatalf("connect to the standby: %v", err)
	}
	defer s.Close(context.Background())
	for {
		var done bool
		if err := s.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err != nil {
			t.Fatalf("the standby did not replay %s in 30 s: %v", lsn, err)
		}
		if done {
			return
		}
	}
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
