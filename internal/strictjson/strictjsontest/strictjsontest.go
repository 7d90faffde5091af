// Package strictjsontest holds what the tests of the hand-written JSON
// forms share: encoding/json as the reference they must equal, mutations
// of stored texts, and the differential check of a strict decoder against
// the reflective strict decoding it replaces.
package strictjsontest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/braidhq/braid/internal/strictjson"
)

// Reference encodes v with encoding/json as Braid stores JSON: HTML
// escaping off, no trailing newline.
func Reference(v any) ([]byte, error) { return strictjson.Marshal(v) }

// SameJSON reports whether stored and again are the same JSON value, the
// comparison of the reflective strict decoding: the same bytes, or the same
// value read generically (numbers as written).
func SameJSON(stored, again []byte) bool {
	if bytes.Equal(stored, again) {
		return true
	}
	a, aerr := generic(stored)
	b, berr := generic(again)
	return aerr == nil && berr == nil && reflect.DeepEqual(a, b)
}

func generic(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// RepeatsAKey reports whether some object in b has a key twice.
func RepeatsAKey(b []byte) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	var walk func() bool
	walk = func() bool {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return false
				}
				key, _ := k.(string)
				if seen[key] {
					return true
				}
				seen[key] = true
				if walk() {
					return true
				}
			}
			_, _ = d.Token()
		case json.Delim('['):
			for d.More() {
				if walk() {
					return true
				}
			}
			_, _ = d.Token()
		}
		return false
	}
	return walk()
}

// Mutations returns b with single bit flips, truncations, and each of the
// replacements (old, new) applied once: the damage a stored text can take.
func Mutations(r *rand.Rand, b []byte, replacements [][2]string) [][]byte {
	out := [][]byte{b}
	for range 6 {
		if len(b) == 0 {
			break
		}
		c := bytes.Clone(b)
		c[r.IntN(len(c))] ^= 1 << r.IntN(8)
		out = append(out, c)
	}
	for range 2 {
		out = append(out, b[:r.IntN(len(b)+1)])
	}
	for _, rep := range replacements {
		out = append(out, bytes.Replace(b, []byte(rep[0]), []byte(rep[1]), 1))
	}
	return out
}

// Differential checks a strict decoder (parse) against the reflective
// strict decoding (reference) on raw: both accept it and read equal
// values, or both refuse it; parse may also refuse a text that repeats a
// key in an object, which the reflective decoding accepts inside the
// values its type keeps opaque (json.RawMessage).
func Differential[T any](t testing.TB, raw []byte, reference, parse func([]byte) (T, error), equal func(want, got T) bool) {
	t.Helper()
	want, werr := reference(raw)
	got, gerr := parse(raw)
	switch {
	case werr == nil && gerr == nil:
		if !equal(want, got) {
			t.Fatalf("%q: read %#v, the reflective decoding read %#v", raw, got, want)
		}
	case werr != nil && gerr == nil:
		t.Fatalf("%q: accepted, the reflective strict decoding refuses it: %v", raw, werr)
	case werr == nil && gerr != nil && !RepeatsAKey(raw):
		t.Fatalf("%q: refused (%v), the reflective strict decoding accepts it", raw, gerr)
	}
}
