package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// Config configures a Store.
type Config struct {
	// DSN is a postgres:// URL or key=value connection string. Required.
	DSN string
	// MaxConns bounds the connection pool (default 8).
	MaxConns int32
	// ConnectTimeout bounds New (connecting and creating the tables), and
	// each connect the pool makes later, whatever the context of the call
	// that needs it: a server that does not answer fails the call after
	// this long (default 15s). A connect_timeout in the DSN bounds the
	// later connects instead; connect_timeout=0 there (wait for ever, as
	// libpq reads it) leaves them bounded by the call's context alone.
	// It bounds Close too (see Store.Close).
	ConnectTimeout time.Duration
	// ReadOnly opens the store for reading only, as an inspection tool
	// does: New neither creates nor changes the tables (Braid's tables
	// must be there, of this build's layout: else an error matching
	// persistence.ErrNotFound, or persistence.ErrSchemaVersion), and takes
	// a server that takes no writes (a hot standby, a role with
	// default_transaction_read_only on). Save, Delete, DeleteSession,
	// DeleteStoredSession and Sync fail with ErrReadOnly, writing nothing.
	ReadOnly bool
	// Existing opens, for writing, a store that is already there, as an
	// operator's tool that deletes does: New checks by reading that
	// Braid's tables are there, of this build's layout, and neither
	// creates nor changes them (else an error matching
	// persistence.ErrNotFound, or persistence.ErrSchemaVersion, for tables
	// of an earlier layout too, which a New without it upgrades). Unlike
	// a look before a New without it, nothing is created if the tables
	// are dropped meanwhile. With ReadOnly, it changes nothing.
	Existing bool
}

// DefaultConfig returns the defaults (no DSN).
func DefaultConfig() Config {
	return Config{MaxConns: 8, ConnectTimeout: 15 * time.Second}
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.MaxConns = cmp.Or(c.MaxConns, d.MaxConns)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, d.ConnectTimeout)
	return c
}

// Validate checks the configuration as New does: a zero field is its
// default, so it refuses only what New refuses.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.DSN == "":
		return errors.New("postgres store: empty DSN")
	case c.MaxConns < 1:
		return errors.New("postgres store: MaxConns must be at least 1")
	case c.ConnectTimeout <= 0:
		return errors.New("postgres store: ConnectTimeout must be positive")
	}
	return nil
}

// ErrServerReadOnly reports a server that takes no writes: a hot standby
// (connect to the primary), or one whose transactions are read-only by
// default (default_transaction_read_only on, for the server, the
// database, the role or the DSN). New refuses such a server; a write
// that meets one later (a primary turned standby, the setting changed
// under an open store) fails with it, and nothing of it was written.
var ErrServerReadOnly = errors.New("the server is read-only (a hot standby, or default_transaction_read_only on): it takes no writes")

// ErrReadOnly reports a write to a Store opened with Config.ReadOnly.
var ErrReadOnly = errors.New("the store was opened read-only (Config.ReadOnly): it writes nothing")

// readOnlySQLTransaction is the SQLSTATE of a write refused by a
// read-only transaction or a server in recovery.
const readOnlySQLTransaction = "25006"

// undefinedTable is the SQLSTATE of a statement on a table that is not
// there.
const undefinedTable = "42P01"

// Store is a persistence.Store on PostgreSQL. Safe for concurrent use, by
// several goroutines, processes and machines.
type Store struct {
	pool     *pgxpool.Pool
	maxConns int32  // the pool's bound (see retry)
	lockWait string // outcomeLockWait
	lockXid  string // lockXidSQL, with runSQL if the role may read it
	readOnly bool   // Config.ReadOnly
	dials    *dials // the pool's connections, which Close may cut
	// closeWait bounds how long Close waits for the pool to close in
	// order (Config.ConnectTimeout).
	closeWait time.Duration
	closed    atomic.Bool
}

// serializationFailure is the SQLSTATE of a transaction that a
// concurrent write made fail at an isolation above read committed.
const serializationFailure = "40001"

// cancelGrace is how long a statement whose context ended may take to
// fail after the server was asked to cancel it, before its connection is
// closed under it.
const cancelGrace = 5 * time.Second

// sessionLock, followed by a parameter and "))", takes the transaction's
// lock on the session the parameter names; every writer of a session
// takes it first.
const sessionLock = `pg_catalog.pg_advisory_xact_lock(1651663209, pg_catalog.hashtext(`

// lockSQL sets the transaction's synchronous_commit (PostgreSQL reads it
// at commit) and takes the transaction's lock on one session.
const lockSQL = `SELECT pg_catalog.set_config('synchronous_commit', $1, true),
  ` + sessionLock + `$2))`

// synchronousCommit is lockSQL's $1 for a save durable or not.
func synchronousCommit(durable bool) string {
	if durable {
		return "on"
	}
	return "off"
}

// New connects, with the defaults for cfg's zero fields, and creates the
// tables if they do not exist (see the package doc for the role this
// takes), or, with cfg.ReadOnly or cfg.Existing, checks by reading that
// they are there, of this build's layout.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if pc.ConnConfig.ConnectTimeout == 0 && !dsnWaitsForever(cfg.DSN) {
		// Without it a connect the pool makes for a call waits as long
		// as the call's context, which may never end. A DSN's own
		// connect_timeout=0 asks for that: it is kept.
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	}
	// A context that ends mid-statement sends the server a cancel request
	// and waits for the statement to fail, rather than closing the socket
	// at once: a closed socket leaves the backend running what it already
	// received, so a save waiting for its session's lock would hold a
	// connection slot until the lock came free and then commit, after
	// Save had reported it failed. The deadline is the fallback for a
	// server that does not answer the cancel.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	d := newDials()
	pc.ConnConfig.DialFunc = d.wrap(pc.ConnConfig.DialFunc)
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	// A New that fails closes its pool within what is left of its bound.
	deadline, _ := ctx.Deadline()
	closeFailed := func() { closePool(pool, d, time.Until(deadline)) }
	var num int
	var version string
	var run, readOnly, defaultReadOnly bool
	var standby *string // in_hot_standby: NULL before PostgreSQL 14
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.current_setting('server_version_num')::int,
  pg_catalog.current_setting('server_version'),
  pg_catalog.has_function_privilege('pg_catalog.pg_control_checkpoint()', 'EXECUTE'),
  pg_catalog.current_setting('transaction_read_only')::bool,
  pg_catalog.current_setting('default_transaction_read_only')::bool,
  pg_catalog.current_setting('in_hot_standby', true)`).Scan(&num, &version, &run, &readOnly, &defaultReadOnly, &standby); err != nil {
		closeFailed()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if err := checkServerVersion(num, version); err != nil {
		closeFailed()
		return nil, err
	}
	if readOnly && !cfg.ReadOnly {
		closeFailed()
		return nil, serverReadOnly(standby, defaultReadOnly)
	}
	s := &Store{pool: pool, maxConns: cfg.MaxConns, lockWait: outcomeLockWait, lockXid: lockXidSQL + runSQL, readOnly: cfg.ReadOnly,
		dials: d, closeWait: cfg.ConnectTimeout}
	if !run {
		s.lockXid = lockXidSQL + "NULL::text"
	}
	if cfg.ReadOnly || cfg.Existing {
		_, err = read(ctx, s, func(q sqlstore.Querier) (struct{}, error) {
			return struct{}{}, sqlstore.CheckLayout(ctx, q, dialect())
		})
		switch {
		case errors.Is(err, sqlstore.ErrNoTables):
			err = fmt.Errorf("postgres store: %w (%w)", err, persistence.ErrNotFound)
		case errors.Is(err, persistence.ErrSchemaVersion):
			err = fmt.Errorf("postgres store: %w", err)
		}
	} else {
		// Several processes may start at once: the lock serialises the
		// CREATEs. Durable: tables committed with synchronous_commit off
		// could be lost by a server crash after New returned, and every
		// call of the open store would then fail. A commit that wrote
		// nothing (the tables were there) does not wait for the flush.
		err = s.write(ctx, true, "braid schema", func(q sqlstore.Querier) error {
			return sqlstore.Init(ctx, q, dialect())
		})
	}
	if err != nil {
		closeFailed()
		return nil, err
	}
	return s, nil
}

// serverReadOnly is New's error for a connection whose transactions are
// read-only, naming the cause from what the server reports of itself,
// which any role may read: standby is its in_hot_standby ("on" or "off";
// nil before PostgreSQL 14, which does not report it), defaultReadOnly its
// default_transaction_read_only. A standby comes first: turning the
// setting off would not make it take writes.
func serverReadOnly(standby *string, defaultReadOnly bool) error {
	switch {
	case standby != nil && *standby == "on":
		return fmt.Errorf("postgres store: %w: it is a hot standby (in_hot_standby is on); connect to the primary", ErrServerReadOnly)
	case defaultReadOnly:
		return fmt.Errorf("postgres store: %w: default_transaction_read_only is on for this connection (set for the server, the database, the role or in the DSN); turn it off, or set Config.ReadOnly to open the store for reading", ErrServerReadOnly)
	case standby == nil:
		return fmt.Errorf("postgres store: %w: its transactions are read-only though default_transaction_read_only is off, which a server before PostgreSQL 14 (it does not report in_hot_standby) most likely means a hot standby; connect to the primary", ErrServerReadOnly)
	}
	return fmt.Errorf("postgres store: %w: transaction_read_only is on for this connection, though it is neither a hot standby nor read-only by default; connect with read-write transactions, or set Config.ReadOnly to open the store for reading", ErrServerReadOnly)
}

// dsnWaitsForever reports whether dsn sets connect_timeout to 0, which
// parses as no connect_timeout at all. pgx takes the last of a repeated
// key, so dsn is parsed again behind a connect_timeout of its own: the
// DSN's, if it has one, overrides it.
func dsnWaitsForever(dsn string) bool {
	probe := "connect_timeout=1 " + dsn
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		base, query, ok := strings.Cut(dsn, "?")
		if !ok || query == "" {
			return false
		}
		probe = base + "?connect_timeout=1&" + query
	}
	pc, err := pgconn.ParseConfig(probe)
	return err == nil && pc.ConnectTimeout == 0
}

// dialect returns PostgreSQL's form of the shared tables.
func dialect() sqlstore.Dialect {
	return sqlstore.Dialect{Text: `text COLLATE "C"`,
		Columns: `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'braid_records'`,
		Exists:  `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`}
}

// checkServerVersion refuses a server older than PostgreSQL 13, which
// has no pg_current_xact_id and pg_xact_status (see outcome); num is the
// server's server_version_num, version its server_version.
func checkServerVersion(num int, version string) error {
	if num < 130000 {
		return fmt.Errorf("postgres store: PostgreSQL 13 or later is needed; the server is %s", version)
	}
	return nil
}

// write runs fn in a transaction that holds sessionID's lock and commits
// with synchronous_commit on if durable, off otherwise; again if the
// server ended the connection before the commit was sent (see retry).
func (s *Store) write(ctx context.Context, durable bool, sessionID string, fn func(sqlstore.Querier) error) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if s.readOnly {
		return fmt.Errorf("postgres store: %w", ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.retry(ctx, func() (bool, error) { return s.transact(ctx, durable, sessionID, fn) })
}

// transact is one try of write. again is true when nothing can have
// committed: the connection died (the server ended it, or it broke)
// before the commit was sent, which rolls the transaction back.
func (s *Store) transact(ctx context.Context, durable bool, sessionID string, fn func(sqlstore.Querier) error) (again bool, err error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, s.wrap(ctx, "connect", err)
	}
	defer func() {
		if c != nil {
			s.release(ctx, c)
		}
	}()
	// Read committed whatever the DSN's default: each statement after the
	// lock then sees the writes of the transactions that held it before,
	// so a stale save finds the stored version and conflicts (SPEC S4),
	// where a snapshot taken before the lock wait would make it fail
	// with a serialization error.
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return c.Conn().IsClosed(), s.wrap(ctx, "begin", err)
	}
	defer rollback(ctx, tx)
	q := querier{s, tx}
	var xid string  // the transaction's id, to ask after it (see outcome)
	var run *string // the server's run it is of (see runSQL)
	if err := tx.QueryRow(ctx, s.lockXid, synchronousCommit(durable), sessionID).Scan(nil, nil, &xid, &run); err != nil {
		return c.Conn().IsClosed(), s.wrap(ctx, "exec", err)
	}
	if err := fn(q); err != nil {
		return c.Conn().IsClosed(), err
	}
	if cerr := tx.Commit(ctx); cerr != nil {
		err := s.wrap(ctx, "commit", cerr)
		if !c.Conn().IsClosed() {
			return false, err // the server's answer
		}
		if notSent(cerr) {
			// Nothing of the commit went out: the connection's end rolls
			// the transaction back, so it runs again.
			return true, err
		}
		// The server's word that it ended the session, in place of the
		// commit's report, says it did not commit (see ended).
		unknown := func() error {
			if ended(cerr) {
				return s.wrap(ctx, "commit", cerr)
			}
			return s.sent(ctx, "commit", cerr)
		}
		if ctx.Err() != nil || run == nil {
			return false, unknown() // the caller gave up, or no question to ask
		}
		// Sent, the commit may have happened with its reply lost: ask,
		// on another connection, which may need the dead one's slot in
		// the pool (a pool of one, or every connection cut at once).
		s.release(ctx, c)
		c = nil
		switch committed, known := s.outcome(ctx, sessionID, xid, *run); {
		case known && committed:
			return false, nil
		case known:
			return true, err // rolled back: nothing of it is stored
		}
		// No answer; if the caller gave up meanwhile, the error says so.
		return false, unknown()
	}
	return false, nil
}

// rollback rolls tx back, if it is still open, waiting no longer than
// ctx's deadline nor cancelGrace (and, as any statement, cancelGrace more
// for the server to act on the cancel): the transaction's end is decided,
// a connection that closes rolls it back too, and a server that stopped
// answering must not keep the call past its deadline. ctx's cancellation
// is not taken: a call cancelled after its last statement still leaves
// its connection usable.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		var cancelAt context.CancelFunc
		rctx, cancelAt = context.WithDeadline(rctx, d)
		defer cancelAt()
	}
	_ = tx.Rollback(rctx)
}

// lockXidSQL is lockSQL that also gives the transaction's id and, with
// runSQL appended (Store.lockXid), the server's run.
const lockXidSQL = lockSQL + `,
  pg_catalog.pg_current_xact_id()::text, `

// runSQL names the server's run that a transaction id is of: a crash
// recovery gives out again the ids of the transactions whose log had not
// reached the disk, so the status of an id read after one may be another
// transaction's. It is the time the server started and the place of its
// latest checkpoint, which every crash recovery ends with; another
// checkpoint changes it too, which makes a question unanswered, never
// wrong. A role may be refused pg_control_checkpoint (an operator may
// revoke it from PUBLIC): New then leaves it out of Store.lockXid, and no
// question is asked.
const runSQL = `pg_catalog.pg_postmaster_start_time()::text || ' ' ||
  (SELECT checkpoint_lsn::text FROM pg_catalog.pg_control_checkpoint())`

// outcomeLockWait bounds how long outcome waits for the session's lock
// (Store.lockWait, which tests shorten).
const outcomeLockWait = "5s"

// outcome asks the server, on another connection, whether the transaction
// xid, which held sessionID's lock in the server's run run (see runSQL),
// committed. It first takes that lock, which the transaction kept to its
// end, so the answer is final; known is false if it cannot learn it (the
// server cannot be reached, it is not in the same run, or the lock is not
// free within outcomeLockWait: the transaction's connection may still be
// open on the server's side, until the server notices it broke).
// A durable commit is reported committed only once its WAL record is
// flushed (PostgreSQL marks a transaction committed after the flush).
func (s *Store) outcome(ctx context.Context, sessionID, xid, run string) (committed, known bool) {
	var status, now *string
	err := s.retry(ctx, func() (bool, error) {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return false, err
		}
		defer s.release(ctx, c)
		tx, err := c.Begin(ctx)
		if err != nil {
			return c.Conn().IsClosed(), err
		}
		defer rollback(ctx, tx)
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_catalog.set_config('lock_timeout', $1, true)`, s.lockWait)
		b.Queue(`SELECT `+sessionLock+`$1))`, sessionID)
		b.Queue(`SELECT pg_catalog.pg_xact_status($1::xid8), `+runSQL, xid).QueryRow(func(r pgx.Row) error { return r.Scan(&status, &now) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return c.Conn().IsClosed(), err
		}
		return false, nil
	})
	if err != nil || status == nil || now == nil || *now != run {
		return false, false
	}
	switch *status {
	case "committed":
		return true, true
	case "aborted":
		return false, true
	}
	return false, false
}

// retry runs try until it succeeds, or fails and says not to run again,
// or has run once more than the pool holds connections: after a server
// restart every pooled connection is gone, and the pool checks only
// connections idle for a second or more. The first dead one a call meets
// drops the others (see release), so its next try normally takes a new
// one; the bound is that of a call that meets every connection of the
// pool dead (the server restarting again meanwhile, say).
func (s *Store) retry(ctx context.Context, try func() (again bool, err error)) error {
	for n := int32(0); ; n++ {
		again, err := try()
		if err == nil || !again || n == s.maxConns || ctx.Err() != nil || s.closed.Load() {
			return err
		}
	}
}

// release returns c, taken from the pool for a call with context ctx, to
// the pool. A connection that closed under the call while its context
// had not ended (the server ended its session, or restarted, or the
// network or a proxy between cut it) says that the pool's other
// connections are most likely gone too: the pool hands out those idle for
// less than a second unchecked, and each would fail the call that took it
// (a save sent on one fails, its outcome unknown). So every idle
// connection is dropped, and each in use when it comes back to the pool;
// the calls after this one connect anew. A connection closed because the
// call's context ended (a server that did not answer the cancel) drops
// nothing: the call gave up, the server may be well.
func (s *Store) release(ctx context.Context, c *pgxpool.Conn) {
	if c.Conn().IsClosed() && ctx.Err() == nil && !s.closed.Load() {
		s.pool.Reset()
	}
	c.Release()
}

// ended reports whether err is the server's word that it ended the
// session before it did what the reply in whose place it came reports: a
// FATAL error of one of the SQLSTATEs PostgreSQL ends a session with on
// its own (an operator's pg_terminate_backend or a shutdown, 57P01; an
// idle-session or idle-in-transaction timeout, 57P05 and 25P03), which it
// raises only where it looks for interrupts, never between a commit and
// the report of the statement it commits, and which rolls back its
// transaction. Not any FATAL: a connection pooler between the store and
// the server sends its own (SQLSTATE 08P01) when its link to the server
// breaks, and that link may have broken after the server committed, with
// its reply on the way. Not a PANIC: the server may raise it at a commit
// (its WAL flush failed) that recovery then finds. Not a failed connect:
// a new connection would fail alike.
func ended(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return false
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || cmp.Or(pe.SeverityUnlocalized, pe.Severity) != "FATAL" {
		return false
	}
	switch pe.Code {
	case "57P01", "57P05", "25P03": // admin_shutdown, idle_session_timeout, idle_in_transaction_session_timeout
		return true
	}
	return false
}

// read runs a read again when its connection died under it (see retry);
// reads change nothing, so running one again is always safe.
func read[T any](ctx context.Context, s *Store, fn func(sqlstore.Querier) (T, error)) (T, error) {
	var v T
	err := s.retry(ctx, func() (bool, error) {
		c := &lazyConn{s: s}
		defer c.release(ctx)
		var err error
		v, err = fn(querier{s, c})
		return err != nil && c.c != nil && c.c.Conn().IsClosed(), err
	})
	return v, err
}

// lazyConn takes a connection from the pool at its first statement, so
// that a read that fails its checks first does no I/O, and keeps it, so
// that read can tell whether it died.
type lazyConn struct {
	s *Store
	c *pgxpool.Conn
}

func (l *lazyConn) conn(ctx context.Context) (*pgxpool.Conn, error) {
	if l.c == nil {
		c, err := l.s.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		l.c = c
	}
	return l.c, nil
}

func (l *lazyConn) release(ctx context.Context) {
	if l.c != nil {
		l.s.release(ctx, l.c)
	}
}

func (l *lazyConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := l.conn(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return c.Exec(ctx, sql, args...)
}

func (l *lazyConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := l.conn(ctx)
	if err != nil {
		return nil, err
	}
	return c.Query(ctx, sql, args...)
}

// wrap gives err the store's context. An error of a statement whose
// context ended (the server cancelled it) matches the context's error
// too, the server's refusal of a write as read-only matches
// ErrServerReadOnly and says what to do, and a table that is not there
// (the store reads and writes only its own) says that Braid's tables went
// away under the open store.
func (s *Store) wrap(ctx context.Context, what string, err error) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
	case pe.Code == readOnlySQLTransaction:
		err = fmt.Errorf("%w (connect to the primary, or turn default_transaction_read_only off): %w", ErrServerReadOnly, err)
	case pe.Code == undefinedTable:
		err = fmt.Errorf("the database no longer holds Braid's tables, which it held when the store was opened "+
			"(they, or the database, were dropped since): nothing was read or written; "+
			"a New creates them again (empty), or restore them: %w", err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres store: %s: %w: %w", what, cerr, err)
	}
	return fmt.Errorf("postgres store: %s: %w", what, err)
}

// notSent reports whether pgx says err came before anything of its
// request was sent (pgconn.SafeToRetry). Not its "conn closed": pgx gives
// it too when a connection that broke while it read the reply is read
// again, after the request was sent; the pool hands out no connection
// already closed, so a write meets it only so.
func notSent(err error) bool {
	return pgconn.SafeToRetry(err) && !errors.Is(err, pgconn.ErrConnClosed)
}

// sent is wrap for the error of a write whose request was sent: it also
// matches persistence.ErrOutcomeUnknown unless the error is the server's
// answer (see outcomeUnknown).
func (s *Store) sent(ctx context.Context, what string, err error) error {
	werr := s.wrap(ctx, what, err)
	if outcomeUnknown(err) {
		return fmt.Errorf("%w (%w)", werr, persistence.ErrOutcomeUnknown)
	}
	return werr
}

// outcomeUnknown reports whether err, met by a write once its request (or
// its commit) was sent, leaves unsaid whether it committed: anything but
// the server's answer that it failed (an error of severity ERROR, which
// ends its transaction) and pgx's word that nothing was sent
// (pgconn.SafeToRetry). A broken or timed-out connection, a pooler's
// FATAL error (its link to the server broke, perhaps after the commit)
// and a PANIC (perhaps at the commit) leave it unknown, as does any FATAL
// error that comes where the commit may be done (the callers take the
// server's word that it ended the session where it proves nothing
// committed: see ended).
func outcomeUnknown(err error) bool {
	if notSent(err) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch cmp.Or(pe.SeverityUnlocalized, pe.Severity) {
		case "FATAL", "PANIC":
			return true
		}
		return false
	}
	return true
}

// Load implements persistence.Store.
func (s *Store) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	return read(ctx, s, func(q sqlstore.Querier) (*persistence.Record, error) { return sqlstore.Load(ctx, q, key) })
}

// Session implements persistence.Store.
func (s *Store) Session(ctx context.Context, sessionID string) ([]*persistence.Record, error) {
	return read(ctx, s, func(q sqlstore.Querier) ([]*persistence.Record, error) { return sqlstore.Session(ctx, q, sessionID) })
}

// Sessions implements persistence.Store.
func (s *Store) Sessions(ctx context.Context) ([]persistence.SessionInfo, error) {
	return read(ctx, s, func(q sqlstore.Querier) ([]persistence.SessionInfo, error) { return sqlstore.Sessions(ctx, q) })
}

// Save implements persistence.Store: one transaction, holding the
// session's lock, that checks every change's version and writes it.
func (s *Store) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if err := persistence.CheckSave(changes); err != nil {
		return nil, err
	}
	if len(changes) == 1 && oneStatement(changes[0]) {
		switch v, ok, err := s.append(ctx, opts.Durable, changes[0]); {
		case err != nil:
			return nil, err
		case ok:
			return []int64{v}, nil
		}
	}
	var versions []int64
	err := s.write(ctx, opts.Durable, changes[0].Key.SessionID, func(q sqlstore.Querier) (err error) {
		versions, err = sqlstore.Apply(ctx, q, time.Now(), changes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return versions, nil
}

// oneStatement reports whether c's data and messages, together, are small
// enough for the one-round-trip append, whose statement carries them all;
// a longer change takes the general path, whose statements carry at most
// persistence.MaxValueSize bytes of them each where the messages allow.
func oneStatement(c persistence.Change) bool {
	n := len(c.Data)
	for _, m := range c.Messages {
		n += len(m)
	}
	return n <= persistence.MaxValueSize
}

// appendSQL creates the record (Base 0, of incarnation $11) or updates it
// if it is at version $5-1 with $9 messages, of incarnation $11,
// and inserts the messages $10 from seq $9 only if it did; it returns how
// many records it wrote (0 or 1).
const appendSQL = `WITH u AS (
  %s RETURNING 1),
i AS (INSERT INTO braid_messages (session_id, kind, id, seq, data)
  SELECT $1, $2, $3, $9 + m.ord - 1, m.data FROM u, unnest($10::text[]) WITH ORDINALITY AS m(data, ord))
SELECT count(*) FROM u`

var (
	appendCreate = fmt.Sprintf(appendSQL, `INSERT INTO braid_records (session_id, kind, id, schema_version, version, updated_at, data, messages, incarnation)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $11::bigint WHERE $9::bigint = 0 ON CONFLICT DO NOTHING`)
	appendUpdate = fmt.Sprintf(appendSQL, `UPDATE braid_records SET version = $5, updated_at = $6, data = $7, messages = $8
  WHERE session_id = $1 AND kind = $2 AND id = $3 AND version = $5::bigint - 1 AND schema_version = $4 AND messages = $9
    AND incarnation = $11::bigint`)
)

// append tries the common save in one round trip. ok is false when the
// change is not a plain append onto the version it names (a rewrite, a
// conflict, damage): nothing was written, and the general path decides.
// It runs again if the server ended the connection before the statement
// ran to its end (see retry).
func (s *Store) append(ctx context.Context, durable bool, c persistence.Change) (version int64, ok bool, err error) {
	if s.closed.Load() {
		return 0, false, persistence.ErrClosed
	}
	if s.readOnly {
		return 0, false, fmt.Errorf("postgres store: %w", ErrReadOnly)
	}
	msgs := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		msgs[i] = string(m)
	}
	err = s.retry(ctx, func() (again bool, err error) {
		ok, again, err = s.appendOnce(ctx, durable, c, msgs)
		return again, err
	})
	if err != nil || !ok {
		return 0, false, err
	}
	return c.Base + 1, true, nil
}

// appendOnce is one try of append. again is true when nothing can have
// committed: the pipeline runs in one implicit transaction that commits
// after its last statement, and the server's word that it ended the
// session (see ended) came in place of the first statement's result, or
// the connection died while the statements were being prepared, before
// the pipeline was sent. Not in place of the last statement's: a DSN may
// pick the simple protocol, whose implicit transaction commits before the
// last statement is reported complete. A connection that broke
// later without the server's word is not tried again: the server may have
// committed and its replies been lost.
func (s *Store) appendOnce(ctx context.Context, durable bool, c persistence.Change, msgs []string) (ok, again bool, err error) {
	stmt := appendUpdate
	if c.Base == 0 {
		stmt = appendCreate
	}
	b := &pgx.Batch{}
	b.Queue(lockSQL, synchronousCommit(durable), c.Key.SessionID)
	b.Queue(stmt, c.Key.SessionID, string(c.Key.Kind), c.Key.ID, persistence.SchemaVersion, c.Base+1,
		sqlstore.Timestamp(time.Now()), string(c.Data), c.From+len(c.Messages), c.From, msgs, c.Incarnation)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, false, s.wrap(ctx, "connect", err)
	}
	defer s.release(ctx, conn)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		// Preparing the statements is a round trip of its own, before
		// the pipeline is sent.
		var pre pgx.ErrPreprocessingBatch
		if errors.As(err, &pre) {
			return false, conn.Conn().IsClosed(), s.wrap(ctx, "save", err)
		}
		if ended(err) || notSent(err) {
			return false, true, s.wrap(ctx, "save", err) // nothing of it ran
		}
		return false, false, s.sent(ctx, "save", err)
	}
	var n int64
	if err := br.QueryRow().Scan(&n); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == serializationFailure {
			// The pipeline's transaction is of the DSN's default
			// isolation: above read committed, its snapshot predates the
			// lock wait, and another writer's commit meanwhile fails it.
			// Nothing was written: the general path says why.
			return false, false, nil
		}
		// Perhaps after the commit (see above).
		return false, false, s.sent(ctx, "save", err)
	}
	if err := br.Close(); err != nil {
		// The commit's reply: the commit may have happened.
		return false, false, s.sent(ctx, "save", err)
	}
	return n == 1, false, nil
}

// Sync implements persistence.Store: it commits a write to a meta row
// with synchronous_commit on. A commit waits for the WAL flush only if
// its transaction wrote something, and the flush takes every earlier
// commit with it.
func (s *Store) Sync(ctx context.Context) error {
	return s.write(ctx, true, "braid sync", func(q sqlstore.Querier) error {
		return q.Exec(ctx, sqlstore.SyncSQL)
	})
}

// Delete implements persistence.Store.
func (s *Store) Delete(ctx context.Context, key persistence.Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	return s.write(ctx, true, key.SessionID, func(q sqlstore.Querier) error {
		return sqlstore.Delete(ctx, q, key)
	})
}

// DeleteSession implements persistence.Store.
func (s *Store) DeleteSession(ctx context.Context, sessionID string) (int, error) {
	if err := persistence.ValidateID("session", sessionID); err != nil {
		return 0, err
	}
	return s.DeleteStoredSession(ctx, sessionID)
}

// DeleteStoredSession is DeleteSession for a session stored under an id
// that ValidateID refuses (a row written by hand: SPEC S5), which
// DeleteSession, like every call, refuses with ErrBadID before any I/O:
// it deletes the records and messages stored under exactly sessionID,
// byte for byte, whatever it holds, and no other session's, and returns
// how many records it deleted (0: none). It is how an operator clears
// such a session; applications use DeleteSession.
func (s *Store) DeleteStoredSession(ctx context.Context, sessionID string) (n int, err error) {
	err = s.write(ctx, true, sessionID, func(q sqlstore.Querier) (err error) {
		n, err = sqlstore.DeleteSession(ctx, q, sessionID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Close closes the connection pool; later calls fail with
// persistence.ErrClosed. It waits for calls under way to end, and for
// the server to hear that the connections end and to cancel the
// statements of calls whose context ended, for Config.ConnectTimeout at
// most: then, as with a server that stopped answering, it closes every
// connection at once, and a call still under way fails with
// persistence.ErrClosed (a save cut off so may still commit, as one whose
// connection broke). A second Close returns at once.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		closePool(s.pool, s.dials, s.closeWait)
	}
	return nil
}

// querier runs sqlstore's statements on a pool or a transaction.
type querier struct {
	s  *Store
	db interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (q querier) ExecN(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.db.Exec(ctx, sql, args...)
	if err != nil {
		return 0, q.s.wrap(ctx, "exec", err)
	}
	return tag.RowsAffected(), nil
}

func (q querier) Exec(ctx context.Context, sql string, args ...any) error {
	if _, err := q.db.Exec(ctx, sql, args...); err != nil {
		return q.s.wrap(ctx, "exec", err)
	}
	return nil
}

func (q querier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, q.s.wrap(ctx, "query", err)
	}
	return rows, nil
}
