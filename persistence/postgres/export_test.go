package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// Tamper edits key's record by hand on a connection of its own, bypassing
// the store (see persistencetest.Harness.Tamper).
func Tamper(ctx context.Context, dsn string, key persistence.Key, fn func(*persistence.Record)) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := sqlstore.Tamper(ctx, querier{&Store{}, tx}, key, fn); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
