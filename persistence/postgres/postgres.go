// Package postgres is a persistence.Store on PostgreSQL (SPEC S3), for
// sessions shared by several processes and machines. It passes the same
// conformance suite as the file and memory stores.
//
// Records live in two tables (created on first use): braid_records, one row
// per owner with its version and data, and braid_messages, one row per
// message. A save is one transaction whose UPDATE ... WHERE version = base
// makes the version check and the write one step; a stale save changes
// nothing. JSON is stored in json columns, so it comes back byte for byte.
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

func (s *Store) row(k persistence.Key) string {
	return fmt.Sprintf("%s row (%s, %s, %s)", s.records, k.SessionID, k.Kind, k.ID)
}

// Load implements persistence.Store.
func (s *Store) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	defer tx.Rollback(ctx)
	rec := &persistence.Record{Key: key}
	var count int
	var data string
	err = tx.QueryRow(ctx, fmt.Sprintf(`SELECT schema_version, version, updated_at, message_count, data::text FROM %s
		WHERE session_id = $1 AND kind = $2 AND id = $3`, s.records), key.SessionID, string(key.Kind), key.ID).
		Scan(&rec.SchemaVersion, &rec.Version, &rec.UpdatedAt, &count, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, persistence.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if rec.SchemaVersion != persistence.SchemaVersion {
		return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
			Err: fmt.Errorf("%w: schema version %d, this build reads %d", persistence.ErrSchemaVersion, rec.SchemaVersion, persistence.SchemaVersion)}
	}
	rec.Data = json.RawMessage(data)
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT idx, schema_version, message::text FROM %s
		WHERE session_id = $1 AND kind = $2 AND id = $3 AND idx < $4 ORDER BY idx`, s.messages),
		key.SessionID, string(key.Kind), key.ID, count)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var idx, sv int
		var m string
		if err := rows.Scan(&idx, &sv, &m); err != nil {
			return nil, fmt.Errorf("postgres store: %w", err)
		}
		if idx != len(rec.Messages) {
			return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
				Err: fmt.Errorf("%w: message %d missing", persistence.ErrDamaged, len(rec.Messages))}
		}
		if sv != persistence.SchemaVersion {
			return nil, &persistence.DamageError{SessionID: key.SessionID, File: fmt.Sprintf("%s message %d", s.row(key), idx),
				Err: fmt.Errorf("%w: schema version %d", persistence.ErrSchemaVersion, sv)}
		}
		rec.Messages = append(rec.Messages, json.RawMessage(m))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if len(rec.Messages) != count {
		return nil, &persistence.DamageError{SessionID: key.SessionID, File: s.row(key),
			Err: fmt.Errorf("%w: %d messages listed, %d stored", persistence.ErrDamaged, count, len(rec.Messages))}
	}
	return rec, nil
}

// Save implements persistence.Store.
func (s *Store) Save(ctx context.Context, rec *persistence.Record, opts persistence.SaveOptions) (int64, error) {
	if err := persistence.CheckSave(rec, opts); err != nil {
		return 0, err
	}
	key := rec.Key
	keep := opts.Unchanged
	if opts.Base == 0 {
		keep = 0
	}
	keep = min(keep, len(rec.Messages))
	now := time.Now().UTC()

	// One round trip for the statements of the save: the version check and
	// write of the record row, then the messages. When the check fails the
	// transaction is rolled back, so what the later statements did is undone.
	batch := &pgx.Batch{}
	batch.Queue(syncSQL(opts.Durable && !opts.NoSync))
	if opts.Base == 0 {
		batch.Queue(fmt.Sprintf(`INSERT INTO %s (session_id, kind, id, schema_version, version, updated_at, message_count, data)
			VALUES ($1, $2, $3, $4, 1, $5, $6, $7::json) ON CONFLICT DO NOTHING`, s.records),
			key.SessionID, string(key.Kind), key.ID, persistence.SchemaVersion, now, len(rec.Messages), string(rec.Data))
	} else {
		batch.Queue(fmt.Sprintf(`UPDATE %s SET version = version + 1, schema_version = $4, updated_at = $5,
			message_count = $6, data = $7::json WHERE session_id = $1 AND kind = $2 AND id = $3 AND version = $8`, s.records),
			key.SessionID, string(key.Kind), key.ID, persistence.SchemaVersion, now, len(rec.Messages), string(rec.Data), opts.Base)
	}
	batch.Queue(fmt.Sprintf(`DELETE FROM %s WHERE session_id = $1 AND kind = $2 AND id = $3 AND idx >= $4`, s.messages),
		key.SessionID, string(key.Kind), key.ID, keep)
	if n := len(rec.Messages) - keep; n > 0 {
		idx := make([]int32, n)
		msgs := make([]string, n)
		for i := range n {
			idx[i] = int32(keep + i)
			msgs[i] = string(rec.Messages[keep+i])
		}
		batch.Queue(fmt.Sprintf(`INSERT INTO %s (session_id, kind, id, idx, schema_version, message)
			SELECT $1, $2, $3, t.i, $4, t.m::json FROM unnest($5::integer[], $6::text[]) AS t(i, m)`, s.messages),
			key.SessionID, string(key.Kind), key.ID, persistence.SchemaVersion, idx, msgs)
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres store: %w", err)
	}
	defer tx.Rollback(ctx)
	res := tx.SendBatch(ctx, batch)
	written, err := execBatch(res, batch.Len())
	if err != nil {
		return 0, fmt.Errorf("postgres store: %w", err)
	}
	if !written {
		_ = tx.Rollback(ctx)
		var cur int64
		err := s.pool.QueryRow(ctx, fmt.Sprintf(`SELECT version FROM %s WHERE session_id = $1 AND kind = $2 AND id = $3`, s.records),
			key.SessionID, string(key.Kind), key.ID).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("postgres store: %w", err)
		}
		return 0, &persistence.ConflictError{Key: key, Expected: opts.Base, Actual: cur}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("postgres store: %w", err)
	}
	return opts.Base + 1, nil
}

// execBatch reads a save's batch results: statement 1 is the record row's
// write, which tells whether the version check passed. After a failed check
// the rest is not looked at (the transaction is rolled back).
func execBatch(res pgx.BatchResults, n int) (written bool, err error) {
	defer func() {
		if cerr := res.Close(); cerr != nil && err == nil && written {
			err = cerr
		}
	}()
	for i := range n {
		ct, err := res.Exec()
		if err != nil {
			return false, err
		}
		if i == 1 && ct.RowsAffected() != 1 {
			return false, nil
		}
	}
	return true, nil
}

// syncSQL sets the transaction's synchronous_commit: on for a durable save,
// whatever the server's default, and off otherwise.
func syncSQL(durable bool) string {
	if durable {
		return `SET LOCAL synchronous_commit = on`
	}
	return `SET LOCAL synchronous_commit = off`
}

// Checkpoint implements persistence.Checkpointer. At a durable point with
// nothing new to save, the saves before it may have committed without
// waiting for the WAL flush; with sync, Checkpoint commits a transaction
// that waits for it, which makes them durable too. The record is unchanged.
func (s *Store) Checkpoint(ctx context.Context, key persistence.Key, sync bool) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, syncSQL(true)); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	// A transaction id makes the commit write a WAL record, and so wait
	// for the flush of everything before it.
	if _, err := tx.Exec(ctx, `SELECT pg_catalog.txid_current()`); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
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
