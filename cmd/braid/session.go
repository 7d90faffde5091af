package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/export"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

const sessionUsage = `usage: braid session <list|show|export|import|delete> [flags] [session-id|file]

  list             the stored sessions: id, records, last update; with
                   -status also what each is doing (waiting: for answers;
                   incomplete: cut off by a crash, or running now; idle;
                   damaged), which reads every record of the store
  show <id>        a session for people: each record's history and the
                   interrupts it waits for
  export <id>      a session as JSON (records, data, messages), which
                   import (and export.Write) reads back
  import <file>    writes an exported session ("-": standard input) into
                   the store, under the session id it was exported from;
                   a session of that id already stored is left alone and
                   the import fails: delete it first to replace it
                   (creates the SQLite store if need be, but not in
                   a demo's folder: give its .braid folder)
  delete <id>      deletes every record of a session, damaged ones included
                   (from a store that is there: it creates none)

  list, show and export only read: they open the SQLite store read-only,
  create nothing, and work beside a running writer. An id that list
  prints in double quotes (Go's escapes, for a character a terminal does
  not show as itself or a byte that is not UTF-8) is typed back quoted:
  braid session delete '"\xff"'. A session stored by hand under an id no
  save writes is listed as damaged; show says why, delete removes it.

flags (before or after the argument):
  -dir DIR         the SQLite store's folder, holding braid.db (default
                   $BRAID_STORE_DIR, else .braid)
  -postgres DSN    use a PostgreSQL store instead (not with -dir);
                   only import creates its tables when they are missing
                   (and upgrades those of an earlier layout)
  -status          list only: see list

exit status: 0 done, 1 the command failed, 2 a usage error (nothing ran),
130 stopped by Ctrl-C
`

// runSession runs "braid session ...": list, show and export only read the
// store; import and delete write to it. A missing or unknown subcommand, a
// flag the subcommand does not take, or a missing or extra argument is a
// *usageError: nothing is opened.
// sessionSubs are the subcommands of "braid session".
var sessionSubs = []string{"list", "show", "export", "import", "delete"}

func runSession(ctx context.Context, args []string, stdout io.Writer) (err error) {
	if len(args) == 0 {
		return usageErr(sessionUsage, "missing subcommand")
	}
	sub := args[0]
	if isHelp(sub) {
		fmt.Fprint(stdout, sessionUsage)
		return nil
	}
	if !slices.Contains(sessionSubs, sub) {
		return usageErr(sessionUsage, "unknown subcommand %q", sub)
	}
	fset := flag.NewFlagSet("session "+sub, flag.ContinueOnError)
	def := os.Getenv("BRAID_STORE_DIR")
	if def == "" {
		def = ".braid"
	}
	dir := fset.String("dir", def, "the SQLite store's folder")
	dsn := fset.String("postgres", "", "a PostgreSQL DSN, to use a PostgreSQL store instead")
	withStatus := new(bool)
	if sub == "list" {
		withStatus = fset.Bool("status", false, "also each session's status (reads every record)")
	}
	pos, err := parseInterspersed(fset, args[1:], stdout)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return usageErr(sessionUsage, format, args...)
	}
	dirGiven, dsnGiven := false, false
	fset.Visit(func(f *flag.Flag) {
		dirGiven = dirGiven || f.Name == "dir"
		dsnGiven = dsnGiven || f.Name == "postgres"
	})
	switch {
	case dirGiven && *dir == "":
		return bad("-dir is empty: give the SQLite store's folder, or leave -dir out for %s", shellWord(def))
	case dsnGiven && *dsn == "":
		return bad("-postgres is empty: give a DSN, or leave -postgres out for the SQLite store in %s", shellWord(*dir))
	case dirGiven && *dsn != "":
		return bad("-dir and -postgres exclude each other: give one store")
	}
	var id string
	switch sub {
	case "list":
		if len(pos) != 0 {
			return bad("list takes no argument, got %q", pos[0])
		}
	case "import":
		if len(pos) != 1 {
			return bad("import takes one file (- for standard input)")
		}
	default: // show, export, delete
		if len(pos) != 1 {
			return bad("%s takes one session id", sub)
		}
		if id = sessionArg(pos[0]); id == "" && pos[0] == "" {
			return bad("%s takes one session id, got an empty one", sub)
		}
	}
	var exp *export.Session
	if sub == "import" {
		if exp, err = readExport(pos[0]); err != nil {
			return err
		}
	}
	mode := readOnly
	switch sub {
	case "import":
		mode = create
	case "delete":
		mode = write
	}
	store, err := openStore(ctx, *dir, *dsn, mode)
	if err != nil {
		return err
	}
	defer store.Close()
	defer func() {
		if errors.Is(err, persistence.ErrNotFound) {
			err = fmt.Errorf("%w (in %s)", err, storeName(*dir, *dsn))
		}
	}()
	// show, export and delete name a session; the empty id ("" typed
	// back as list prints it) is one no save writes, as a '/' is.
	if idErr := persistence.ValidateID("session", id); sub != "list" && sub != "import" && idErr != nil {
		return badIDSession(ctx, store, sub, id, idErr, *dir, *dsn, stdout)
	}
	switch sub {
	case "list":
		return listSessions(ctx, store, *withStatus, stdout)
	case "import":
		if err := importSession(ctx, store, exp, *dir, *dsn); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "imported session %s: %s\n", shownID(exp.SessionID), recordCount(len(exp.Records)))
		return err
	case "delete":
		return deleteSession(ctx, store, id, stdout)
	case "export":
		exp, err := export.Read(ctx, store, id)
		if err != nil {
			return readErr(id, err, *dir, *dsn)
		}
		b, err := json.MarshalIndent(exp, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if exp, err = export.Read(ctx, store, id); err != nil {
		return readErr(id, err, *dir, *dsn)
	}
	return showSession(exp, stdout)
}

// storeName names the store a command used, for its messages.
func storeName(dir, dsn string) string {
	if dsn != "" {
		return "the PostgreSQL store"
	}
	return "the store in " + dir
}

// deleteCommand is the `braid session delete` command line that deletes
// session id from the store a command used (the SQLite store in dir, or
// the PostgreSQL one when dsn is set), for a message to suggest: it names
// that store, so that copied it does not act on the default one. A DSN
// may hold a password, so it is left as a placeholder. An id that begins
// with '-' comes after "--", so that it is not read as a flag.
func deleteCommand(id, dir, dsn string) string {
	store := "-dir " + shellWord(dir)
	if dsn != "" {
		store = "-postgres DSN"
	}
	word := shellWord(shownID(id))
	if strings.HasPrefix(shownID(id), "-") {
		word = "-- " + word
	}
	return "braid session delete " + store + " " + word
}

// readErr is err, show's or export's for session id in the store of dir
// or dsn, saying how to remove the session when a record of it is
// damaged; a record of a newer schema version is not damaged for the
// build that wrote it, which reads it.
func readErr(id string, err error, dir, dsn string) error {
	switch {
	case errors.Is(err, persistence.ErrSchemaVersion):
		return fmt.Errorf("%w (written by a newer Braid: read it with that build)", err)
	case errors.Is(err, persistence.ErrDamaged):
		return fmt.Errorf("%w (%s removes the session)", err, deleteCommand(id, dir, dsn))
	}
	return err
}

// sessionArg returns the session id an argument names: the argument as
// it is, or, when it is the double-quoted form shownID prints for an id
// (Go's escapes, for a character a terminal does not show as itself, or
// an empty id), that id. So every id list and show print, one that no
// save writes included, can be typed back, and an argument names one
// session only: an id that saves write may itself be in double quotes
// ("a", quotes included), and names that session, not a; list prints it
// as "\"a\"".
func sessionArg(arg string) string {
	if len(arg) >= 2 && arg[0] == '"' {
		if id, err := strconv.Unquote(arg); err == nil && shownID(id) == arg {
			return id
		}
	}
	return arg
}

// storedSessionDeleter is a store that deletes a session stored under an
// id no save writes (sqlite.Store, postgres.Store).
type storedSessionDeleter interface {
	DeleteStoredSession(ctx context.Context, sessionID string) (int, error)
}

// badIDSession runs show, export or delete for a session id that
// ValidateID refuses (idErr): rows written by hand can hold one (list
// marks them damaged). delete removes exactly that session's records and
// messages; show and export say that it is damaged and why, and how to
// remove it. An id no session is stored under is not found.
func badIDSession(ctx context.Context, store persistence.Store, sub, id string, idErr error, dir, dsn string, w io.Writer) error {
	if sub == "delete" {
		d, ok := store.(storedSessionDeleter)
		if !ok {
			return fmt.Errorf("session %s: this store cannot delete a session under an id no save writes: %w", shownID(id), idErr)
		}
		n, err := d.DeleteStoredSession(ctx, id)
		switch {
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("session %s: %w; no save writes that id (%w)", shownID(id), persistence.ErrNotFound, idErr)
		}
		_, err = fmt.Fprintf(w, "deleted session %s: %s\n", shownID(id), recordCount(n))
		return err
	}
	infos, err := store.Sessions(ctx)
	if err != nil {
		return err
	}
	for _, in := range infos {
		if in.SessionID == id {
			return fmt.Errorf("session %s: %w: its %d records are stored under an id no save writes (%w); %s removes them",
				shownID(id), persistence.ErrDamaged, in.Records, idErr, deleteCommand(id, dir, dsn))
		}
	}
	return fmt.Errorf("session %s: %w; no save writes that id (%w)", shownID(id), persistence.ErrNotFound, idErr)
}

// testHookOpenForWrite, when a test sets it, runs as openStore is about
// to open a PostgreSQL store in mode write. Only tests set it.
var testHookOpenForWrite func()

// How openStore opens a store.
const (
	// readOnly: an existing store, read-only (sqlite.Config.ReadOnly,
	// postgres.Config.ReadOnly): nothing is created or changed, no write
	// lock is taken, and a PostgreSQL server that takes no writes serves.
	readOnly = iota
	// write: an existing store, to write to: one that is not there is
	// not created.
	write
	// create: a store that is created if missing.
	create
)

// openStore opens the store: postgres when a DSN is given, else the
// SQLite store in dir, which must exist unless mode is create (for
// PostgreSQL: Braid's tables must be there unless mode is create, and
// nothing is created when they are not); read-only in mode readOnly,
// which creates nothing. A dir that is the database file (DIR/braid.db)
// is refused, saying to give its folder. Only a store that does not exist
// is "no store"; one that cannot be looked at (permission denied, a path
// through a file) is reported as it is. A dir without a store that is a demo's workspace
// (its store is in dir/.braid) is refused, create or not, saying which
// -dir to give: a store created beside the demo's would hold sessions
// the demo never finds.
func openStore(ctx context.Context, dir, dsn string, mode int) (persistence.Store, error) {
	if dsn != "" {
		if mode == write && testHookOpenForWrite != nil {
			testHookOpenForWrite()
		}
		return openPostgres(ctx, dsn, mode)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().IsRegular() && filepath.Base(dir) == sqlite.FileName {
		// -dir takes the folder that holds braid.db, not the file.
		parent := filepath.Dir(dir)
		return nil, fmt.Errorf("-dir %s is the store's database file: -dir takes the folder that holds it: give -dir %s", dir, shellWord(parent))
	}
	_, err := os.Stat(filepath.Join(dir, sqlite.FileName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A demo's workspace keeps its store in DIR/.braid.
		inner := filepath.Join(dir, sessionsDir)
		if _, ierr := os.Stat(filepath.Join(inner, sqlite.FileName)); ierr == nil {
			return nil, fmt.Errorf("no store in %s (the store of the braid demo in that folder is in %s: give -dir %s): %w", dir, inner, shellWord(inner), err)
		}
		if file, ok := fileOnPath(dir); ok {
			// Where Windows says "path not found", Unix says ENOTDIR.
			return nil, fmt.Errorf("store in %s: %s is not a directory", dir, file)
		}
		if mode != create {
			return nil, fmt.Errorf("no store in %s (-dir takes a folder that holds a braid.db; -postgres a PostgreSQL DSN): %w", dir, err)
		}
	case err != nil && mode != create:
		return nil, fmt.Errorf("store in %s: %w", dir, err)
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir, ReadOnly: mode == readOnly})
	if errors.Is(err, fs.ErrNotExist) {
		// A braid.db that holds no Braid tables yet (created empty).
		return nil, fmt.Errorf("no store in %s (-dir takes a folder that holds a braid.db; -postgres a PostgreSQL DSN): %w", dir, err)
	}
	return st, err
}

// fileOnPath returns the nearest of dir and the folders above it that
// exists, if that is not a directory.
func fileOnPath(dir string) (string, bool) {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			return p, !fi.IsDir()
		case !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p:
			return "", false
		}
	}
}

// openPostgres opens the PostgreSQL store dsn names in mode: in modes
// readOnly and write, Braid's tables must be there (postgres.Config.ReadOnly,
// postgres.Config.Existing), of this build's layout, and nothing is
// created or changed, even if they are dropped as it opens.
func openPostgres(ctx context.Context, dsn string, mode int) (*postgres.Store, error) {
	st, err := postgres.New(ctx, postgres.Config{DSN: dsn, ReadOnly: mode == readOnly, Existing: mode == write})
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		// A database (or search_path) without Braid's tables.
		return nil, fmt.Errorf("no store in the PostgreSQL database the DSN names (give -postgres the DSN, with the search_path, that Braid's stores write to, or -dir): %w", err)
	case mode == write && errors.Is(err, persistence.ErrSchemaVersion):
		return nil, fmt.Errorf("%w (delete changes no table: a Braid program of this build, or braid session import, brings the tables of an earlier layout to this one's)", err)
	}
	return st, err
}

// readExport reads an exported session from file ("-": standard input),
// strictly: an unknown field is an error, so that a file of another form
// is not imported as an empty session.
func readExport(file string) (*export.Session, error) {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var exp export.Session
	if err := dec.Decode(&exp); err != nil {
		return nil, fmt.Errorf("%s: not an exported session: %w", file, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: not an exported session: more after the session's JSON", file)
	}
	if len(exp.Records) == 0 {
		return nil, fmt.Errorf("%s: the exported session has no record", file)
	}
	// Checked before the store is opened (and a SQLite one created).
	if err := export.Check(&exp); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &exp, nil
}

// errSessionExists: an import names a session that the store holds.
var errSessionExists = errors.New("the session already exists in the store")

// importSession writes exp into store (export.Write). A session of
// that id already stored (a record of it: the import's new records
// conflict with it) is errSessionExists, which says how to replace it;
// nothing is written then. dir and dsn name the store, for the delete
// command the message suggests.
func importSession(ctx context.Context, store persistence.Store, exp *export.Session, dir, dsn string) error {
	err := export.Write(ctx, store, exp)
	var ce *persistence.ConflictError
	if errors.As(err, &ce) && ce.Expected == 0 {
		return fmt.Errorf("session %q: %w (import does not replace it: to replace it, delete it first with %s)",
			exp.SessionID, errSessionExists, deleteCommand(exp.SessionID, dir, dsn))
	}
	return err
}

// deleteSession deletes a stored session, whatever damage its records
// (or other sessions') have; one with no record is an error (a mistyped
// id deletes nothing and says so).
func deleteSession(ctx context.Context, store persistence.Store, id string, w io.Writer) error {
	n, err := store.DeleteSession(ctx, id)
	switch {
	case err != nil:
		return err
	case n == 0:
		return fmt.Errorf("session %q: %w", id, persistence.ErrNotFound)
	}
	_, err = fmt.Fprintf(w, "deleted session %s: %s\n", shownID(id), recordCount(n))
	return err
}

func listSessions(ctx context.Context, store persistence.Store, withStatus bool, w io.Writer) error {
	infos, err := store.Sessions(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "SESSION\tRECORDS\tUPDATED"
	if withStatus {
		head += "\tSTATUS"
	}
	fmt.Fprintln(tw, head)
	for _, in := range infos {
		updated := in.UpdatedAt.Local().Format(time.DateTime)
		if in.Damaged {
			updated = "(damaged)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s", shownID(in.SessionID), in.Records, updated)
		if withStatus {
			st := "damaged" // an id no save writes, which Session refuses
			if persistence.ValidateID("session", in.SessionID) == nil {
				if st, err = sessionStatus(ctx, store, in.SessionID); err != nil {
					return err
				}
			}
			fmt.Fprintf(tw, "\t%s", st)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// sessionStatus says what a stored session is doing: "waiting" when an
// owner waits for answers to its interrupts (a run answers for everything
// under it), else "incomplete" when a
// run stopped short of its end (cut off by a crash, to carry on when
// invoked again; or running now in some process), else "idle";
// "damaged" when a record is (braid session show names it). Store errors
// other than damage are returned.
func sessionStatus(ctx context.Context, store persistence.Store, id string) (string, error) {
	recs, err := store.Session(ctx, id)
	if errors.Is(err, persistence.ErrDamaged) {
		return "damaged", nil
	}
	if err != nil {
		return "", err
	}
	// First every record's damage, and the runs: a run's status says what
	// everything under it (its nodes' agents and nested runs, whose record
	// ids begin with its own and ":") is doing, whatever their records
	// say. A FAILED run is over, so nothing under it waits; a run cut off
	// (or running) carries on with the empty input before any answer,
	// even when an agent under it already waits in its tool.
	runs := make([]*actors.RunRecord, len(recs))
	var under []string
	for i, r := range recs {
		if persistence.CheckRecord(r.Key, r.Data, r.Messages) != nil {
			return "damaged", nil // as the session manager would find it
		}
		if r.Key.Kind == persistence.KindMultiAgent {
			run, err := readRun(r.Key, r.Data, r.Messages)
			if err != nil {
				return "damaged", nil
			}
			runs[i] = run
			under = append(under, r.Key.ID+":")
		}
	}
	status := "idle"
	for i, r := range recs {
		if slices.ContainsFunc(under, func(p string) bool { return strings.HasPrefix(r.Key.ID, p) }) {
			continue
		}
		var waiting, cut bool
		if run := runs[i]; run != nil {
			waiting, cut = run.Status == "INTERRUPTED", run.Status == "EXECUTING"
		} else {
			var data struct {
				Interrupts *interrupt.State `json:"interrupts"`
				Pending    json.RawMessage  `json:"pending"`
			}
			if err := json.Unmarshal(r.Data, &data); err != nil || data.Interrupts == nil {
				return "damaged", nil
			}
			waiting = data.Interrupts.Activated() && len(data.Interrupts.Unanswered()) > 0
			cut = !waiting && (len(data.Pending) > 0 && string(data.Pending) != "null" ||
				!data.Interrupts.Activated() && endsWithUser(r.Messages))
		}
		switch {
		case waiting:
			return "waiting", nil
		case cut:
			status = "incomplete"
		}
	}
	return status, nil
}

// shownID is an id as the command prints it: as it is, or quoted with
// Go's escapes when it holds a character a terminal does not show as
// itself (a line separator, a bidirectional override, a quote, a byte
// that is not UTF-8) or is empty, so that the printed id names that id
// alone and cannot rearrange the line; sessionArg reads it back.
func shownID(id string) string {
	if q := strconv.Quote(id); q[1:len(q)-1] != id || id == "" {
		return q
	}
	return id
}

// endsWithUser reports whether the last of an agent's stored messages is a
// user's, which the model has not answered: the agent is Incomplete
// (agent.Status), a run to carry on.
func endsWithUser(msgs []json.RawMessage) bool {
	if len(msgs) == 0 {
		return false
	}
	var m struct {
		Role model.Role `json:"role"`
	}
	return json.Unmarshal(msgs[len(msgs)-1], &m) == nil && m.Role == model.RoleUser
}

// showSession prints each record: its history, one line per message, and
// the interrupts it waits for. exp is as export.Read returns it,
// its agents' records checked as the session manager loads them.
func showSession(exp *export.Session, w io.Writer) error {
	fmt.Fprintf(w, "session %s\n", shownID(exp.SessionID))
	for _, r := range exp.Records {
		fmt.Fprintf(w, "\n%s %s (version %d, updated %s)\n", r.Kind, shownID(r.ID), r.Version, r.UpdatedAt.Local().Format(time.DateTime))
		if r.Kind == persistence.KindMultiAgent {
			if err := showRun(exp.SessionID, r, w); err != nil {
				return err
			}
			continue
		}
		var data struct {
			State      map[string]json.RawMessage `json:"state"`
			Interrupts *interrupt.State           `json:"interrupts"`
			Pending    json.RawMessage            `json:"pending"`
		}
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return fmt.Errorf("%s %s: data: %w", r.Kind, r.ID, err)
		}
		if len(data.State) > 0 {
			b, _ := json.Marshal(data.State)
			fmt.Fprintf(w, "  state: %s\n", b)
		}
		fmt.Fprintf(w, "  messages: %d\n", len(r.Messages))
		for i, raw := range r.Messages {
			var m model.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("%s %s: message %d: %w", r.Kind, r.ID, i, err)
			}
			fmt.Fprintf(w, "  %3d %-9s %s\n", i, m.Role, describe(m))
		}
		if data.Interrupts != nil && data.Interrupts.Activated() {
			fmt.Fprintln(w, "  waiting for:")
			for _, in := range data.Interrupts.Unanswered() {
				fmt.Fprintf(w, "    %s  name=%s source=%s reason=%s\n", shownID(in.ID), shownID(in.Name), in.Source, in.Reason)
			}
		} else if len(data.Pending) > 0 {
			fmt.Fprintln(w, "  a run was cut off: the next invocation carries it on")
		}
	}
	return nil
}

// readRun reads key's record, an orchestrator's, for people
// (actors.ReadRun, as strict as the orchestrator's restore); one that does
// not read as a run is a *persistence.DamageError.
func readRun(key persistence.Key, data json.RawMessage, log []json.RawMessage) (*actors.RunRecord, error) {
	run, err := actors.ReadRun(data, log)
	if err != nil {
		return nil, &persistence.DamageError{Key: key, Part: "data", Err: fmt.Errorf("%w: %w", persistence.ErrDamaged, err)}
	}
	if run.Type == "" || run.ID == "" || run.Status == "" {
		return nil, persistence.Damaged(key, "data", "not an orchestrator's run (no type, id or status)")
	}
	return run, nil
}

// showRun prints an orchestrator's record: its status and its nodes'.
func showRun(sessionID string, r export.Record, w io.Writer) error {
	run, err := readRun(persistence.Key{SessionID: sessionID, Kind: r.Kind, ID: r.ID}, r.Data, r.Messages)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s %s: %s", run.Type, shownID(run.ID), run.Status)
	if run.Message != "" {
		fmt.Fprintf(w, " (%s)", run.Message)
	}
	fmt.Fprintln(w)
	// A FAILED run is over: its nodes' interrupts take no answers.
	waiting := "waiting for"
	if run.Status == "FAILED" {
		waiting = "was interrupted by"
	}
	for _, n := range run.Nodes {
		fmt.Fprintf(w, "  node %-20s %-11s runs=%d\n", shownID(n.ID), n.Status, n.ExecutionCount)
		for _, in := range n.Waiting {
			fmt.Fprintf(w, "    %s %s  name=%s source=%s reason=%s\n", waiting, shownID(in.ID), shownID(in.Name), in.Source, in.Reason)
		}
	}
	return nil
}

// describe is one line for a message: its text, tool uses and results.
func describe(m model.Message) string {
	var parts []string
	if t := m.Text(); t != "" {
		parts = append(parts, clip(t))
	}
	for _, u := range m.ToolUses() {
		parts = append(parts, fmt.Sprintf("[tool use %s %s %s]", u.ToolUseID, u.Name, clip(string(u.Input))))
	}
	for _, r := range m.ToolResults() {
		text := r.Text()
		if text == "" {
			b, _ := json.Marshal(r.Content) // JSON content
			text = string(b)
		}
		parts = append(parts, fmt.Sprintf("[tool result %s %s: %s]", r.ToolUseID, r.Status, clip(text)))
	}
	return strings.Join(parts, " ")
}

// clip returns s on one line, cut to 100 characters ("..." its last 3)
// at a character (rune) boundary, so that the cut text stays valid UTF-8.
func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if utf8.RuneCountInString(s) > 100 {
		return string([]rune(s)[:97]) + "..."
	}
	return s
}

// parseInterspersed parses args with fset, flags before and after the
// arguments alike ("show ID -dir DIR" as "show -dir DIR ID"), and returns
// the arguments; after "--" everything is an argument. Help and bad flags
// are parseFlags's.
func parseInterspersed(fset *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fset, args, sessionUsage, stdout); err != nil {
			return nil, err
		}
		rest := fset.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// shellWord is s as one word of a command line, to copy from a message:
// as it is when it holds only characters no shell reads, else quoted for
// the system's shells (shellWordFor).
func shellWord(s string) string { return shellWordFor(runtime.GOOS, s) }

// shellWordFor is shellWord on the system goos names. A POSIX shell reads
// a word in single quotes as it is. On Windows, where single quotes quote
// nothing in cmd.exe and a program splits its command line itself, the
// word is in double quotes, with each quote, and the backslashes before
// one, escaped as Windows programs (Go's among them) read them back.
// Not for every shell: cmd.exe still expands %NAME% in it, PowerShell
// $name, and cmd.exe takes an escaped quote for the end of the quoted
// part (a '&' or '|' after it would start another command). Paths hold
// no quote on Windows; ids with those characters are rare enough to be
// left to the reader.
func shellWordFor(goos, s string) string {
	plain := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@"
	if goos == "windows" {
		plain += `\`
	} else {
		plain += "%"
	}
	if s != "" && strings.Trim(s, plain) == "" {
		return s
	}
	if goos != "windows" {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
		}
		b.WriteByte(c)
		slashes = 0
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// recordCount is "1 record" or "<n> records".
func recordCount(n int) string {
	if n == 1 {
		return "1 record"
	}
	return strconv.Itoa(n) + " records"
}
