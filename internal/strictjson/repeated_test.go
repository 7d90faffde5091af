package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

type selfDecoding struct{ v any }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &s.v) }

type inner struct {
	N    int               `json:"n"`
	Tags map[string]string `json:"tags,omitempty"`
}

type embedded struct {
	E int `json:"e"`
}

type outer struct {
	embedded
	ID      string                     `json:"id"`
	Items   []inner                    `json:"items"`
	Ptr     *inner                     `json:"ptr,omitempty"`
	Raw     json.RawMessage            `json:"raw,omitempty"`
	Any     any                        `json:"any,omitempty"`
	Self    selfDecoding               `json:"self"`
	Opaque  map[string]json.RawMessage `json:"opaque,omitempty"`
	Bytes   []byte                     `json:"bytes,omitempty"`
	Skipped int                        `json:"-"`
	Plain   int
}

// SPEC S5: a key twice in an object that the type reads (a struct or a
// map, at any depth, escaped or not) is refused, naming where; opaque
// values (json.RawMessage, interfaces, types that decode themselves) are
// kept as given, repeats included.
func TestRepeatedKey_RefusesARepeatInWhatTheTypeReadsOnly(t *testing.T) {
	typ := reflect.TypeFor[*outer]()
	for _, ok := range []string{
		`{"id":"a","items":[{"n":1},{"n":2}],"e":1,"Plain":2}`,
		`{"raw":{"k":1,"k":2},"any":{"k":1,"k":2},"self":{"k":1,"k":2}}`,
		`{"opaque":{"a":{"k":1,"k":2},"b":[{"k":1,"k":2}]}}`,
		`{"ptr":null,"items":null,"bytes":"AAE=","unknown":{"k":1,"k":2}}`,
		`{"items":[{"n":1,"tags":{"a":"x","b":"y"}}]}`,
	} {
		assert.NoError(t, RepeatedKey([]byte(ok), typ), ok)
	}
	for text, where := range map[string]string{
		`{"id":"a","id":"b"}`:                    `value: key "id" twice`,
		`{"id":"a","\u0069d":"b"}`:               `value: key "id" twice`,
		`{"e":1,"e":2}`:                          `value: key "e" twice`,
		`{"items":[{"n":1},{"n":1,"n":2}]}`:      `value.items[1]: key "n" twice`,
		`{"ptr":{"n":1,"n":1}}`:                  `value.ptr: key "n" twice`,
		`{"items":[{"tags":{"a":"x","a":"y"}}]}`: `value.items[0].tags: key "a" twice`,
		`{"opaque":{"a":1,"a":2}}`:               `value.opaque: key "a" twice`,
		`{"Plain":1,"Plain":1}`:                  `value: key "Plain" twice`,
		`{"unknown":1,"unknown":2}`:              `value: key "unknown" twice`,
	} {
		err := RepeatedKey([]byte(text), typ)
		assert.ErrorIs(t, err, ErrStrict, text)
		assert.ErrorContains(t, err, where, text)
	}
	for _, bad := range []string{`{"id":`, `{"id":"a"} x`, `{"items":[{"n":1,}]}`} {
		err := RepeatedKey([]byte(bad), typ)
		assert.True(t, errors.Is(err, ErrSyntax), "%s: %v", bad, err)
	}
}
