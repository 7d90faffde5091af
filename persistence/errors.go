package persistence

import (
	"errors"
	"fmt"
)

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the record changed since the version the save was based
	// on: another writer saved it, or an earlier save of this writer whose
	// outcome a lost connection hid was stored after all. A call that an
	// owner refuses on the strength of its state fails with it too when
	// another writer saved since the owner read that state
	// (ConflictError.Checked).
	ErrConflict = errors.New("conflict: the session changed since this writer read it")
	// ErrDamaged: stored data cannot be read as it was written (invalid or
	// truncated JSON, unknown or missing fields, inconsistent contents).
	ErrDamaged = errors.New("damaged session data")
	// ErrSchemaVersion: the record was written by a newer (or unknown) schema.
	ErrSchemaVersion = errors.New("unsupported schema version")
	// ErrBadID: a session or record id that a store cannot keep (SPEC S2).
	ErrBadID = errors.New("invalid id")
	// ErrBadSave: a save's arguments are inconsistent (no changes, changes
	// of several sessions, a key twice, From past the stored messages).
	ErrBadSave = errors.New("invalid save")
	// ErrTooLarge: a record's data, or one of its messages, is longer
	// than MaxValueSize. Such an error matches ErrBadSave too.
	ErrTooLarge = errors.New("too large to store")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrOutcomeUnknown: a save (or another write) reached, or may have
	// reached, the server, and no reply says whether it committed: the
	// connection broke, or the call's context ended, after the request was
	// sent. It may be stored, once, or not at all, never in part. Load
	// before saving again: the same save sent again fails with a
	// *ConflictError if the first one committed, and a writer that kept
	// its old version (a SessionManager's, after a failed save) gets that
	// conflict on its next save and loads the stored record. A store
	// returns it only when the request may have been sent: a save refused
	// before sending (no connection, the context already ended) or
	// answered by the server (a failed statement) changed nothing and does
	// not match it. The error matches the underlying cause too.
	ErrOutcomeUnknown = errors.New("outcome unknown: the save was sent and no reply said whether it committed; it may be stored: load before saving again")
)

// ConflictError reports a stale save (SPEC S4), or, Checked, a stale
// owner found by Owner.Behind before anything was saved.
type ConflictError struct {
	Key      Key
	Expected int64 // the version the save was based on
	Actual   int64 // the version stored (0: none)
	// Recreated: the stored record was created again since the save's
	// base was read (another Change.Incarnation), whatever its version.
	Recreated bool
	// Checked: the conflict was found by Owner.Behind, not by a save:
	// the call it fails saved nothing.
	Checked bool
}

func (e *ConflictError) Error() string {
	if e.Recreated {
		return fmt.Sprintf("session %q %s %q: %v (the record was deleted and created again since version %d was read); reload and try again",
			e.Key.SessionID, e.Key.Kind, e.Key.ID, ErrConflict, e.Expected)
	}
	return fmt.Sprintf("session %q %s %q: %v (saved at version %d, stored version is %d); reload and try again",
		e.Key.SessionID, e.Key.Kind, e.Key.ID, ErrConflict, e.Expected, e.Actual)
}

// Is matches ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DamageError reports stored data that cannot be used (SPEC S5): it names
// the session and owner (Key) and the part of the record (Part: "data",
// "message 3", "pending work", ...). Err says what is wrong; the error
// matches ErrDamaged, and ErrSchemaVersion for a record of another schema.
type DamageError struct {
	Key  Key
	Part string
	Err  error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("session %q %s %q: %s: %v", e.Key.SessionID, e.Key.Kind, e.Key.ID, e.Part, e.Err)
}

// Unwrap returns the cause.
func (e *DamageError) Unwrap() error { return e.Err }

// Is matches ErrDamaged always (a record of another schema version cannot be
// used either), and whatever the cause matches through Unwrap.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// Damaged returns a *DamageError for part of key's record, with a cause
// that matches ErrDamaged.
func Damaged(key Key, part string, format string, args ...any) *DamageError {
	return &DamageError{Key: key, Part: part, Err: fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, args...))}
}

// SchemaDamage returns the *DamageError for a stored record of another
// schema version.
func SchemaDamage(key Key, part string, version int) *DamageError {
	return &DamageError{Key: key, Part: part,
		Err: fmt.Errorf("%w: schema version %d, this build reads %d", ErrSchemaVersion, version, SchemaVersion)}
}

// IDError reports an id that cannot be used as a key.
type IDError struct {
	What string // "session", "agent", ...
	ID   string
	Why  string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("%s id %q: %v: %s", e.What, e.ID, ErrBadID, e.Why)
}

// Is matches ErrBadID.
func (e *IDError) Is(target error) bool { return target == ErrBadID }

// ErrFromPastEnd returns the error a store gives for a change whose From
// is past the stored messages.
func ErrFromPastEnd(c Change, stored int) error {
	return fmt.Errorf("%w: %s: From %d is past the %d stored messages", ErrBadSave, c.Key, c.From, stored)
}
