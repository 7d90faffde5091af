package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// RawDB opens the database in dir on a connection of its own, as another
// program would: for tests that edit it or hold its lock. params are
// further DSN parameters ("_pragma=synchronous(OFF)").
func RawDB(dir string, params ...string) (*sql.DB, error) {
	s := &Store{cfg: DefaultConfig(), path: filepath.Join(dir, FileName)}
	return sql.Open("sqlite", s.dsn(strings.Join(append([]string{"_txlock=immediate"}, params...), "&")))
}

// Tamper edits key's record in dir's database by hand, bypassing the store
// (see persistencetest.Harness.Tamper).
func Tamper(ctx context.Context, dir string, key persistence.Key, fn func(*persistence.Record)) error {
	db, err := RawDB(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sqlstore.Tamper(ctx, querier{s: &Store{path: dir}, db: tx, stmts: map[string]*sql.Stmt{}}, key, fn); err != nil {
		return err
	}
	return tx.Commit()
}
