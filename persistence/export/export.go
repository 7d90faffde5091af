package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/braidhq/braid/persistence"
)

// Session is one session as person-readable JSON: what
// `braid session export` prints and Write reads back.
type Session struct {
	SessionID string   `json:"sessionId"`
	Records   []Record `json:"records"`
}

// Record is one record of a Session.
type Record struct {
	Kind          persistence.Kind  `json:"kind"`
	ID            string            `json:"id"`
	SchemaVersion int               `json:"schemaVersion"`
	Version       int64             `json:"version"`
	UpdatedAt     time.Time         `json:"updatedAt"`
	Data          json.RawMessage   `json:"data"`
	Messages      []json.RawMessage `json:"messages"`
}

// Read reads every record of a session. A session with no record is
// persistence.ErrNotFound; a damaged record is its
// *persistence.DamageError, whether the store finds the damage or
// persistence.CheckRecord does (data or a message that the
// session manager would refuse to load).
func Read(ctx context.Context, store persistence.Store, sessionID string) (*Session, error) {
	recs, err := store.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("session %q: %w", sessionID, persistence.ErrNotFound)
	}
	out := &Session{SessionID: sessionID, Records: make([]Record, len(recs))}
	for i, r := range recs {
		if err := persistence.CheckRecord(r.Key, r.Data, r.Messages); err != nil {
			return nil, err
		}
		msgs := r.Messages
		if msgs == nil {
			msgs = []json.RawMessage{}
		}
		out.Records[i] = Record{Kind: r.Key.Kind, ID: r.Key.ID, SchemaVersion: r.SchemaVersion,
			Version: r.Version, UpdatedAt: r.UpdatedAt, Data: r.Data, Messages: msgs}
	}
	return out, nil
}

// compact returns b without insignificant space (an export is indented),
// or b itself when it is not JSON (the store's checks then refuse it).
func compact(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// Write writes an exported session into store as new records, in one save:
// a record that exists already fails it with a *ConflictError, and nothing
// is written. Versions start again at 1, in new incarnations. Records of
// another schema version are refused as damage, and so are records that
// CheckRecord refuses: data or a message that the session manager would
// refuse to load, or data that names another session or owner than the
// export puts it under (an export edited to another session id or record
// id, SPEC S5). Nothing is written then. A nil exp is ErrBadSave.
func Write(ctx context.Context, store persistence.Store, exp *Session) error {
	changes, err := exportChanges(exp)
	if err != nil {
		return err
	}
	_, err = store.Save(ctx, persistence.SaveOptions{Durable: true}, changes...)
	return err
}

// Check makes the checks Write makes before it writes, without a
// store: ids (persistence.ErrBadID), schema versions, each record's data
// and messages (persistence.CheckRecord) and JSON (a
// *persistence.DamageError naming it). An export it passes
// may still conflict with what a store holds.
func Check(exp *Session) error {
	changes, err := exportChanges(exp)
	if err != nil {
		return err
	}
	return persistence.CheckSave(changes) // what the store checks first
}

// exportChanges returns the changes that write exp as new records, after
// checking their schema versions and the keys their data names (the
// store's Save checks the rest).
func exportChanges(exp *Session) ([]persistence.Change, error) {
	if exp == nil {
		return nil, fmt.Errorf("%w: no export", persistence.ErrBadSave)
	}
	changes := make([]persistence.Change, len(exp.Records))
	for i, r := range exp.Records {
		key := persistence.Key{SessionID: exp.SessionID, Kind: r.Kind, ID: r.ID}
		// The ids first (ErrBadID, SPEC S2): a record whose key a store
		// cannot keep is refused as such, whatever its data holds.
		if err := key.Validate(); err != nil {
			return nil, err
		}
		if r.SchemaVersion != persistence.SchemaVersion {
			return nil, persistence.SchemaDamage(key, "export", r.SchemaVersion)
		}
		if err := persistence.CheckRecord(key, r.Data, r.Messages); err != nil {
			return nil, err
		}
		c := persistence.Change{Key: key, Data: compact(r.Data), Messages: make([]json.RawMessage, len(r.Messages)), Incarnation: persistence.NewIncarnation()}
		for j, m := range r.Messages {
			c.Messages[j] = compact(m)
		}
		changes[i] = c
	}
	return changes, nil
}
