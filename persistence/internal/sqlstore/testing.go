package sqlstore

import (
	"context"
	"fmt"

	"github.com/braidhq/braid/persistence"
)

// Tamper reads k's record as stored, with no checks, lets fn change it, and
// writes it back as it is, as a person editing the tables by hand would:
// for the damage tests of the conformance suite. q should be a
// transaction of the test's own, on a connection apart from the store's.
func Tamper(ctx context.Context, q Querier, k persistence.Key, fn func(*persistence.Record)) error {
	recs, _, _, err := readRaw(ctx, q, k.SessionID, &k)
	if err != nil {
		return err
	}
	if len(recs) != 1 {
		return fmt.Errorf("tamper %s: %w", k, persistence.ErrNotFound)
	}
	r := recs[0]
	fn(r)
	if err := q.Exec(ctx, `UPDATE braid_records SET schema_version = $4, version = $5, data = $6, messages = $7`+key,
		k.SessionID, string(k.Kind), k.ID, r.SchemaVersion, r.Version, string(r.Data), len(r.Messages)); err != nil {
		return err
	}
	if err := q.Exec(ctx, trimSQL, k.SessionID, string(k.Kind), k.ID, 0); err != nil {
		return err
	}
	return insertMessages(ctx, q, k, 0, r.Messages)
}
