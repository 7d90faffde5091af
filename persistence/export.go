package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// SessionExport is one session as person-readable JSON: what
// `braid session export` prints and Import reads back.
type SessionExport struct {
	SessionID string         `json:"sessionId"`
	Records   []RecordExport `json:"records"`
}

// RecordExport is one record of a SessionExport.
type RecordExport struct {
	Kind          Kind              `json:"kind"`
	ID            string            `json:"id"`
	SchemaVersion int               `json:"schemaVersion"`
	Version       int64             `json:"version"`
	UpdatedAt     time.Time         `json:"updatedAt"`
	Data          json.RawMessage   `json:"data"`
	Messages      []json.RawMessage `json:"messages"`
}

// Export reads every record of a session. A session with no record is
// ErrNotFound; a damaged record is its *DamageError.
func Export(ctx context.Context, store Store, sessionID string) (*SessionExport, error) {
	recs, err := store.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("session %q: %w", sessionID, ErrNotFound)
	}
	out := &SessionExport{SessionID: sessionID, Records: make([]RecordExport, len(recs))}
	for i, r := range recs {
		msgs := r.Messages
		if msgs == nil {
			msgs = []json.RawMessage{}
		}
		out.Records[i] = RecordExport{Kind: r.Key.Kind, ID: r.Key.ID, SchemaVersion: r.SchemaVersion,
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

// Import writes an exported session into store as new records, in one save:
// a record that exists already fails it with a *ConflictError, and nothing
// is written. Versions start again at 1, in new incarnations. Records of another schema version
// are refused as damage, and so are records whose data names another
// session or owner than the export puts them under (an export edited to
// another session id or record id, SPEC S5): nothing is written.
func Import(ctx context.Context, store Store, exp *SessionExport) error {
	changes, err := exportChanges(exp)
	if err != nil {
		return err
	}
	_, err = store.Save(ctx, SaveOptions{Durable: true}, changes...)
	return err
}

// CheckExport makes the checks Import makes before it writes, without a
// store: ids (ErrBadID), schema versions, records that name another key,
// and each record's JSON (a *DamageError naming it). An export it passes
// may still conflict with what a store holds.
func CheckExport(exp *SessionExport) error {
	changes, err := exportChanges(exp)
	if err != nil {
		return err
	}
	return CheckSave(changes) // what the store checks first
}

// exportChanges returns the changes that write exp as new records, after
// checking their schema versions and the keys their data names (the
// store's Save checks the rest).
func exportChanges(exp *SessionExport) ([]Change, error) {
	changes := make([]Change, len(exp.Records))
	for i, r := range exp.Records {
		key := Key{SessionID: exp.SessionID, Kind: r.Kind, ID: r.ID}
		if r.SchemaVersion != SchemaVersion {
			return nil, SchemaDamage(key, "export", r.SchemaVersion)
		}
		var names struct{ Session, Owner string }
		if json.Unmarshal(r.Data, &names) == nil {
			if err := key.CheckOwner(names.Session, names.Owner); err != nil {
				return nil, Damaged(key, "export", "%v", err)
			}
		}
		c := Change{Key: key, Data: compact(r.Data), Messages: make([]json.RawMessage, len(r.Messages)), Incarnation: NewIncarnation()}
		for j, m := range r.Messages {
			c.Messages[j] = compact(m)
		}
		changes[i] = c
	}
	return changes, nil
}
