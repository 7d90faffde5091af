package persistence

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// SchemaVersion is the version of the records this build writes and reads.
// A record with another version is refused with ErrSchemaVersion; golden
// files of every version live in testdata/ so old sessions keep loading.
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

// Validate checks the ids against path escapes and the kind.
func (k Key) Validate() error {
	if err := ValidateID("session", k.SessionID); err != nil {
		return err
	}
	if k.Kind != KindAgent && k.Kind != KindMultiAgent {
		return &IDError{What: "kind", ID: string(k.Kind), Why: `want "agent" or "multi_agent"`}
	}
	return ValidateID(string(k.Kind), k.ID)
}

// ValidateID rejects ids that could escape a folder or a file name (SPEC
// S2): empty, ".", "..", or containing '/', '\', NUL or other control
// characters, and ids longer than 255 bytes.
func ValidateID(what, id string) error {
	switch {
	case id == "":
		return &IDError{What: what, ID: id, Why: "empty"}
	case id == "." || id == "..":
		return &IDError{What: what, ID: id, Why: "a path element"}
	case len(id) > 255:
		return &IDError{What: what, ID: id[:32] + "...", Why: "longer than 255 bytes"}
	case strings.ContainsAny(id, `/\`):
		return &IDError{What: what, ID: id, Why: "contains a path separator"}
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return &IDError{What: what, ID: id, Why: "contains a control character"}
		}
	}
	return nil
}

// Record is what a store keeps for one owner.
//
// Data is the owner's state (for an agent: its key/value state, interrupt
// state and pending work) as one JSON object. Messages are the owner's
// history, one JSON message each, kept apart so that appending a message
// does not rewrite the others.
type Record struct {
	Key           Key
	SchemaVersion int
	// Version is assigned by the store: 1 for the first save, +1 per save.
	Version   int64
	UpdatedAt time.Time
	Data      json.RawMessage
	Messages  []json.RawMessage
}

// SaveOptions tell a store how to save.
type SaveOptions struct {
	// Base is the version the save is based on: 0 to create the record (it
	// must not exist), else the version last loaded or saved. A stored
	// version that differs fails the save with a *ConflictError.
	Base int64
	// Unchanged says the first Unchanged messages are the same as those of
	// the Base version, so only the rest need writing. 0 rewrites them all.
	Unchanged int
	// Durable marks a durable point (SPEC I9): the save, and every save
	// before it, must survive a machine crash before Save returns (fsync,
	// synchronous commit). Without it a save is still atomic, and survives
	// the process being killed. The file store writes its full layout only
	// at durable saves and keeps the others in its journal.
	Durable bool
	// NoSync, with Durable, leaves out the waits that make the save survive a
	// machine crash (fsync, synchronous commit), and keeps the rest of what a
	// durable save does. For tests and benchmarks.
	NoSync bool
}

// Checkpointer is implemented by stores whose durable saves do more than the
// others (the file store writes out its journal). At a durable point with
// nothing new to save, the session manager calls Checkpoint instead of Save:
// the record keeps its version and reaches its durable form (with sync, on
// disk, like a durable save; without, like one with NoSync).
type Checkpointer interface {
	Checkpoint(ctx context.Context, key Key, sync bool) error
}

// Store keeps records. Implementations must be safe for concurrent use, by
// several goroutines and, for stores that share data between processes, by
// several processes: the Base check and the write are one atomic step.
type Store interface {
	// Load returns the record, or an error matching ErrNotFound. Stored data
	// that cannot be read gives a *DamageError.
	Load(ctx context.Context, key Key) (*Record, error)
	// Save writes rec (its Key, SchemaVersion, Data and Messages) if the
	// stored version equals opts.Base, and returns the new version. On any
	// error nothing has changed.
	Save(ctx context.Context, rec *Record, opts SaveOptions) (int64, error)
	// Delete removes the record; deleting a missing record is not an error.
	Delete(ctx context.Context, key Key) error
	// Close releases the store's resources.
	Close() error
}
