package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// SchemaVersion is the version of the records this build writes and reads.
// A stored record of another version is refused with a *DamageError that
// matches ErrSchemaVersion, and is never overwritten (SPEC S5).
const SchemaVersion = 1

// Kind is the kind of owner a record belongs to.
type Kind string

// Kinds.
const (
	KindAgent      Kind = "agent"
	KindMultiAgent Kind = "multi_agent"
)

// Key names one record: one owner (agent or orchestrator) of one session.
type Key struct {
	SessionID string
	Kind      Kind
	ID        string
}

// String returns "session/kind/id", for messages.
func (k Key) String() string { return k.SessionID + "/" + string(k.Kind) + "/" + k.ID }

// CheckOwner checks the session and owner id a record's data names
// against the key it was found under: a record copied to another key is
// damage (SPEC S5). Records of earlier builds name neither, and empty
// names are not checked.
func (k Key) CheckOwner(session, id string) error {
	switch {
	case session != "" && session != k.SessionID:
		return fmt.Errorf("the record is of session %q, not %q", session, k.SessionID)
	case id != "" && id != k.ID:
		return fmt.Errorf("the record is of %s %q, not %q", k.Kind, id, k.ID)
	}
	return nil
}

// Validate checks the ids and the kind (SPEC S2).
func (k Key) Validate() error {
	if err := ValidateID("session", k.SessionID); err != nil {
		return err
	}
	if k.Kind != KindAgent && k.Kind != KindMultiAgent {
		return &IDError{What: "kind", ID: string(k.Kind), Why: `want "agent" or "multi_agent"`}
	}
	return ValidateID(string(k.Kind), k.ID)
}

// ValidateID rejects ids that every store cannot keep alike (SPEC S2):
// empty, longer than 255 bytes, not valid UTF-8, or containing '/', '\',
// NUL or another control character. Ids are keys, never file names, so
// "." and ".." are ids like any other. It does no I/O.
func ValidateID(what, id string) error {
	switch {
	case id == "":
		return &IDError{What: what, ID: id, Why: "empty"}
	case len(id) > 255:
		return &IDError{What: what, ID: strings.ToValidUTF8(id[:32], "?") + "...", Why: "longer than 255 bytes"}
	case !utf8.ValidString(id):
		return &IDError{What: what, ID: strings.ToValidUTF8(id, "?"), Why: "not valid UTF-8"}
	case strings.ContainsAny(id, `/\`):
		return &IDError{What: what, ID: id, Why: "contains a path separator"}
	}
	for _, r := range id {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return &IDError{What: what, ID: id, Why: "contains a control character"}
		}
	}
	return nil
}

// Record is what a store keeps for one owner.
//
// Data is the owner's state (for an agent: its key/value state, interrupt
// state and pending work) as one JSON object. Messages are the owner's
// history, one JSON object each, kept apart so that appending a message
// does not rewrite the others.
type Record struct {
	Key           Key
	SchemaVersion int
	// Version is assigned by the store: 1 for the first save, +1 per save.
	Version int64
	// Incarnation is the record's creation's (Change.Incarnation): a
	// record deleted and created again has another, so that a version
	// counted again from 1 is not taken for the earlier record's. 0 in
	// records of stores from before it was kept.
	Incarnation int64
	UpdatedAt   time.Time
	Data        json.RawMessage
	Messages    []json.RawMessage
}

// Change is one owner's part of a save: its new data and the messages that
// follow the first From messages it keeps (SPEC S1). Appending is
// From = the number of stored messages; a rewrite of the history (a
// conversation manager's trim, a failed invocation taking its prompt back)
// keeps fewer. A save costs O(len(Messages) + len(Data)), never O(history).
type Change struct {
	Key Key
	// Base is the version the change is based on: 0 to create the record
	// (it must not exist), else the version last loaded or saved. A stored
	// version that differs fails the whole save with a *ConflictError.
	Base int64
	// Data replaces the record's data: a JSON object.
	Data json.RawMessage
	// From is how many of the stored messages stay; it must not exceed the
	// stored count. Messages replace the rest.
	From int
	// Messages are the messages From, From+1, ...: JSON objects.
	Messages []json.RawMessage
	// Incarnation: on a create, the new record's (draw it with
	// NewIncarnation; 0 is the incarnation of records from before it was
	// kept); on an update, the incarnation of the record Base was read
	// from (Record.Incarnation), so that a record deleted and created
	// again since then, whose version may have come back to Base, fails
	// the save with a *ConflictError (SPEC S4).
	Incarnation int64
}

// NewIncarnation draws a record incarnation for a create: random and not
// 0, so that two creations of one key differ but by a chance of 2^-63.
func NewIncarnation() int64 { return rand.Int64N(math.MaxInt64) + 1 }

// SaveOptions tell a store how to save.
type SaveOptions struct {
	// Durable marks a durable point (SPEC I9): the save, and every save
	// before it, survives a machine crash before Save returns (an fsync of
	// the database's log). Without it a save is still atomic, and survives
	// the process being killed.
	Durable bool
}

// SessionInfo describes one stored session.
type SessionInfo struct {
	SessionID string
	Records   int
	UpdatedAt time.Time
	// Damaged: the session's id, or the kind or an update time of one of
	// its records, is not of a form the store writes (a row written by
	// hand), so one of its records is damaged (Session names it, or, for
	// an id no call takes, refuses the id with ErrBadID); UpdatedAt is
	// zero. The listing goes on with the other sessions.
	Damaged bool
}

// Store keeps records. Implementations are safe for concurrent use, by
// several goroutines and, for stores that share data between processes, by
// several processes: every Base check and its write are one atomic step.
//
// Every call validates its keys first (ErrBadID), a save its shape
// (ErrBadSave), its sizes (ErrTooLarge: data or a message longer than
// MaxValueSize) and its JSON (a *DamageError naming "record to save"); bad
// input does no I/O.
type Store interface {
	// Load returns the record, or an error matching ErrNotFound. A stored
	// record that cannot be read as written gives a *DamageError naming the
	// record; other records stay usable.
	Load(ctx context.Context, key Key) (*Record, error)
	// Save commits the changes, all of one session, in one transaction:
	// every Base matches and every change is written, or nothing changes
	// and the error says why (a *ConflictError names the first stale key).
	// It returns the new versions, in the order of changes. A record of
	// another schema version is never overwritten. A store on a server
	// cannot always learn the outcome: if the connection dies after the
	// server committed, Save fails (with no *ConflictError) though every
	// change is written, once; such an error matches ErrOutcomeUnknown,
	// which a Save that sent nothing, or that the server answered, never
	// does. The same changes sent again are then stale: a *ConflictError
	// that changes nothing, never a second write.
	Save(ctx context.Context, opts SaveOptions, changes ...Change) ([]int64, error)
	// Sync makes every save committed so far durable, as a durable Save
	// would (SPEC I9): those through this store and, for stores that share
	// data between processes, those of other writers that it can read (a
	// record loaded from a writer killed before its next durable point).
	// The session manager calls it at a durable point that has nothing
	// new to save.
	Sync(ctx context.Context) error
	// Delete removes the record; deleting a missing record is not an error.
	// Like DeleteSession, it is durable when it returns (SPEC I9): a
	// machine crash does not bring the record back.
	Delete(ctx context.Context, key Key) error
	// DeleteSession removes every record of the session in one
	// transaction, damaged ones and ones of another schema version
	// included (it is how an operator clears them), and returns how many
	// it removed; a session with no record is not an error (0). A writer
	// still live on the session fails its next save with a
	// *ConflictError, also once the record is created again, whatever
	// its version: the new record is of another incarnation. (Not if the
	// new record is created with incarnation 0 too: by a process of a
	// build from before incarnations, or a Save that names none.)
	DeleteSession(ctx context.Context, sessionID string) (int, error)
	// Session returns every record of a session (possibly none), ordered
	// by kind and id. A damaged record makes it fail with a *DamageError.
	Session(ctx context.Context, sessionID string) ([]*Record, error)
	// Sessions lists the stored sessions, ordered by id; damage in one
	// session does not fail the listing (SessionInfo.Damaged).
	Sessions(ctx context.Context) ([]SessionInfo, error)
	// Close releases the store's resources; later calls fail with ErrClosed.
	Close() error
}
