package persistence

import (
	"errors"
	"fmt"
)

// Sentinel errors; the typed errors below match them with errors.Is.
var (
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the record changed since the version the save was based on.
	ErrConflict = errors.New("conflict: the session was changed by another writer")
	// ErrDamaged: a stored file or row cannot be read (truncated, corrupt,
	// from another agent, inconsistent).
	ErrDamaged = errors.New("damaged session data")
	// ErrSchemaVersion: the record was written by a newer (or unknown) schema.
	ErrSchemaVersion = errors.New("unsupported schema version")
	// ErrBadID: a session or record id that is empty or could escape its folder.
	ErrBadID = errors.New("invalid id")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
)

// ConflictError reports a stale save (SPEC S4).
type ConflictError struct {
	Key      Key
	Expected int64 // the version the save was based on
	Actual   int64 // the version stored (0: none)
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("session %q %s %q: %v (saved at version %d, stored version is %d); reload and try again",
		e.Key.SessionID, e.Key.Kind, e.Key.ID, ErrConflict, e.Expected, e.Actual)
}

// Is matches ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DamageError reports stored data that cannot be used (SPEC S5). File names
// the file (file store) or table row; Err says what is wrong and matches
// ErrDamaged, or ErrSchemaVersion for a record of another schema version.
type DamageError struct {
	SessionID string
	File      string
	Err       error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("session %q: %s: %v", e.SessionID, e.File, e.Err)
}

// Unwrap returns the cause.
func (e *DamageError) Unwrap() error { return e.Err }

// Is matches ErrDamaged always (a record of another schema version cannot be
// used either), and whatever the cause matches through Unwrap.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

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
