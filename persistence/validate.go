package persistence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/braidhq/braid/internal/strictjson"
)

// MaxValueSize is the longest a record's data, and each of its messages,
// may be, in bytes (256 MiB): well within what every store keeps in one
// value and sends in one request (SQLite's strings stop short of 10^9
// bytes, PostgreSQL's values and protocol messages at 1 GiB). Stores that
// write several messages in one statement keep each statement's values
// within it too, where the messages allow.
const MaxValueSize = 256 << 20

// CheckSave validates a save's arguments the same way for every store;
// stores call it before any I/O, so bad input is refused alike everywhere
// (ErrBadID, ErrBadSave, ErrTooLarge, or a *DamageError naming "record
// to save").
func CheckSave(changes []Change) error {
	if len(changes) == 0 {
		return fmt.Errorf("%w: no changes", ErrBadSave)
	}
	seen := make(map[Key]bool, len(changes))
	for i, c := range changes {
		if err := c.Key.Validate(); err != nil {
			return err
		}
		if c.Key.SessionID != changes[0].Key.SessionID {
			return fmt.Errorf("%w: change %d is of session %q, change 0 of %q: one save is one session",
				ErrBadSave, i, c.Key.SessionID, changes[0].Key.SessionID)
		}
		if seen[c.Key] {
			return fmt.Errorf("%w: %s changed twice in one save", ErrBadSave, c.Key)
		}
		seen[c.Key] = true
		if c.Base < 0 || c.From < 0 {
			return fmt.Errorf("%w: %s: Base and From must be >= 0", ErrBadSave, c.Key)
		}
		if c.Base == math.MaxInt64 {
			return fmt.Errorf("%w: %s: Base %d is the largest version: no save can follow it", ErrBadSave, c.Key, c.Base)
		}
		if c.Base == 0 && c.From != 0 {
			return fmt.Errorf("%w: %s: a new record keeps no messages (From %d)", ErrBadSave, c.Key, c.From)
		}
		if len(c.Data) > MaxValueSize {
			return fmt.Errorf("%w: %w: %s: data of %d bytes, more than %d", ErrBadSave, ErrTooLarge, c.Key, len(c.Data), MaxValueSize)
		}
		for j, m := range c.Messages {
			if len(m) > MaxValueSize {
				return fmt.Errorf("%w: %w: %s: message %d of %d bytes, more than %d", ErrBadSave, ErrTooLarge, c.Key, c.From+j, len(m), MaxValueSize)
			}
		}
		if !validObject(c.Data) {
			return Damaged(c.Key, "record to save", "data is not a JSON object in UTF-8")
		}
		for j, m := range c.Messages {
			if !validObject(m) {
				return Damaged(c.Key, "record to save", "message %d is not a JSON object in UTF-8", c.From+j)
			}
		}
	}
	return nil
}

// validObject reports whether b is one JSON object in valid UTF-8, which
// every store can keep as text.
func validObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && utf8.Valid(b) && strictjson.Valid(b)
}

// DecodeExact decodes raw into v strictly (SPEC S5): raw must be valid JSON
// that v's type reads whole, with no unknown, missing, mistyped or
// repeated field. It checks this by encoding v again and comparing the
// two JSON values, so any field the type would drop, rename or invent
// makes it fail, and by refusing a key twice in any object v's type reads
// (values it keeps as json.RawMessage are opaque: see
// strictjson.RepeatedKey). The error does not match ErrDamaged; callers
// wrap it in a *DamageError.
func DecodeExact(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	again, err := strictjson.Marshal(v)
	if err != nil {
		return err
	}
	if bytes.Equal(again, raw) {
		return nil // as this build writes it (no key twice): the common case, and cheap
	}
	if err := strictjson.RepeatedKey(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	a, err := genericJSON(raw)
	if err != nil {
		return err
	}
	b, err := genericJSON(again)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("does not read back as written (a renamed, missing or extra field): stored %s, read %s",
			clip(raw), clip(again))
	}
	return nil
}

func genericJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func clip(b []byte) string {
	const n = 120
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// badVersion returns the *DamageError for a stored version that no save
// writes: below 1, or the largest, which no save can follow (SPEC S5).
func badVersion(key Key, version int64) *DamageError {
	return Damaged(key, "record", "version %d is not one a save writes (1 to %d)", version, int64(math.MaxInt64-1))
}

// CheckStored checks the version of a record a save finds stored, before
// the save's own checks: one no save writes is damage, and the save
// writes nothing over it (SPEC S5). Stores call it with the stored
// version of a record that exists.
func CheckStored(key Key, version int64) error {
	if version < 1 || version == math.MaxInt64 {
		return badVersion(key, version)
	}
	return nil
}

// CheckLoaded checks a record as a store read it: its key (one a save
// writes: a row copied by hand under another kind or id may not be), its
// schema version, its version (1 to MaxInt64-1), and that its data and
// messages are JSON objects. Stores call it before returning a record, so
// damage is reported alike everywhere.
func CheckLoaded(rec *Record) error {
	if err := rec.Key.Validate(); err != nil {
		return Damaged(rec.Key, "record", "stored under a key no save writes: %v", err)
	}
	if rec.SchemaVersion != SchemaVersion {
		return SchemaDamage(rec.Key, "record", rec.SchemaVersion)
	}
	if rec.Version < 1 || rec.Version == math.MaxInt64 {
		return badVersion(rec.Key, rec.Version)
	}
	if !validObject(rec.Data) {
		return Damaged(rec.Key, "data", "not a JSON object: %s", clip(rec.Data))
	}
	for i, m := range rec.Messages {
		if !validObject(m) {
			return Damaged(rec.Key, fmt.Sprintf("message %d", i), "not a JSON object: %s", clip(m))
		}
	}
	return nil
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
