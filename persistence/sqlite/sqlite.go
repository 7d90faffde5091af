package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
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

// ErrBusy reports that another connection (usually another process) held
// the database's write lock for longer than Config.BusyTimeout.
var ErrBusy = errors.New("database is locked by another writer for longer than the busy timeout; retry, or raise BusyTimeout")

// Config configures a Store.
type Config struct {
	// Dir is the store's folder, created (0700) if missing. Required. A
	// new braid.db in it is created 0600, and its -wal and -shm files
	// take that mode.
	Dir string
	// BusyTimeout bounds the wait for the write lock that another process
	// holds (default 10s).
	BusyTimeout time.Duration
	// ReadConns is how many connections serve loads at most (default 4);
	// once opened, they stay open until Close.
	ReadConns int
	// MaxGroup bounds the saves committed in one transaction (default
	// 128, at most 65536); Open queues up to four times as
	// many saves.
	MaxGroup int
	// NoFsync turns every fsync off, durable saves and Sync included: for
	// benchmarks only. A machine crash may then lose any saves.
	NoFsync bool
	// ReadOnly opens an existing store for reading only, as an inspection
	// tool does: Dir and its braid.db must exist (else an error matching
	// fs.ErrNotExist: nothing is created), the database is opened with
	// SQLite's mode=ro and never takes the write lock, so it reads beside
	// a running writer and never waits for one; its tables are neither
	// created nor brought to this build's layout (a database of another
	// layout is an error matching persistence.ErrSchemaVersion, one
	// without Braid's tables an error matching fs.ErrNotExist). Save,
	// Delete, DeleteSession, DeleteStoredSession and Sync fail with
	// ErrReadOnly.
	// SQLite reads a WAL database through its -wal and -shm files: it
	// creates them beside braid.db when they are missing and the folder
	// is writable (they stay after Close: a read-only connection does not
	// remove them); in a folder it may not write, it reads a database
	// whose -wal and -shm exist, or one closed cleanly (no -wal left),
	// which it then reads as immutable (see the package doc).
	ReadOnly bool
}

// DefaultConfig returns the defaults (no Dir).
func DefaultConfig() Config {
	return Config{BusyTimeout: 10 * time.Second, ReadConns: 4, MaxGroup: 128}
}

// maxMaxGroup is the largest Config.MaxGroup: Open makes a queue of four
// times it, which must be a size a channel can have.
const maxMaxGroup = 1 << 16

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.BusyTimeout = cmp.Or(c.BusyTimeout, d.BusyTimeout)
	c.ReadConns, c.MaxGroup = cmp.Or(c.ReadConns, d.ReadConns), cmp.Or(c.MaxGroup, d.MaxGroup)
	return c
}

// Validate checks the configuration as Open does: a zero field is its
// default, so it refuses only what Open refuses.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Dir == "":
		return errors.New("sqlite store: empty Dir")
	case c.BusyTimeout < time.Millisecond:
		return fmt.Errorf("sqlite store: BusyTimeout %v: want at least 1ms", c.BusyTimeout)
	case c.ReadConns < 1 || c.MaxGroup < 1:
		return errors.New("sqlite store: ReadConns and MaxGroup must be at least 1")
	case c.MaxGroup > maxMaxGroup:
		return fmt.Errorf("sqlite store: MaxGroup %d: want at most %d", c.MaxGroup, maxMaxGroup)
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
	wal     *walSync // makes durable points durable
}

// writer is what the committing caller holds: w's connection and the
// writes prepared on it.
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// version is the connection's PRAGMA data_version when Sync last
	// looked (or the store opened): it changes when another connection,
	// another Store's or process's, commits.
	version int64
}

// dataVersion returns the connection's PRAGMA data_version.
func (w *writer) dataVersion(ctx context.Context) (v int64, err error) {
	err = w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	return v, err
}

// request is one member of a group: a save, a delete or a sync.
type request struct {
	ctx     context.Context
	durable bool
	apply   func(ctx context.Context, q sqlstore.Querier) error
	reply   chan error // buffered: the writer never waits on it
	// state is queued, taken, begun or abandoned (see there).
	state atomic.Int32
}

// The states of a request.
const (
	// queued: in the queue.
	queued int32 = iota
	// taken: a committing caller took it from the queue, so it gets a
	// reply even if the store closes (after its commit, and its fsync).
	taken
	// begun: its group's transaction began with it: it runs, and its
	// caller waits for its outcome, whatever its context.
	begun
	// abandoned: its caller's context ended before its group began: it
	// does not run.
	abandoned
)

// begin marks r as run by a transaction that began; false if its caller
// abandoned it.
func (r *request) begin() bool {
	return r.state.CompareAndSwap(taken, begun) || r.state.CompareAndSwap(queued, begun)
}

// abandon marks r as not to be run, for a caller whose context ended;
// false if its group began already.
func (r *request) abandon() bool {
	return r.state.CompareAndSwap(queued, abandoned) || r.state.CompareAndSwap(taken, abandoned)
}

// ErrReadOnly reports a write (Save, Delete, DeleteSession,
// DeleteStoredSession, Sync) to a Store opened with Config.ReadOnly:
// nothing was written.
var ErrReadOnly = errors.New("the store was opened read-only")

// Open opens (creating it if needed, unless cfg.ReadOnly) the database in
// cfg.Dir, with the defaults for cfg's zero fields.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.ReadOnly {
		return openReadOnly(ctx, cfg)
	}
	s, w, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.token <- w
	return s, nil
}

// dialect returns SQLite's form of the shared tables.
func dialect() sqlstore.Dialect {
	return sqlstore.Dialect{Text: "text", Options: " WITHOUT ROWID",
		Columns: `SELECT name FROM pragma_table_info('braid_records')`,
		Exists:  `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`}
}

// open opens the store, creates the tables and returns the writer's state.
func open(ctx context.Context, cfg Config) (_ *Store, _ *writer, err error) {
	cfg = cfg.withDefaults()
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
	// A new braid.db is made readable by its owner alone (SQLite would
	// make it 0644 less the umask): sessions hold prompts, answers and
	// tools' inputs. SQLite gives the -wal and -shm files the database's
	// mode. An existing file keeps its own.
	if f, err := os.OpenFile(s.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
	s.wal = newWALSync(s.path + "-wal")
	// A WAL that holds frames already may hold commits of a writer that
	// was killed before its next durable point: the first Sync (or
	// durable save) syncs them, as if this store had committed them.
	if fi, err := os.Stat(s.wal.path); err == nil && fi.Size() > 0 {
		s.wal.commit()
	}
	// Every commit is at synchronous=NORMAL (OFF without fsync); a durable
	// point then waits for an fsync of the WAL (walSync).
	level := map[bool]string{false: "NORMAL", true: "OFF"}[cfg.NoFsync]
	s.w, _ = sql.Open("sqlite", s.dsn("_pragma=journal_mode(WAL)&_pragma=synchronous("+level+")")) // sql.Open only checks the driver's name
	s.r, _ = sql.Open("sqlite", s.dsn("_pragma=query_only(1)"))
	s.w.SetMaxOpenConns(1)
	s.r.SetMaxOpenConns(cfg.ReadConns)
	// Else database/sql closes all but two after a busy moment, and each
	// new one reads the schema and prepares the loads again.
	s.r.SetMaxIdleConns(cfg.ReadConns)
	// Before the write connection, whose first use switches the file to WAL.
	if err := s.checkForeign(ctx); err != nil {
		s.w.Close()
		s.r.Close()
		return nil, nil, err
	}
	w := &writer{stmts: map[string]*sql.Stmt{}}
	if w.conn, err = s.w.Conn(ctx); err == nil {
		q := querier{s: s, db: w.conn, stmts: w.stmts}
		if err = q.Exec(ctx, "BEGIN IMMEDIATE"); err == nil {
			if err = sqlstore.Init(ctx, q, dialect()); err == nil {
				err = q.Exec(ctx, "COMMIT")
			}
		}
		if err != nil { // nothing of a failed Init is kept
			_ = q.Exec(ctx, "ROLLBACK")
		}
	}
	if err == nil {
		w.version, err = w.dataVersion(ctx)
	}
	for _, query := range sqlstore.Reads() {
		if err == nil {
			s.reads[query], err = s.r.PrepareContext(ctx, query)
		}
	}
	if err != nil {
		if w.conn != nil {
			closeStmts(w.stmts)
			w.conn.Close()
		}
		s.w.Close()
		closeStmts(s.reads)
		s.r.Close()
		return nil, nil, s.wrap("open", err)
	}
	return s, w, nil
}

// openReadOnly opens the existing store in cfg.Dir for reading only
// (Config.ReadOnly): loads run on the read pool, whose connections are
// opened with mode=ro; there is no write connection.
func openReadOnly(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, token: make(chan *writer, 1), done: make(chan struct{}), drained: make(chan struct{}),
		reads: map[string]*sql.Stmt{}}
	var err error
	if s.path, err = filepath.Abs(filepath.Join(cfg.Dir, FileName)); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// Stat first: SQLite's mode=ro creates nothing either, but says only
	// "unable to open database file".
	if _, err := os.Stat(s.path); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	err = s.openReads(ctx, "mode=ro")
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_READONLY_DIRECTORY {
		// SQLite reads a WAL database through its -wal and -shm files, and
		// may not create them in this folder: with no -wal, the database
		// was closed cleanly (or a writer has not written yet), so braid.db
		// holds every commit; it is read as a file that does not change.
		if _, werr := os.Stat(s.path + "-wal"); errors.Is(werr, fs.ErrNotExist) {
			s.r.Close()
			err = s.openReads(ctx, "mode=ro&immutable=1")
		}
	}
	if err == nil {
		err = sqlstore.CheckLayout(ctx, querier{s: s, db: s.r, stmts: map[string]*sql.Stmt{}}, dialect())
		if errors.Is(err, sqlstore.ErrNoTables) {
			err = fmt.Errorf("sqlite store %s: %w (%w)", s.path, err, fs.ErrNotExist)
		} else if err != nil {
			err = s.wrap("open", err)
		}
	}
	for _, query := range sqlstore.Reads() {
		if err == nil {
			if s.reads[query], err = s.r.PrepareContext(ctx, query); err != nil {
				err = s.wrap("open", err)
			}
		}
	}
	if err != nil {
		closeStmts(s.reads)
		s.r.Close()
		return nil, err
	}
	return s, nil
}

// openReads opens the read pool of a read-only store with the URI
// parameters mode and checks the file (checkForeign).
func (s *Store) openReads(ctx context.Context, mode string) error {
	s.r, _ = sql.Open("sqlite", s.dsn(mode+"&_pragma=query_only(1)")) // sql.Open only checks the driver's name
	s.r.SetMaxOpenConns(s.cfg.ReadConns)
	s.r.SetMaxIdleConns(s.cfg.ReadConns)
	return s.checkForeign(ctx)
}

// ErrForeign reports that the folder's database file holds tables, none of
// them Braid's: another program's database, which a store does not take
// over.
var ErrForeign = errors.New("the database is not a Braid store: it has tables and none of Braid's")

// checkForeign refuses a database file that holds tables but not Braid's
// (ErrForeign), before anything is written to it: opening a store creates
// its tables and switches the file to WAL, which must not happen to
// another program's database found where the store's is looked for. It
// reads on the query-only pool, which keeps the connection.
func (s *Store) checkForeign(ctx context.Context) error {
	if fi, err := os.Stat(s.path); err != nil || fi.Size() == 0 {
		return nil // no file yet, or an empty one: the store creates it
	}
	var tables, braid int
	err := s.r.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN name LIKE 'braid\_%' ESCAPE '\' THEN 1 END) FROM sqlite_master WHERE type = 'table'`).Scan(&tables, &braid)
	switch {
	case err != nil:
		return s.wrap("open", err)
	case tables > 0 && braid == 0:
		return fmt.Errorf("sqlite store: %s: %w", s.path, ErrForeign)
	}
	return nil
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
// took, and gives the writer back. Once a group leaves durable saves
// waiting, it gives the writer back first (the next group commits while
// the WAL syncs), then syncs the WAL and replies to them.
func (s *Store) lead(w *writer) {
	var waiting []*request
	var upto uint64
	for len(waiting) == 0 {
		var group []*request
	drain:
		for len(group) < s.cfg.MaxGroup {
			select {
			case r := <-s.queue:
				r.state.CompareAndSwap(queued, taken)
				group = append(group, r)
			default:
				break drain
			}
		}
		if len(group) == 0 {
			break
		}
		waiting, upto = s.commit(w, group)
	}
	s.token <- w
	if len(waiting) > 0 {
		s.reply(waiting, upto)
	}
}

// commit runs a group in one transaction, at synchronous=NORMAL, and
// replies to every request except the durable ones that committed: it
// returns those, and the group's number, for reply.
func (s *Store) commit(w *writer, group []*request) (waiting []*request, n uint64) {
	var live []*request
	for _, r := range group {
		if err := r.ctx.Err(); err != nil || r.state.Load() == abandoned {
			r.reply <- cmp.Or(err, context.Canceled) // given up before it started: not run
			continue
		}
		live = append(live, r)
	}
	errs := make([]error, len(live))
	err := s.transact(w, live, errs)
	if err == nil && len(live) > 0 {
		n = s.wal.commit()
	}
	for i, r := range live {
		e := cmp.Or(err, errs[i])
		if e != nil && r.ctx.Err() != nil {
			e = r.ctx.Err() // a lone request's end interrupted its transaction
		}
		if e == nil && r.durable && !s.cfg.NoFsync {
			waiting = append(waiting, r)
			continue
		}
		r.reply <- e
	}
	return waiting, n
}

// reply makes the groups up to n durable, then replies to their durable
// requests.
func (s *Store) reply(durable []*request, n uint64) {
	err := s.wal.to(n)
	for _, r := range durable {
		r.reply <- err
	}
}

func (s *Store) transact(w *writer, live []*request, errs []error) error {
	if len(live) == 0 {
		return nil
	}
	// A lone request's context may end its wait for the write lock (its
	// caller waits on it); nothing after BEGIN runs on a request's context,
	// so a transaction is never left open by one that ended. A request
	// whose caller gave up while the group waited for the lock is not run
	// (its caller reported its context's end); the others are begun: their
	// callers wait for their outcomes, so that a save that commits is
	// never reported as failed (SPEC S4).
	ctx := context.Background()
	wait := ctx
	if len(live) == 1 {
		wait = live[0].ctx
	}
	// The transaction is statements on the writer's connection, so that
	// they stay prepared (database/sql's Tx would prepare them again).
	q := querier{s: s, db: w.conn, stmts: w.stmts}
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
	run := make([]bool, len(live))
	for i, r := range live {
		if run[i] = r.begin(); !run[i] {
			errs[i] = cmp.Or(r.ctx.Err(), context.Canceled)
		}
	}
	for i, r := range live {
		if !run[i] {
			continue
		}
		if errs[i] = r.apply(ctx, q); errs[i] != nil {
			if err := q.Exec(ctx, "ROLLBACK"); err != nil || len(live) == 1 {
				return err
			}
			for j := range errs {
				if run[j] {
					errs[j] = nil
				}
			}
			return s.transactSavepoints(ctx, q, live, run, errs)
		}
	}
	if err := q.Exec(ctx, "COMMIT"); err != nil {
		_ = q.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// transactSavepoints commits the requests of live that run in one
// transaction, each in a savepoint: a failed one is rolled back alone.
func (s *Store) transactSavepoints(ctx context.Context, q querier, live []*request, run []bool, errs []error) error {
	if err := q.Exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for i, r := range live {
		if !run[i] {
			continue
		}
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
// ends before the request's group began its transaction, do returns ctx's
// error and the request is not run; once it began, do returns its outcome
// (its commit, and a durable one's fsync: a transaction that holds the
// write lock already, and an fsync, are not waits on another writer).
// A lone request's context also ends its own wait for the write lock.
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
		// Until a committing caller takes r, this caller may take the
		// writer and commit the queue itself; once r is taken, it waits
		// for r's reply (r's commit, or r's fsync).
		token := s.token
		if r.state.Load() != queued {
			token = nil
		}
		// A reply already given wins over ctx's end (this caller may have
		// committed r itself, in lead): a save that committed reports so,
		// else its writer keeps the version it saved over and conflicts
		// with its own save next (SPEC S4).
		select {
		case err := <-r.reply:
			return err
		default:
		}
		select {
		case err := <-r.reply:
			return err
		case w := <-token:
			s.lead(w)
		case <-ctx.Done():
			select {
			case err := <-r.reply:
				return err
			default:
			}
			if r.abandon() {
				return ctx.Err() // not run: its group checks
			}
			return <-r.reply // its group began: it reports what happened
		case <-s.done:
			// Close waits for the group being committed and syncs what
			// committed, then fails what is queued: a request taken by a
			// group gets its reply; one still queued, ErrClosed.
			select {
			case err := <-r.reply:
				return err
			case <-s.drained:
				if r.state.Load() != queued {
					return <-r.reply
				}
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
func (s *Store) Load(ctx context.Context, key persistence.Key) (rec *persistence.Record, err error) {
	if err := key.Validate(); err != nil {
		return nil, err // before anything else (SPEC S2)
	}
	err = s.read(ctx, func(ctx context.Context, q querier) error { rec, err = sqlstore.Load(ctx, q, key); return err })
	return rec, err
}

// Session implements persistence.Store.
func (s *Store) Session(ctx context.Context, sessionID string) (recs []*persistence.Record, err error) {
	if err := persistence.ValidateID("session", sessionID); err != nil {
		return nil, err // before anything else (SPEC S2)
	}
	err = s.read(ctx, func(ctx context.Context, q querier) error {
		recs, err = sqlstore.Session(ctx, q, sessionID)
		return err
	})
	return recs, err
}

// Sessions implements persistence.Store.
func (s *Store) Sessions(ctx context.Context) (out []persistence.SessionInfo, err error) {
	err = s.read(ctx, func(ctx context.Context, q querier) error { out, err = sqlstore.Sessions(ctx, q); return err })
	return out, err
}

// read runs fn on the writer's connection when no caller commits (its
// page cache holds what the last saves wrote, where a pooled connection
// would read those pages again after every commit), else on the read
// pool, concurrently with the writer. Saves queued meanwhile wait for the
// read, a few tens of microseconds. On the writer's connection, which
// nothing else waits for, the read runs without ctx's cancellation once
// ctx is checked (the driver would start a goroutine per statement to
// watch it, which costs more than a read of a session); in the pool, ctx
// also bounds the wait for a connection.
func (s *Store) read(ctx context.Context, fn func(context.Context, querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case w := <-s.token:
		defer func() { s.token <- w }()
		return fn(context.WithoutCancel(ctx), querier{s: s, db: w.conn, stmts: w.stmts})
	default:
		return fn(ctx, querier{s: s, db: s.r, stmts: s.reads, fixed: true})
	}
}

// Save implements persistence.Store. Its changes commit in the writer's
// next group; if opts.Durable, Save returns after an fsync of the WAL that
// began after that commit.
func (s *Store) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if err := persistence.CheckSave(changes); err != nil {
		return nil, err
	}
	if s.cfg.ReadOnly {
		return nil, s.readOnly("save")
	}
	if opts.Durable {
		if err := s.wal.failed(); err != nil {
			return nil, err
		}
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

// Sync implements persistence.Store: an fsync of the WAL, unless one that
// started after the last commit of any writer of the database (this
// Store's, another's, another process's) has run already. Other writers'
// commits are told by the write connection's PRAGMA data_version, and,
// for those before the Store opened, by a WAL that holds frames at Open.
func (s *Store) Sync(ctx context.Context) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.cfg.ReadOnly {
		return s.readOnly("sync")
	}
	if s.cfg.NoFsync {
		return nil
	}
	var w *writer
	select {
	case w = <-s.token:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return persistence.ErrClosed
	}
	v, err := w.dataVersion(context.WithoutCancel(ctx))
	if err == nil && v != w.version {
		w.version = v
		s.wal.commit() // others' commits, for the fsync to cover
	}
	s.token <- w
	if err != nil {
		return s.wrap("sync", err)
	}
	return s.wal.all()
}

// Delete implements persistence.Store.
func (s *Store) Delete(ctx context.Context, key persistence.Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if s.cfg.ReadOnly {
		return s.readOnly("delete")
	}
	return s.do(ctx, true, func(ctx context.Context, q sqlstore.Querier) error {
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
	if s.cfg.ReadOnly {
		return 0, s.readOnly("delete")
	}
	err = s.do(ctx, true, func(ctx context.Context, q sqlstore.Querier) (err error) {
		n, err = sqlstore.DeleteSession(ctx, q, sessionID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Close waits for the group being committed, fails the saves still
// queued with persistence.ErrClosed, and closes the database. Later calls
// fail with persistence.ErrClosed.
func (s *Store) Close() (err error) {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.done)
		if s.cfg.ReadOnly { // no writer, nothing queued
			close(s.drained)
			err = errors.Join(closeStmts(s.reads), s.r.Close())
			return
		}
		w := <-s.token // the committing caller is done
		// Durable saves that committed and wait for an fsync get it (an
		// fsync that failed before was reported to them already).
		var serr error
		if !s.cfg.NoFsync && s.wal.failed() == nil {
			serr = s.wal.all()
		}
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
		// The WAL's descriptor first: the last connection to close folds
		// the WAL into braid.db and removes it, which an open descriptor
		// would keep from happening on some systems.
		werr := s.wal.close()
		err = errors.Join(serr, werr, closeStmts(w.stmts), w.conn.Close(), s.w.Close(), closeStmts(s.reads), s.r.Close())
	})
	return err
}

// readOnly returns the error of a write (what) to a read-only store,
// after the checks of closed stores that every call makes.
func (s *Store) readOnly(what string) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, ErrReadOnly)
}

// closeStmts closes the prepared statements of stmts: a connection that
// holds one stays open (its files too) after its sql.DB is closed.
func closeStmts(stmts map[string]*sql.Stmt) error {
	var errs []error
	for _, st := range stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
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
