// Package sqlstore holds what the SQLite and PostgreSQL stores share: the
// tables, the statements (written with $n placeholders, which both drivers
// take) and the code that applies a save and reads records back. Callers
// run it inside their own transactions, with their own locking.
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/braidhq/braid/persistence"
)

// Querier runs statements: a transaction or a connection pool. Errors it
// returns are already wrapped with the store's context.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) error
	// ExecN is Exec that returns how many rows the statement changed.
	ExecN(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// Rows is a query's result.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Layout is the version of the tables this build creates and reads, kept
// in braid_meta under the name 'layout' (every layout has that table and
// that row). Init refuses a database of a newer layout before it writes
// anything: an older build would otherwise create the tables it knows
// beside a newer build's and write sessions where that build never looks.
// It brings one of an earlier layout to this one.
//
// Layouts: 1, the records and their messages; 2 (2026-12-04), a record's
// incarnation (persistence.Record.Incarnation), 0 in the records of
// layout 1.
const Layout = 2

const (
	metaDDL   = `CREATE TABLE IF NOT EXISTS braid_meta (name text PRIMARY KEY, value bigint NOT NULL)`
	layoutSQL = `SELECT value FROM braid_meta WHERE name = $1`
	// A database of a build from before the layout row has the tables of
	// layout 1 and no row: it gets one.
	setLayoutSQL = `INSERT INTO braid_meta (name, value) VALUES ('layout', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value`
	// addIncarnationSQL brings layout 1's records to layout 2.
	addIncarnationSQL = `ALTER TABLE braid_records ADD COLUMN incarnation bigint NOT NULL DEFAULT 0`
)

// Dialect is what differs between the stores' tables.
type Dialect struct {
	// Text is the type of the id columns (PostgreSQL needs
	// `text COLLATE "C"` to order ids byte by byte, as Go and SQLite do).
	Text string
	// Options ends each keyed table's definition: SQLite takes
	// " WITHOUT ROWID", so that a table is its primary key's b-tree and a
	// save writes half the pages (there is no separate index to keep).
	Options string
	// Columns lists the columns of braid_records, a name a row.
	Columns string
	// Exists counts the tables named $1 where the store's tables are (0
	// or 1).
	Exists string
}

// Init checks the database's layout, creates what it lacks of this
// build's tables and brings tables of an earlier layout to this one, in
// the caller's transaction, which should serialise the stores that open at
// once. A database of a newer layout is an error that matches
// persistence.ErrSchemaVersion, and nothing is written to it (the caller
// rolls back). Tables of this build's layout are only read: a role
// that may not create tables opens a database that has them.
func Init(ctx context.Context, q Querier, d Dialect) error {
	found, layout, err := readLayout(ctx, q, d)
	switch {
	case err != nil:
		return err
	case found && (layout < 1 || layout > Layout):
		return newerLayout(layout)
	case found && layout == Layout:
		return nil
	}
	for _, ddl := range append([]string{metaDDL}, schema(d.Text, d.Options)...) {
		if err := q.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("creating Braid's tables (layout %d): %w", Layout, err)
		}
	}
	// Tables of layout 1 (with or without the row) lack the incarnation.
	cols, err := columns(ctx, q, d.Columns)
	if err != nil {
		return err
	}
	if !cols["incarnation"] {
		if err := q.Exec(ctx, addIncarnationSQL); err != nil {
			return err
		}
	}
	return q.Exec(ctx, setLayoutSQL, Layout)
}

// ErrNoTables reports that the database holds none of Braid's tables
// (CheckLayout).
var ErrNoTables = errors.New("the database holds no Braid tables")

// CheckLayout checks, reading only, that the database's tables are of
// this build's layout, for a store opened read-only, which neither
// creates nor upgrades them: ErrNoTables when there are none, an error
// matching persistence.ErrSchemaVersion for another layout (an earlier
// one: a store opened for writing brings it to this build's).
func CheckLayout(ctx context.Context, q Querier, d Dialect) error {
	found, layout, err := readLayout(ctx, q, d)
	if err != nil || found && layout == Layout {
		return err
	}
	if found && (layout < 1 || layout > Layout) {
		return newerLayout(layout)
	}
	var records int64
	if _, err := queryRow(ctx, q, d.Exists, []any{"braid_records"}, &records); err != nil {
		return err
	}
	if records == 0 {
		return ErrNoTables
	}
	return fmt.Errorf("%w: the database's tables are of an earlier layout than this build's (%d), which opening the store for writing brings them to",
		persistence.ErrSchemaVersion, Layout)
}

// readLayout returns the layout that braid_meta records, if it does.
func readLayout(ctx context.Context, q Querier, d Dialect) (found bool, layout int64, err error) {
	var meta int64
	if _, err := queryRow(ctx, q, d.Exists, []any{"braid_meta"}, &meta); err != nil || meta == 0 {
		return false, 0, err
	}
	found, err = queryRow(ctx, q, layoutSQL, []any{"layout"}, &layout)
	return found, layout, err
}

// newerLayout is the error for a database of a layout this build does not know.
func newerLayout(layout int64) error {
	return fmt.Errorf("%w: the database's tables are of layout %d, and this build knows layouts 1 to %d only", persistence.ErrSchemaVersion, layout, Layout)
}

// columns returns the names the query lists.
func columns(ctx context.Context, q Querier, query string) (map[string]bool, error) {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}

// schema returns the statements that create the tables of Layout, with
// the id type text and the table options of a Dialect. Records and
// messages are text, kept exactly as written. Init runs them.
func schema(text, options string) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS braid_records (
  session_id %[1]s NOT NULL, kind %[1]s NOT NULL, id %[1]s NOT NULL,
  schema_version integer NOT NULL, version bigint NOT NULL, updated_at text NOT NULL, data text NOT NULL,
  messages bigint NOT NULL, incarnation bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (session_id, kind, id))%[2]s`, text, options),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS braid_messages (
  session_id %[1]s NOT NULL, kind %[1]s NOT NULL, id %[1]s NOT NULL, seq bigint NOT NULL, data text NOT NULL,
  PRIMARY KEY (session_id, kind, id, seq))%[2]s`, text, options),
	}
}

// SyncSQL writes a meta row, so that the commit it is part of has
// something to make durable.
const SyncSQL = `INSERT INTO braid_meta (name, value) VALUES ('sync', 1)
ON CONFLICT (name) DO UPDATE SET value = braid_meta.value + 1`

const (
	key     = ` WHERE session_id = $1 AND kind = $2 AND id = $3`
	keyCond = ` AND kind = $2 AND id = $3`
	// stateSQL is one primary-key lookup: the record row keeps its
	// message count, so a save never scans the messages.
	stateSQL  = `SELECT version, schema_version, messages, incarnation FROM braid_records` + key
	createSQL = `INSERT INTO braid_records (session_id, kind, id, schema_version, version, updated_at, data, messages, incarnation)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	updateSQL = `UPDATE braid_records SET schema_version = $4, version = $5, updated_at = $6, data = $7, messages = $8` + key
	// The common save, in one statement: create if absent ($9 = the
	// incarnation), or update the version it is based on when it appends
	// ($9 = From = stored count) onto its incarnation ($10); no row
	// changed sends the save the long way, which says why.
	createIfAbsentSQL = createSQL + ` ON CONFLICT DO NOTHING`
	appendSQL         = updateSQL + ` AND version = CAST($5 AS bigint) - 1 AND schema_version = $4 AND messages = $9
  AND incarnation = CAST($10 AS bigint)`
	trimSQL = `DELETE FROM braid_messages` + key + ` AND seq >= $4`
	// readSQL reads records and their messages in one statement, each
	// record's row (seq -1) before its messages. A message row is told by
	// its NULL count (a record's is NOT NULL), not by its seq, so that a
	// message row whose seq was edited below 0 is not taken for a record.
	readSQL = `SELECT kind, id, -1, schema_version, version, updated_at, data, messages, incarnation FROM braid_records WHERE session_id = $1%[1]s
UNION ALL SELECT kind, id, seq, 0, 0, '', data, NULL, 0 FROM braid_messages WHERE session_id = $1%[1]s ORDER BY 1, 2, 3`
	// sessionsSQL also counts the records whose update time is not of
	// timeLayout's width or whose kind is none a save writes, and returns
	// the earliest update time, so that a bad one that sorts below the
	// others is seen too (SessionInfo.Damaged).
	sessionsSQL = `SELECT session_id, count(*), max(updated_at), min(updated_at),
  sum(CASE WHEN length(updated_at) = 27 AND kind IN ('agent', 'multi_agent') THEN 0 ELSE 1 END)
FROM braid_records GROUP BY session_id ORDER BY session_id`
	timeLayout = "2006-01-02T15:04:05.000000Z07:00" // fixed width in UTC, so max() is the latest
)

// The two forms of readSQL: a whole session, one record.
var (
	readSessionSQL = fmt.Sprintf(readSQL, "")
	readRecordSQL  = fmt.Sprintf(readSQL, keyCond)
)

// insertSQLs holds the message inserts of 1 to len-1 rows (the common
// saves append one or two messages), built once.
var insertSQLs = func() (out [9]string) {
	for n := 1; n < len(out); n++ {
		out[n] = buildInsertSQL(n)
	}
	return out
}()

// insertSQL returns the statement that inserts n messages of one record:
// $1-$3 are the key, then each row's seq and data.
func insertSQL(n int) string {
	if n < len(insertSQLs) {
		return insertSQLs[n]
	}
	return buildInsertSQL(n)
}

func buildInsertSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO braid_messages (session_id, kind, id, seq, data) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "($1, $2, $3, $%d, $%d)", 4+2*i, 5+2*i)
	}
	return b.String()
}

// Reads returns the statements Read and Sessions run, for stores to
// prepare.
func Reads() []string {
	return []string{readSessionSQL, readRecordSQL, sessionsSQL}
}

// Timestamp formats t as the updated_at column keeps it.
func Timestamp(t time.Time) string { return t.UTC().Format(timeLayout) }

// Apply checks and writes the changes of one save, in order, costing
// O(change) each (SPEC S1). The caller holds the session's write lock for
// the transaction, and rolls it back if Apply fails.
func Apply(ctx context.Context, q Querier, now time.Time, changes []persistence.Change) ([]int64, error) {
	ts := Timestamp(now)
	versions := make([]int64, len(changes))
	for i, c := range changes {
		k := []any{c.Key.SessionID, string(c.Key.Kind), c.Key.ID}
		versions[i] = c.Base + 1
		count := c.From + len(c.Messages)
		fast, args := appendSQL, append(k, persistence.SchemaVersion, versions[i], ts, string(c.Data), count, c.From, c.Incarnation)
		if c.Base == 0 {
			fast, args = createIfAbsentSQL, append(args[:8], c.Incarnation)
		}
		n, err := q.ExecN(ctx, fast, args...)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			if err := insertMessages(ctx, q, c.Key, c.From, c.Messages); err != nil {
				return nil, err
			}
			continue
		}
		var cur, stored, inc int64
		var schema int
		found, err := queryRow(ctx, q, stateSQL, k, &cur, &schema, &stored, &inc)
		if err != nil {
			return nil, err
		}
		if found {
			if err := persistence.CheckStored(c.Key, cur); err != nil {
				return nil, err
			}
		}
		switch {
		case cur != c.Base:
			return nil, &persistence.ConflictError{Key: c.Key, Expected: c.Base, Actual: cur}
		case cur != 0 && schema != persistence.SchemaVersion:
			return nil, persistence.SchemaDamage(c.Key, "record", schema)
		case cur != 0 && inc != c.Incarnation:
			return nil, &persistence.ConflictError{Key: c.Key, Expected: c.Base, Actual: cur, Recreated: true}
		case int64(c.From) > stored:
			return nil, persistence.ErrFromPastEnd(c, int(stored))
		case c.Base == 0:
			return nil, fmt.Errorf("creating %s: no row written, and none stored", c.Key)
		}
		// A rewrite of the history (From below the stored count).
		if err := q.Exec(ctx, updateSQL, append(k, persistence.SchemaVersion, versions[i], ts, string(c.Data), count)...); err != nil {
			return nil, err
		}
		if int64(c.From) < stored {
			if err := q.Exec(ctx, trimSQL, append(k, c.From)...); err != nil {
				return nil, err
			}
		}
		if err := insertMessages(ctx, q, c.Key, c.From, c.Messages); err != nil {
			return nil, err
		}
	}
	return versions, nil
}

// insertMessages inserts messages from, from+1, ..., a few hundred rows a
// statement, and no more than persistence.MaxValueSize bytes of messages
// a statement unless one message is that long alone.
func insertMessages(ctx context.Context, q Querier, k persistence.Key, from int, msgs []json.RawMessage) error {
	return insertMessagesUpTo(ctx, q, k, from, msgs, persistence.MaxValueSize)
}

// insertMessagesUpTo is insertMessages with maxBytes of messages a
// statement.
func insertMessagesUpTo(ctx context.Context, q Querier, k persistence.Key, from int, msgs []json.RawMessage, maxBytes int) error {
	const chunk = 200
	for len(msgs) > 0 {
		n, size := 1, len(msgs[0])
		for n < min(len(msgs), chunk) && size+len(msgs[n]) <= maxBytes {
			size += len(msgs[n])
			n++
		}
		args := make([]any, 3, 3+2*n)
		args[0], args[1], args[2] = k.SessionID, string(k.Kind), k.ID
		for i, m := range msgs[:n] {
			args = append(args, from+i, string(m))
		}
		if err := q.Exec(ctx, insertSQL(n), args...); err != nil {
			return err
		}
		msgs, from = msgs[n:], from+n
	}
	return nil
}

// Delete removes a record and its messages.
func Delete(ctx context.Context, q Querier, k persistence.Key) error {
	for _, t := range []string{"braid_records", "braid_messages"} {
		if err := q.Exec(ctx, "DELETE FROM "+t+key, k.SessionID, string(k.Kind), k.ID); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSession deletes every record of the session, and its messages,
// and returns how many records it deleted.
func DeleteSession(ctx context.Context, q Querier, sessionID string) (int, error) {
	// A record left as its messages alone (its row deleted by hand: damage,
	// SPEC S5) is a record removed too.
	var orphans int64
	if _, err := queryRow(ctx, q, orphansSQL, []any{sessionID}, &orphans); err != nil {
		return 0, err
	}
	if err := q.Exec(ctx, "DELETE FROM braid_messages WHERE session_id = $1", sessionID); err != nil {
		return 0, err
	}
	n, err := q.ExecN(ctx, "DELETE FROM braid_records WHERE session_id = $1", sessionID)
	return int(n + orphans), err
}

// orphansSQL counts the records of a session left as messages alone.
const orphansSQL = `SELECT count(*) FROM (SELECT DISTINCT kind, id FROM braid_messages m WHERE session_id = $1
  AND NOT EXISTS (SELECT 1 FROM braid_records r WHERE r.session_id = m.session_id AND r.kind = m.kind AND r.id = m.id)) o`

// Load reads the record under k, after checking k (SPEC S2): one
// statement, so one snapshot. A record that is not as written is a
// *persistence.DamageError.
func Load(ctx context.Context, q Querier, k persistence.Key) (*persistence.Record, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	recs, err := read(ctx, q, k.SessionID, &k)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, persistence.ErrNotFound
	}
	return recs[0], nil
}

// Session reads every record of a session, ordered by kind and id, in one
// statement, after checking the id.
func Session(ctx context.Context, q Querier, sessionID string) ([]*persistence.Record, error) {
	if err := persistence.ValidateID("session", sessionID); err != nil {
		return nil, err
	}
	return read(ctx, q, sessionID, nil)
}

func read(ctx context.Context, q Querier, sessionID string, k *persistence.Key) ([]*persistence.Record, error) {
	recs, gaps, orphan, err := readRaw(ctx, q, sessionID, k)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		if err := cmp.Or(persistence.CheckLoaded(r), gaps[i]); err != nil {
			return nil, err
		}
	}
	if orphan != nil {
		return nil, orphan
	}
	return recs, nil
}

// readRaw reads records as stored; gaps[i] reports a missing (or an
// extra) message row of recs[i] (and recs[i] stops before it); orphan
// reports the first message row of no record (SPEC S5: a row no save
// writes, which would also make the record's creation fail).
func readRaw(ctx context.Context, q Querier, sessionID string, k *persistence.Key) (recs []*persistence.Record, gaps []error, orphan, err error) {
	query, args := readSessionSQL, []any{sessionID}
	if k != nil {
		query, args = readRecordSQL, []any{sessionID, string(k.Kind), k.ID}
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	var cur *persistence.Record
	var counts []int64 // each record's stored message count
	for rows.Next() {
		var r persistence.Record
		var kind, updated string
		var seq int64
		var count sql.NullInt64 // NULL in a message row
		var data []byte
		if err := rows.Scan(&kind, &r.Key.ID, &seq, &r.SchemaVersion, &r.Version, &updated, &data, &count, &r.Incarnation); err != nil {
			return nil, nil, nil, scanDamage(rows, sessionID, err)
		}
		r.Key.SessionID, r.Key.Kind = sessionID, persistence.Kind(kind)
		switch {
		case count.Valid: // a record's row
			if err := checkCount(cur, counts); err != nil && gaps[len(gaps)-1] == nil {
				gaps[len(gaps)-1] = err
			}
			if r.UpdatedAt, err = time.Parse(timeLayout, updated); err != nil {
				gaps = append(gaps, persistence.Damaged(r.Key, "record", "updated_at %q: %v", updated, err))
			} else {
				gaps = append(gaps, nil)
			}
			r.Data, cur = data, &r
			recs, counts = append(recs, cur), append(counts, count.Int64)
		case cur == nil || cur.Key != r.Key:
			// A message row of no record (or sorted before its record's
			// row: a seq below 0).
			if orphan == nil {
				orphan = persistence.Damaged(r.Key, fmt.Sprintf("message row %d", seq), "a message row of no record")
			}
		case gaps[len(gaps)-1] != nil:
			// past a gap
		case seq < int64(len(cur.Messages)): // below 0: the rows are unique
			gaps[len(gaps)-1] = persistence.Damaged(cur.Key, fmt.Sprintf("message row %d", seq), "not a message number")
		case seq != int64(len(cur.Messages)):
			gaps[len(gaps)-1] = persistence.Damaged(cur.Key, fmt.Sprintf("message %d", len(cur.Messages)), "missing")
		default:
			cur.Messages = append(cur.Messages, data)
		}
	}
	if err := rows.Err(); err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// Cut off by the context (a driver may report it as its own
			// error, PostgreSQL's canceled statement): it matches the
			// context's error too (SPEC R5).
			return nil, nil, nil, fmt.Errorf("reading session %q: %w (%w)", sessionID, cerr, err)
		}
		return nil, nil, nil, fmt.Errorf("reading session %q: %w", sessionID, err)
	}
	if err := checkCount(cur, counts); err != nil && gaps[len(gaps)-1] == nil {
		gaps[len(gaps)-1] = err
	}
	return recs, gaps, orphan, nil
}

// scanDamage returns the error for a row that did not scan (err): a
// column of a type the store never writes (SQLite keeps any value in any
// column, so a hand edit can put text in a version) is damage of the
// record the row belongs to, a *persistence.DamageError naming it (SPEC
// S5), when the row's kind and id scan; else err, wrapped.
func scanDamage(rows Rows, sessionID string, err error) error {
	var kind, id string
	var seq, count, skip any
	if rows.Scan(&kind, &id, &seq, &skip, &skip, &skip, &skip, &count, &skip) != nil {
		return fmt.Errorf("reading session %q: %w", sessionID, err)
	}
	key := persistence.Key{SessionID: sessionID, Kind: persistence.Kind(kind), ID: id}
	part := "record"
	if count == nil { // a message row's
		part = fmt.Sprintf("message row %v", seq)
	}
	return &persistence.DamageError{Key: key, Part: part,
		Err: fmt.Errorf("%w: a column holds a value of the wrong type: %w", persistence.ErrDamaged, err)}
}

// checkCount reports a record (the last of counts) whose message rows are
// fewer than its row says: messages lost at the end.
func checkCount(cur *persistence.Record, counts []int64) error {
	if cur == nil {
		return nil
	}
	if want := counts[len(counts)-1]; int64(len(cur.Messages)) != want {
		return persistence.Damaged(cur.Key, fmt.Sprintf("message %d", len(cur.Messages)), "missing (the record has %d messages)", want)
	}
	return nil
}

// Sessions lists the stored sessions, ordered by id.
func Sessions(ctx context.Context, q Querier) ([]persistence.SessionInfo, error) {
	rows, err := q.Query(ctx, sessionsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []persistence.SessionInfo
	for rows.Next() {
		var in persistence.SessionInfo
		var updated, earliest string
		var odd int64
		if err := rows.Scan(&in.SessionID, &in.Records, &updated, &earliest, &odd); err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		_, errEarliest := time.Parse(timeLayout, earliest)
		badID := persistence.ValidateID("session", in.SessionID) != nil
		if in.UpdatedAt, err = time.Parse(timeLayout, updated); err != nil || errEarliest != nil || odd > 0 || badID {
			in.UpdatedAt, in.Damaged = time.Time{}, true
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return out, nil
}

// queryRow scans the first row into dest; no row leaves dest as it is
// and reports false.
func queryRow(ctx context.Context, q Querier, sql string, args []any, dest ...any) (bool, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("reading %s: %w", args[0], err)
		}
		return false, nil
	}
	if err := rows.Scan(dest...); err != nil {
		return false, fmt.Errorf("reading %s: %w", args[0], err)
	}
	return true, nil
}
