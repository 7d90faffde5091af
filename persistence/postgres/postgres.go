// Package postgres is a persistence.Store on PostgreSQL (SPEC S3), for
// sessions shared by several processes and machines. It passes the same
// conformance suite as the file and memory stores.
//
// Records live in two tables (created on first use): braid_records, one row
// per owner with its version and data, and braid_messages, one row per
// message. A save is one round trip and one transaction, whose UPDATE ...
// WHERE version = base makes the version check and the write one step; a
// stale save changes nothing. A load is one statement. JSON is stored in json columns, so it comes back byte for byte.
// Non-durable saves commit with synchronous_commit off; a durable save (and
// so every save before it) waits for the WAL flush, and so does Checkpoint,
// which the session manager calls at a durable point with nothing to save.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/braidhq/braid/persistence"
)

// Config configures a Store.
type Config struct {
	// DSN is a postgres:// URL or key=value connection string. Required.
	DSN string
	// TablePrefix prefixes the table names (default "braid_").
	TablePrefix string
	// MaxConns bounds the connection pool (default 8).
	MaxConns int32
	// ConnectTimeout bounds connecting and creating the tables (default 15s).
	ConnectTimeout time.Duration
}

// DefaultConfig returns the defaults (no DSN).
func DefaultConfig() Config {
	return Config{TablePrefix: "braid_", MaxConns: 8, ConnectTimeout: 15 * time.Second}
}

var prefixPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.DSN == "" {
		return errors.New("postgres store: empty DSN")
	}
	if !prefixPattern.MatchString(c.TablePrefix) {
		return fmt.Errorf("postgres store: table prefix %q: want lower-case letters, digits and '_'", c.TablePrefix)
	}
	if c.MaxConns < 1 {
		return errors.New("postgres store: MaxConns must be at least 1")
	}
	return nil
}

// Store is a persistence.Store on PostgreSQL. Safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	records  string
	messages string

	// The statements, with the table names filled in.
	loadSQL, createSQL, updateSQL, versionSQL string
}

// New connects and creates the tables if they do not exist.
func New(ctx context.Context, cfg Config) (*Store, error) {
	d := DefaultConfig()
	if cfg.TablePrefix == "" {
		cfg.TablePrefix = d.TablePrefix
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = d.MaxConns
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = d.ConnectTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	s := &Store{pool: pool, records: cfg.TablePrefix + "records", messages: cfg.TablePrefix + "messages"}
	s.statements()
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	defer tx.Rollback(ctx)
	// Several processes may start at once: serialise the CREATEs.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, s.records); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	ddl := fmt.Sprintf(`
CREATE TABLE IF NOT EXISTS %[1]s (
  session_id     text        NOT NULL,
  kind           text        NOT NULL,
  id             text        NOT NULL,
  schema_version integer     NOT NULL,
  version        bigint      NOT NULL,
  updated_at     timestamptz NOT NULL,
  message_count  integer     NOT NULL,
  data           json        NOT NULL,
  PRIMARY KEY (session_id, kind, id)
);
CREATE TABLE IF NOT EXISTS %[2]s (
  session_id     text    NOT NULL,
  kind           text    NOT NULL,
  id             text    NOT NULL,
  idx            integer NOT NULL,
  schema_version integer NOT NULL,
  message        json    NOT NULL,
  PRIMARY KEY (session_id, kind, id, idx)
);`, s.records, s.messages)
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("postgres store: create tables: %w", err)
	}
	return tx.Commit(ctx)
}

// statements fills in the statements' table names.
func (s *Store) statements() {
	s.loadSQL = fmt.Sprintf(`SELECT r.schema_version, r.version, r.updated_at, r.message_count,
  CASE WHEN coalesce(m.idx, 0) = 0 THEN r.data::text END, m.idx, m.schema_version, m.message::text
FROM %[1]s r LEFT JOIN %[2]s m
  ON m.session_id = r.session_id AND m.kind = r.kind AND m.id = r.id AND m.idx < r.message_count
WHERE r.session_id = $1 AND r.kind = $2 AND r.id = $3
ORDER BY m.idx`, s.records, s.messages)
	// The messages' writes depend on the row's (EXISTS (SELECT 1 FROM w)),
	// so a failed version check writes nothing. The delete (rows past the
	// new end) and the upsert (the new and changed rows) touch different
	// rows, as one statement must.
	messages := fmt.Sprintf(`, d AS (
  DELETE FROM %[1]s WHERE session_id = $1 AND kind = $2 AND id = $3 AND idx >= $6 AND EXISTS (SELECT 1 FROM w)
), i AS (
  INSERT INTO %[1]s (session_id, kind, id, idx, schema_version, message)
  SELECT $1, $2, $3, t.i, $4, t.m::json FROM unnest($9::integer[], $10::text[]) AS t(i, m)
  WHERE EXISTS (SELECT 1 FROM w)
  ON CONFLICT (session_id, kind, id, idx) DO UPDATE SET schema_version = excluded.schema_version, message = excluded.message
)
SELECT count(*) FROM w`, s.messages)
	s.createSQL = fmt.Sprintf(`WITH w AS (
  INSERT INTO %s (session_id, kind, id, schema_version, version, updated_at, message_count, data)
  SELECT $1, $2, $3, $4, 1, $5, $6, $7::json WHERE $8::bigint = 0
  ON CONFLICT DO NOTHING RETURNING 1
)`, s.records) + messages
	s.updateSQL = fmt.Sprintf(`WITH w AS (
  UPDATE %s SET version = version + 1, schema_version = $4, updated_at = $5, message_count = $6, data = $7::json
  WHERE session_id = $1 AND kind = $2 AND id = $3 AND version = $8
  RETURNING 1
)`, s.records) + messages
	s.versionSQL = fmt.Sprintf(`SELECT version FROM %s WHERE session_id = $1 AND kind = $2 AND id = $3`, s.records)
}

func (s *Store) row(k persistence.Key) string {
	return fmt.Sprintf("%s row (%s, %s, %s)", s.records, k.SessionID, k.Kind, k.ID)
}

// Load implements persistence.Store. It is one statement, so one round
// trip and one snapshot: the record row joined with its messages, in order.
// The data comes with the first row only.
func (s *Store) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.loadSQL, key.SessionID, string(key.Kind), key.ID)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	defer rows.Close()
	var rec *persistence.Record
	count := 0
	for rows.Next() {
		var (
			r    persistence.Record
			data *string
			idx  *int32
			sv   *int32
			m    *string
		)
		if err := rows.Scan(&r.SchemaVersion, &r.Version, &r.UpdatedAt, &count, &data, &idx, &sv, &m); err != nil {
			return nil, fmt.Errorf("postgres store: %w", err)
		}
		if rec == nil {
			if r.SchemaVersion != persistence.SchemaVersion {
				return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
					Err: fmt.Errorf("%w: schema version %d, this build reads %d", persistence.ErrSchemaVersion, r.SchemaVersion, persistence.SchemaVersion)}
			}
			if data == nil {
				return nil, fmt.Errorf("postgres store: %s: no data in the first row", s.row(key))
			}
			r.Key, r.Data = key, json.RawMessage(*data)
			rec = &r
		}
		if idx == nil {
			continue // no messages
		}
		if int(*idx) != len(rec.Messages) {
			return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
				Err: fmt.Errorf("%w: message %d missing", persistence.ErrDamaged, len(rec.Messages))}
		}
		if *sv != persistence.SchemaVersion {
			return nil, &persistence.DamageError{SessionID: key.SessionID, File: fmt.Sprintf("%s message %d", s.row(key), *idx),
				Err: fmt.Errorf("%w: schema version %d", persistence.ErrSchemaVersion, *sv)}
		}
		rec.Messages = append(rec.Messages, json.RawMessage(*m))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if rec == nil {
		return nil, persistence.ErrNotFound
	}
	if len(rec.Messages) != count {
		return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
			Err: fmt.Errorf("%w: %d messages listed, %d stored", persistence.ErrDamaged, count, len(rec.Messages))}
	}
	return rec, nil
}

// Save implements persistence.Store. A save is one round trip: two
// statements sent together, which PostgreSQL runs as one implicit
// transaction. The first sets the transaction's synchronous_commit; the
// second writes the record row only if its version is opts.Base (or, for
// Base 0, only if there is no row), and writes the messages only if the row
// was written, so a stale save changes nothing. Messages before
// opts.Unchanged stay; the rest are upserted and rows past the new end are
// deleted. A conflict costs a second query, for the version to report.
func (s *Store) Save(ctx context.Context, rec *persistence.Record, opts persistence.SaveOptions) (int64, error) {
	if err := persistence.CheckSave(rec, opts); err != nil {
		return 0, err
	}
	key := rec.Key
	batch := s.saveBatch(rec, opts, time.Now().UTC())
	var written int64
	res := s.pool.SendBatch(ctx, batch)
	_, err := res.Exec()
	if err == nil {
		err = res.QueryRow().Scan(&written)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("postgres store: %w", err)
	}
	if written != 1 {
		var cur int64
		err := s.pool.QueryRow(ctx, s.versionSQL, key.SessionID, string(key.Kind), key.ID).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("postgres store: %w", err)
		}
		return 0, &persistence.ConflictError{Key: key, Expected: opts.Base, Actual: cur}
	}
	return opts.Base + 1, nil
}

// saveBatch returns a save's two statements; see Save.
func (s *Store) saveBatch(rec *persistence.Record, opts persistence.SaveOptions, now time.Time) *pgx.Batch {
	key := rec.Key
	keep := opts.Unchanged
	if opts.Base == 0 {
		keep = 0
	}
	keep = max(0, min(keep, len(rec.Messages)))
	n := len(rec.Messages) - keep
	idx := make([]int32, n)
	msgs := make([]string, n)
	for i := range n {
		idx[i] = int32(keep + i)
		msgs[i] = string(rec.Messages[keep+i])
	}
	batch := &pgx.Batch{}
	batch.Queue(syncSQL, syncSetting(opts.Durable && !opts.NoSync))
	sql := s.updateSQL
	if opts.Base == 0 {
		sql = s.createSQL
	}
	batch.Queue(sql, key.SessionID, string(key.Kind), key.ID, persistence.SchemaVersion, now,
		len(rec.Messages), string(rec.Data), opts.Base, idx, msgs)
	return batch
}

// syncSQL sets the transaction's synchronous_commit: on for a durable save,
// whatever the server's default, and off otherwise. PostgreSQL reads the
// setting when the transaction commits.
const syncSQL = `SELECT pg_catalog.set_config('synchronous_commit', $1, true)`

func syncSetting(durable bool) string {
	if durable {
		return "on"
	}
	return "off"
}

// Checkpoint implements persistence.Checkpointer. At a durable point with
// nothing new to save, the saves before it may have committed without
// waiting for the WAL flush; with sync, Checkpoint commits a transaction
// that waits for it (one statement that takes a transaction id, so that its
// commit is logged), which makes them durable too. The record is unchanged.
func (s *Store) Checkpoint(ctx context.Context, key persistence.Key, sync bool) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_catalog.set_config('synchronous_commit', 'on', true), pg_catalog.txid_current()`); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return nil
}

// Delete implements persistence.Store.
func (s *Store) Delete(ctx context.Context, key persistence.Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	defer tx.Rollback(ctx)
	for _, t := range []string{s.records, s.messages} {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE session_id = $1 AND kind = $2 AND id = $3`, t),
			key.SessionID, string(key.Kind), key.ID); err != nil {
			return fmt.Errorf("postgres store: %w", err)
		}
	}
	return tx.Commit(ctx)
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
