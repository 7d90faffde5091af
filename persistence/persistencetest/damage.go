package persistencetest

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// Edits are damage a stored record's texts take, each a replacement of
// the first old by new: ones that encoding/json alone would read (renamed,
// case-changed and repeated keys), so every one must be refused.
type Edits struct {
	Data     [][2]string // of the record's data
	Messages [][2]string // of each of its messages
}

// OnlyRecord returns the key of the one record of kind in the session,
// and fails t if there is none or more than one.
func OnlyRecord(t *testing.T, st persistence.Store, sessionID string, kind persistence.Kind) persistence.Key {
	t.Helper()
	recs, err := st.Session(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("session %q: %v", sessionID, err)
	}
	var keys []persistence.Key
	for _, r := range recs {
		if r.Key.Kind == kind {
			keys = append(keys, r.Key)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("session %q: want one %s record, have %v", sessionID, kind, keys)
	}
	return keys[0]
}

// RecordDamage checks SPEC S5 on one stored record of a Store: for
// the record's data and each of its messages in turn, each edit, and bit
// flips and truncations, load (which builds the record's owner afresh and
// reads it) must return a *persistence.DamageError naming key, an error
// that other accepts, or, for bit flips and truncations only, no error (a
// text that still reads as a record). Never a panic, never an error of
// another kind. The record is restored afterwards, and must load again.
func RecordDamage(t *testing.T, st *memory.Store, key persistence.Key, load func() error, edits Edits, other func(error) bool) {
	t.Helper()
	var orig *persistence.Record
	if !st.Tamper(key, func(r *persistence.Record) { orig = cloneRecord(r) }) {
		t.Fatalf("no record %s", key)
	}
	if err := load(); err != nil {
		t.Fatalf("the record as written does not load: %v", err)
	}
	put := func(part int, text []byte) {
		st.Tamper(key, func(r *persistence.Record) {
			c := cloneRecord(orig)
			if part < 0 {
				c.Data = text
			} else {
				c.Messages[part] = text
			}
			*r = *c
		})
	}
	check := func(part int, text []byte, mustFail bool) {
		t.Helper()
		put(part, text)
		err := load()
		var de *persistence.DamageError
		switch {
		case err == nil:
			if mustFail {
				t.Fatalf("part %d loaded: %s", part, text)
			}
		case errors.As(err, &de):
			if de.Key != key {
				t.Fatalf("part %d: %s: a DamageError naming %s, not %s", part, text, de.Key, key)
			}
		case other != nil && other(err):
		default:
			t.Fatalf("part %d: %q: not a DamageError: %v", part, text, err)
		}
	}
	rnd := rand.New(rand.NewPCG(9, 9))
	used := map[[2]string]bool{}
	for part := -1; part < len(orig.Messages); part++ {
		text, list := []byte(orig.Data), edits.Data
		if part >= 0 {
			text, list = orig.Messages[part], edits.Messages
		}
		for _, e := range list {
			if strings.Contains(string(text), e[0]) {
				used[e] = true
				check(part, []byte(strings.Replace(string(text), e[0], e[1], 1)), true)
			}
		}
		for _, m := range strictjsontest.Mutations(rnd, text, nil)[1:] {
			check(part, m, false)
		}
	}
	for _, e := range append(edits.Data, edits.Messages...) {
		if !used[e] {
			t.Fatalf("edit %q applies to no part of the record", e)
		}
	}
	put(-1, orig.Data)
	if err := load(); err != nil {
		t.Fatalf("the record restored does not load: %v", err)
	}
}

func cloneRecord(r *persistence.Record) *persistence.Record {
	c := *r
	c.Data = append([]byte(nil), r.Data...)
	c.Messages = make([]json.RawMessage, len(r.Messages))
	for i, m := range r.Messages {
		c.Messages[i] = append(json.RawMessage(nil), m...)
	}
	return &c
}

// CopyRecord stores a copy of the record at from as a new record at to,
// texts unchanged: a record found under a key it was not saved under,
// which its owner must refuse as damage (SPEC S5).
func CopyRecord(t *testing.T, st persistence.Store, from, to persistence.Key) {
	t.Helper()
	ctx := context.Background()
	r, err := st.Load(ctx, from)
	if err != nil || r == nil {
		t.Fatalf("load %s: %v (record: %v)", from, err, r != nil)
	}
	if _, err := st.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: to, Data: r.Data, Messages: r.Messages}); err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
}
