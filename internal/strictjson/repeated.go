package strictjson

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// RepeatedKey reads b as the JSON of a value of type t (what encoding/json
// would decode b into) and returns an error wrapping ErrStrict naming the
// first object that has a key twice, among the objects that t reads:
// structs and maps, at any depth. encoding/json keeps the last of such
// keys without a word; a stored form never repeats one.
//
// Values that t keeps opaque are not looked into: a json.RawMessage and an
// interface value are kept as given (an interrupt's reason may repeat a
// key, and is stored as it came), and a type that decodes itself
// (json.Unmarshaler) checks its own keys. Keys are compared unescaped, so
// "a" and "\u0061" are the same key. Invalid JSON is an error wrapping
// ErrSyntax.
func RepeatedKey(b []byte, t reflect.Type) error {
	return Decode(b, func(r *Reader) error { return repeatedIn(r, t, "value") })
}

func repeatedIn(r *Reader, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer && t != rawMessageType {
		t = t.Elem()
	}
	if r.Null() {
		return nil
	}
	opaque := t == rawMessageType || t.Kind() == reflect.Interface ||
		t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
	switch {
	case opaque:
	case t.Kind() == reflect.Struct:
		fields := jsonFields(t)
		return distinctKeys(r, path, func(key string) (reflect.Type, bool) {
			f, ok := fields[key]
			return f, ok
		})
	case t.Kind() == reflect.Map:
		return distinctKeys(r, path, func(string) (reflect.Type, bool) { return t.Elem(), true })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8:
		i := 0
		return r.Array(func() error {
			err := repeatedIn(r, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			i++
			return err
		})
	}
	_, err := r.Raw()
	return err
}

// distinctKeys reads an object whose keys must differ; member gives the
// type of a key's value (false: a key t does not know, read as it is).
func distinctKeys(r *Reader, path string, member func(key string) (reflect.Type, bool)) error {
	seen := map[string]bool{}
	return r.Object(func(key []byte) error {
		k := string(key)
		if seen[k] {
			return fmt.Errorf("%w: %s: key %q twice", ErrStrict, path, k)
		}
		seen[k] = true
		if t, ok := member(k); ok {
			return repeatedIn(r, t, path+"."+k)
		}
		_, err := r.Raw()
		return err
	})
}

// jsonFields returns the JSON names of t's fields, with their types, as
// encoding/json names them: the tag's name, else the field's; "-" and
// unexported fields left out; an untagged embedded struct's fields
// promoted. A name that encoding/json would match only case-insensitively
// is not listed: such a key is read as it is (DecodeExact's comparison
// refuses it).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		out[cmp.Or(name, f.Name)] = ft
	}
	return out
}
