package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// FileName is the database's name inside Config.Dir.
const FileName = "braid.db"

// ErrBusy: another connection (usually another process) held the
// database's write lock for longer than Config.BusyTimeout.
var ErrBusy = errors.New("database is locked by another writer for longer than the busy timeout; retry, or raise BusyTimeout")

// Config configures a Store.
type Config struct {
	// Dir is the store's folder, created (0700) if missing. Required.
	Dir string
	// BusyTimeout bounds the wait for the write lock that another process
	// holds (default 10s).
	BusyTimeout time.Duration
	// ReadConns bounds the connections that serve loads (default 4).
	ReadConns int
	// MaxGroup bounds the saves committed in one transaction (default 128).
	MaxGroup int
	// NoFsync turns every fsync off, durable saves and Sync included: for
	// benchmarks only. A machine crash may then lose any saves.
	NoFsync bool
}

// DefaultConfig returns the defaults (no Dir).
func DefaultConfig() Config {
	return Config{BusyTimeout: 10 * time.Second, ReadConns: 4, MaxGroup: 128}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("sqlite store: empty Dir")
	case c.BusyTimeout < time.Millisecond:
		return fmt.Errorf("sqlite store: BusyTimeout %v: want at least 1ms", c.BusyTimeout)
	case c.ReadConns < 1 || c.MaxGroup < 1:
		return errors.New("sqlite store: ReadConns and MaxGroup must be at least 1")
	}
	return nil
}

// Store is a persistence.Store on one SQLite database. Safe for
// concurrent use; shares its folder safely with other Stores and
// processes (see the package doc).
type Store struct {
	cfg   Config
	path  string
	w, r  *sql.DB              // w has one connection, the writer's
	reads map[string]*sql.Stmt // prepared on r; read-only
	// queue holds the requests not yet committed; token holds the writer
	// while no caller commits: whoever takes it commits what is queued
	// (group commit without a hand-off when saves come one at a time).
	queue   chan *request
	token   chan *writer
	done    chan struct{} // closed when Close starts
	drained chan struct{} // closed when Close has failed the queued requests
	closed  atomic.Bool
	once    sync.Once
}

// writer is what the committing caller holds: w's connection, the writes
// prepared on it, and its synchronous setting.
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	level string
}

// request is one member of a group: a save, a delete or a sync.
type request struct {
	ctx     context.Context
	durable bool
	apply   func(ctx context.Context, q sqlstore.Querier) error
	reply   chan error // buffered: the writer never waits on it
}

// Open opens (creating it if needed) the database in cfg.Dir, with the
// defaults for cfg's zero fields.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, w, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.token <- w
	return s, nil
}

// open opens the store, creates the tables and returns the writer's state.
func open(ctx context.Context, cfg Config) (_ *Store, _ *writer, err error) {
	d := DefaultConfig()
	cfg.BusyTimeout = cmp.Or(cfg.BusyTimeout, d.BusyTimeout)
	cfg.ReadConns, cfg.MaxGroup = cmp.Or(cfg.ReadConns, d.ReadConns), cmp.Or(cfg.MaxGroup, d.MaxGroup)
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	s := &Store{cfg: cfg, queue: make(chan *request, 4*cfg.MaxGroup), token: make(chan *writer, 1),
		done: make(chan struct{}), drained: make(chan struct{}), reads: map[string]*sql.Stmt{}}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("sqlite store: %w", err)
	}
	if s.path, err = filepath.Abs(filepath.Join(cfg.Dir, FileName)); err != nil {
		return nil, nil, fmt.Errorf("sqlite store: %w", err)
	}
	s.w, _ = sql.Open("sqlite", s.dsn("_pragma=journal_mode(WAL)")) // sql.Open only checks the driver's name
	s.r, _ = sql.Open("sqlite", s.dsn("_pragma=query_only(1)"))
	s.w.SetMaxOpenConns(1)
	s.r.SetMaxOpenConns(cfg.ReadConns)
	w := &writer{stmts: map[string]*sql.Stmt{}}
	if w.conn, err = s.w.Conn(ctx); err == nil {
		q := querier{s: s, db: w.conn, stmts: w.stmts}
		err = q.Exec(ctx, "BEGIN IMMEDIATE")
		for _, ddl := range append(sqlstore.Schema("text", " WITHOUT ROWID"), "COMMIT") {
			err = cmp.Or(err, q.Exec(ctx, ddl))
		}
		if err != nil {
			_ = q.Exec(ctx, "ROLLBACK")
		}
	}
	for _, query := range sqlstore.Reads() {
		if err == nil {
			s.reads[query], err = s.r.PrepareContext(ctx, query)
		}
	}
	if err != nil {
		if w.conn != nil {
			w.conn.Close()
		}
		s.w.Close()
		s.r.Close()
		return nil, nil, s.wrap("open", err)
	}
	return s, w, nil
}

// dsn returns the database's URI with the common parameters and extra.
func (s *Store) dsn(extra string) string {
	p := filepath.ToSlash(s.path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: p}
	return fmt.Sprintf("%s?_pragma=busy_timeout(%d)&%s", u.String(), s.cfg.BusyTimeout.Milliseconds(), extra)
}

// wrap gives err the store's context; a busy timeout also matches ErrBusy.
func (s *Store) wrap(what string, err error) error {
	var se *sqlite.Error
	switch {
	case errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY:
		return fmt.Errorf("sqlite store %s: %s: %w (%w)", s.path, what, ErrBusy, err)
	case errors.Is(err, persistence.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case s.closed.Load():
		return persistence.ErrClosed
	}
	return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, err)
}

// lead commits what is queued, in groups, with the writer w the caller
// took, and gives the writer back.
func (s *Store) lead(w *writer) {
	defer func() { s.token <- w }()
	for {
		var group []*request
	drain:
		for len(group) < s.cfg.MaxGroup {
			select {
			case r := <-s.queue:
				group = append(group, r)
			default:
				break drain
			}
		}
		if len(group) == 0 {
			return
		}
		s.commit(w, group)
	}
}

// commit runs a group in one transaction, each request in a savepoint so
// that a failed one is rolled back alone, and replies to every request.
// The commit is at synchronous=FULL (a WAL fsync) if any is durable.
func (s *Store) commit(w *writer, group []*request) {
	var live []*request
	durable := false
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.reply <- err // given up before it started: not run
			continue
		}
		live, durable = append(live, r), durable || r.durable
	}
	errs := make([]error, len(live))
	err := s.transact(w, live, durable, errs)
	for i, r := range live {
		e := cmp.Or(err, errs[i])
		if e != nil && r.ctx.Err() != nil {
			e = r.ctx.Err() // a lone request's end interrupted its transaction
		}
		r.reply <- e
	}
}

func (s *Store) transact(w *writer, live []*request, durable bool, errs []error) error {
	if len(live) == 0 {
		return nil
	}
	// A lone request's context may end its wait for the write lock (its
	// caller waits on it); nothing after BEGIN runs on a request's context,
	// so a transaction is never left open by one that ended.
	ctx := context.Background()
	wait := ctx
	if len(live) == 1 {
		wait = live[0].ctx
	}
	level := map[bool]string{false: "NORMAL", true: "FULL"}[durable]
	if s.cfg.NoFsync {
		level = "OFF"
	}
	// The transaction is statements on the writer's connection, so that
	// they stay prepared (database/sql's Tx would prepare them again).
	q := querier{s: s, db: w.conn, stmts: w.stmts}
	if level != w.level {
		w.level = ""
		if err := q.Exec(ctx, "PRAGMA synchronous = "+level); err != nil {
			return err
		}
		w.level = level
	}
	// First without savepoints: saves rarely fail, and a savepoint and its
	// release are half the statements of a save in a group. If one fails,
	// the group is rolled back and done again with a savepoint per save,
	// so that only the failed one is rolled back (a lone save needs none).
	if err := q.Exec(wait, "BEGIN IMMEDIATE"); err != nil {
		// The driver may report a context's end for a BEGIN that ran:
		// roll back whatever began (an error if nothing did).
		_ = q.Exec(ctx, "ROLLBACK")
		return err
	}
	for i, r := range live {
		if errs[i] = r.apply(ctx, q); errs[i] != nil {
			if err := q.Exec(ctx, "ROLLBACK"); err != nil || len(live) == 1 {
				return err
			}
			clear(errs)
			return s.transactSavepoints(ctx, q, live, errs)
		}
	}
	if err := q.Exec(ctx, "COMMIT"); err != nil {
		_ = q.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// transactSavepoints commits live in one transaction, each request in a
// savepoint: a failed one is rolled back alone.
func (s *Store) transactSavepoints(ctx context.Context, q querier, live []*request, errs []error) error {
	if err := q.Exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for i, r := range live {
		err := q.Exec(ctx, "SAVEPOINT save")
		if err == nil {
			if errs[i] = r.apply(ctx, q); errs[i] != nil {
				err = q.Exec(ctx, "ROLLBACK TO save")
			}
		}
		if err = cmp.Or(err, q.Exec(ctx, "RELEASE save")); err != nil {
			_ = q.Exec(ctx, "ROLLBACK")
			return err
		}
	}
	if err := q.Exec(ctx, "COMMIT"); err != nil {
		_ = q.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// do queues a request and waits for its result. A caller that finds the
// writer free commits the queue itself (its request and whatever came
// meanwhile), so a lone save costs no hand-off between goroutines. If ctx
// ends first, do returns ctx's error, and the request may or may not have
// been committed.
func (s *Store) do(ctx context.Context, durable bool, apply func(context.Context, sqlstore.Querier) error) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{ctx: ctx, durable: durable, apply: apply, reply: make(chan error, 1)}
	for queued := false; !queued; {
		select {
		case s.queue <- r:
			queued = true
		case w := <-s.token: // a full queue of abandoned requests: commit (skip) them
			s.lead(w)
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return persistence.ErrClosed
		}
	}
	for {
		select {
		case err := <-r.reply:
			return err
		case w := <-s.token:
			s.lead(w)
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			// Close waits for the group being committed, then fails what
			// is queued: every request but one queued after that gets a
			// reply.
			select {
			case err := <-r.reply:
				return err
			case <-s.drained:
				select {
				case err := <-r.reply:
					return err
				default:
					return persistence.ErrClosed
				}
			}
		}
	}
}

// Load implements persistence.Store, reading concurrently with the writer.
func (s *Store) Load(ctx context.Context, key persistence.Key) (*persistence.Record, error) {
	return sqlstore.Load(ctx, s.reader(), key)
}

// Session implements persistence.Store.
func (s *Store) Session(ctx context.Context, sessionID string) ([]*persistence.Record, error) {
	return sqlstore.Session(ctx, s.reader(), sessionID)
}

// Sessions implements persistence.Store.
func (s *Store) Sessions(ctx context.Context) ([]persistence.SessionInfo, error) {
	return sqlstore.Sessions(ctx, s.reader())
}

func (s *Store) reader() querier { return querier{s: s, db: s.r, stmts: s.reads, fixed: true} }

// Save implements persistence.Store. Its changes commit in the writer's
// next group, at synchronous=FULL if opts.Durable.
func (s *Store) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if err := persistence.CheckSave(changes); err != nil {
		return nil, err
	}
	var versions []int64
	err := s.do(ctx, opts.Durable, func(ctx context.Context, q sqlstore.Querier) (err error) {
		versions, err = sqlstore.Apply(ctx, q, time.Now(), changes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return versions, nil
}

// Sync implements persistence.Store: it commits a write to a meta row at
// synchronous=FULL, whose WAL fsync makes every earlier commit durable (a
// commit that writes nothing would not fsync).
func (s *Store) Sync(ctx context.Context) error {
	return s.do(ctx, true, func(ctx context.Context, q sqlstore.Querier) error {
		return q.Exec(ctx, sqlstore.SyncSQL)
	})
}

// Delete implements persistence.Store.
func (s *Store) Delete(ctx context.Context, key persistence.Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	return s.do(ctx, false, func(ctx context.Context, q sqlstore.Querier) error {
		return sqlstore.Delete(ctx, q, key)
	})
}

// Close waits for the group being committed, fails the saves still
// queued with persistence.ErrClosed, and closes the database. Later calls
// fail with persistence.ErrClosed.
func (s *Store) Close() (err error) {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.done)
		w := <-s.token // the committing caller is done
		for {
			select {
			case r := <-s.queue:
				r.reply <- persistence.ErrClosed
				continue
			default:
			}
			break
		}
		close(s.drained)
		err = errors.Join(w.conn.Close(), s.w.Close(), s.r.Close())
	})
	return err
}

// querier runs sqlstore's statements on db, each prepared once, in
// stmts: the writes on the writer's connection as they come (a few hundred
// at most), the reads on the read pool when the store opens (fixed).
type querier struct {
	s  *Store
	db interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	}
	stmts map[string]*sql.Stmt
	fixed bool
}

func (q querier) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, ok := q.stmts[query]
	if !ok && q.fixed {
		return nil, fmt.Errorf("statement not prepared: %s", query)
	}
	if !ok {
		var err error
		if st, err = q.db.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		q.stmts[query] = st
	}
	return st, nil
}

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	st, err := q.stmt(ctx, query)
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
	}
	if err != nil {
		return q.s.wrap(strings.Fields(query)[0], err)
	}
	return nil
}

func (q querier) ExecN(ctx context.Context, query string, args ...any) (int64, error) {
	st, err := q.stmt(ctx, query)
	var n int64
	if err == nil {
		var res sql.Result
		if res, err = st.ExecContext(ctx, args...); err == nil {
			n, err = res.RowsAffected()
		}
	}
	if err != nil {
		return 0, q.s.wrap(strings.Fields(query)[0], err)
	}
	return n, nil
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	st, err := q.stmt(ctx, query)
	var rows *sql.Rows
	if err == nil {
		rows, err = st.QueryContext(ctx, args...)
	}
	if err != nil {
		return nil, q.s.wrap("query", err)
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
