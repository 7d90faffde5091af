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
// ErrNotFound; a damaged record is its *DamageError, whether the store
// finds the damage or CheckRecord does (data or a message that the
// session manager would refuse to load).
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
		if err := CheckRecord(r.Key, r.Data, r.Messages); err != nil {
			return nil, err
		}
		msgs := r.Messages
		if msgs == nil {
			msgs = []json.RawMessage{}
		}
		out.Records[i] = RecordExport{Kind: r.Key.Kind, ID: r.Key.ID, SchemaVersion: r.SchemaVersion,
			Version: r.Version, UpdatedAt: r.UpdatedAt, Data: r.Data, Messages: msgs}
	}
	return out, nil
}

// CheckRecord reads the data and messages of key's record strictly, the
// way the session manager reads them when it loads the record (SPEC S5),
// and returns a *DamageError naming key and the part ("data", "message 3")
// that it would refuse; nil when the record would load.
//
// An agent's record (KindAgent) gets the checks of
// SessionManager.OpenAgent: its data in the stored form ("state" and
// "interrupts" required, no unknown key, interrupt.ParseState's form for
// the interrupts), naming no other session or owner than key, and each
// message read by model.ParseMessage and valid. An orchestrator's record
// (KindMultiAgent), whose form the actors package reads and checks when it
// restores a run, is checked here for the session and owner its data
// names only.
func CheckRecord(key Key, data json.RawMessage, messages []json.RawMessage) error {
	if key.Kind != KindAgent {
		var names struct{ Session, Owner string }
		if json.Unmarshal(data, &names) == nil {
			if err := key.CheckOwner(names.Session, names.Owner); err != nil {
				return Damaged(key, "data", "%v", err)
			}
		}
		return nil
	}
	_, err := readAgentRecord(key, data, messages)
	return err
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
// is written. Versions start again at 1, in new incarnations. Records of
// another schema version are refused as damage, and so are records that
// CheckRecord refuses: data or a message that the session manager would
// refuse to load, or data that names another session or owner than the
// export puts it under (an export edited to another session id or record
// id, SPEC S5). Nothing is written then. A nil exp is ErrBadSave.
func Import(ctx context.Context, store Store, exp *SessionExport) error {
	changes, err := exportChanges(exp)
	if err != nil {
		return err
	}
	_, err = store.Save(ctx, SaveOptions{Durable: true}, changes...)
	return err
}

// CheckExport makes the checks Import makes before it writes, without a
// store: ids (ErrBadID), schema versions, each record's data and messages
// (CheckRecord) and JSON (a *DamageError naming it). An export it passes
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
	if exp == nil {
		return nil, fmt.Errorf("%w: no export", ErrBadSave)
	}
	changes := make([]Change, len(exp.Records))
	for i, r := range exp.Records {
		key := Key{SessionID: exp.SessionID, Kind: r.Kind, ID: r.ID}
		// The ids first (ErrBadID, SPEC S2): a record whose key a store
		// cannot keep is refused as such, whatever its data holds.
		if err := key.Validate(); err != nil {
			return nil, err
		}
		if r.SchemaVersion != SchemaVersion {
			return nil, SchemaDamage(key, "export", r.SchemaVersion)
		}
		if err := CheckRecord(key, r.Data, r.Messages); err != nil {
			return nil, err
		}
		c := Change{Key: key, Data: compact(r.Data), Messages: make([]json.RawMessage, len(r.Messages)), Incarnation: NewIncarnation()}
		for j, m := range r.Messages {
			c.Messages[j] = compact(m)
		}
		changes[i] = c
	}
	return changes, nil
}
