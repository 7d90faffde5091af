package strictjson

import (
	"errors"
	"fmt"
)

// ErrStrict reports that a JSON text is valid but not the stored form a
// strict decoder reads (an unknown, repeated or missing key, null where a
// value is required).
var ErrStrict = errors.New("not the stored form")

// Keys tracks the keys of one object for a strict decoder: Take each key as
// it comes, then Require the ones the form always has. Up to 64 names.
type Keys struct {
	what  string
	names []string
	seen  uint64
}

// NewKeys returns a tracker for an object (named what in errors) whose
// known keys are names; names must not change while it is used.
func NewKeys(what string, names []string) Keys { return Keys{what: what, names: names} }

// Take returns the index of key in names. An unknown key, or one taken
// before, is an error wrapping ErrStrict.
func (k *Keys) Take(key []byte) (int, error) {
	for i, name := range k.names {
		if name == string(key) {
			if k.seen&(1<<i) != 0 {
				return 0, fmt.Errorf("%w: %s: key %q twice", ErrStrict, k.what, key)
			}
			k.seen |= 1 << i
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: %s: unknown key %q", ErrStrict, k.what, key)
}

// Has reports whether the key names[i] was taken.
func (k *Keys) Has(i int) bool { return k.seen&(1<<i) != 0 }

// Require returns an error wrapping ErrStrict naming the first of the keys
// names[i], i in required, that was not taken.
func (k *Keys) Require(required ...int) error {
	for _, i := range required {
		if !k.Has(i) {
			return fmt.Errorf("%w: %s: key %q missing", ErrStrict, k.what, k.names[i])
		}
	}
	return nil
}

// NotNull returns an error wrapping ErrStrict if a null is next (and
// consumes it): for a string or bool the stored form never leaves null.
func (r *Reader) NotNull(what string) error {
	if r.Null() {
		return fmt.Errorf("%w: %s is null", ErrStrict, what)
	}
	return nil
}

// StringNotNull reads a string where the stored form never leaves null
// (what names it in the error).
func (r *Reader) StringNotNull(what string) (string, error) {
	if err := r.NotNull(what); err != nil {
		return "", err
	}
	return r.String()
}

// RawCopy reads any one value like Raw and returns a copy of its text, so
// the decoded value does not share memory with the Reader's input.
func (r *Reader) RawCopy() ([]byte, error) {
	b, err := r.Raw()
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// Fields reads an object whose keys keys tracks: for each member it takes
// the key (an unknown or repeated one is an error) and calls field with its
// index in the names; field reads the value.
func (r *Reader) Fields(keys *Keys, field func(i int) error) error {
	return r.Object(func(key []byte) error {
		i, err := keys.Take(key)
		if err != nil {
			return err
		}
		return field(i)
	})
}
