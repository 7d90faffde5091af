package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdString is encoding/json's form of s with HTML escaping off.
func stdString(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(s))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// stdRaw is encoding/json's form of raw as a json.RawMessage field value.
func stdRaw(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(json.RawMessage(raw)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "<tag> & amp", "tab\tnl\nret\rbs\bff\f",
	"\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028 line \u2029 para", "bad \xff utf8 \xc3",
	"\xed\xa0\x80 encoded surrogate", "a/b", string([]byte{0xf0, 0x9f, 0x8e}),
}

func TestAppendString_WritesWhatEncodingJSONWrites(t *testing.T) {
	for _, s := range stringCases {
		assert.Equal(t, string(stdString(t, s)), string(AppendString(nil, s)), "%q", s)
	}
}

func FuzzAppendString_WritesWhatEncodingJSONWrites(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := stdString(t, s)
		got := AppendString([]byte("prefix"), s)
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

var rawCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+10`, `1E5`, `"s"`, ` { "a" : [ 1 , 2 ] } `,
	`{"a":"x y"}`, "[\n1,\t2\r]", `{"a":}`, `{"a" 1}`, `[1,]`, `{"a":1,}`, `01`, `-`, `1.`,
	`1e`, `"\u00zz"`, `"\q"`, "\"a\x01\"", `"\ud800"`, `nul`, `{"a":1}x`, `[`, `"`, `{"\u00e9":1}`,
	"\"\xff\"", `{"a":1}{"b":2}`, `  `, `[[[[]]]]`,
}

func TestAppendRaw_WritesWhatEncodingJSONWrites(t *testing.T) {
	for _, c := range rawCases {
		checkRaw(t, []byte(c))
	}
	got, err := AppendRaw(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "null", string(got), "a nil raw value is null")
	_, err = AppendRaw(nil, []byte{})
	assert.ErrorIs(t, err, ErrEmptyRaw)
}

func checkRaw(t *testing.T, raw []byte) {
	t.Helper()
	if len(raw) == 0 {
		return // encoding/json writes an empty RawMessage field as... an error; AppendRaw too (ErrEmptyRaw)
	}
	want, werr := stdRaw(raw)
	got, gerr := AppendRaw([]byte("p"), raw)
	if werr != nil {
		require.Error(t, gerr, "%q: encoding/json refuses it (%v)", raw, werr)
		assert.Equal(t, "p", string(got), "%q: dst unchanged on error", raw)
		return
	}
	require.NoError(t, gerr, "%q", raw)
	assert.Equal(t, "p"+string(want), string(got), "%q", raw)
}

func FuzzAppendRaw_WritesWhatEncodingJSONWrites(f *testing.F) {
	for _, c := range rawCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRaw(t, raw) })
}

// TestReader_ValidatesAsEncodingJSON: Raw accepts a text exactly when
// json.Valid does (the reader's check of stored raw values).
func TestReader_ValidatesAsEncodingJSON(t *testing.T) {
	for _, c := range rawCases {
		checkValid(t, []byte(c))
	}
}

func checkValid(t *testing.T, b []byte) {
	t.Helper()
	err := Decode(b, func(r *Reader) error { _, err := r.Raw(); return err })
	assert.Equal(t, json.Valid(b), Valid(b), "%q", b)
	if json.Valid(b) {
		assert.NoError(t, err, "%q", b)
	} else {
		assert.ErrorIs(t, err, ErrSyntax, "%q", b)
	}
}

func FuzzReader_ValidatesAsEncodingJSON(f *testing.F) {
	for _, c := range rawCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValid(t, b) })
}

func TestReader_NestingIsBoundedAsInEncodingJSON(t *testing.T) {
	deep := func(n int) []byte {
		return append(bytes.Repeat([]byte("["), n), bytes.Repeat([]byte("]"), n)...)
	}
	checkValid(t, deep(maxDepth))
	checkValid(t, deep(maxDepth+1))
	assert.True(t, json.Valid(deep(maxDepth)))
	assert.False(t, json.Valid(deep(maxDepth+1)))
}

// TestReader_UnescapesStringsAsEncodingJSON: String and object keys read
// what json.Unmarshal reads into a string, invalid UTF-8 and lone
// surrogates included.
func TestReader_UnescapesStringsAsEncodingJSON(t *testing.T) {
	texts := []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u65e5\ud83c\udf89"`, `"\ud800"`,
		`"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83c\udf89\ud800x"`, "\"bad \xff\xfe\"", "\"\xe6\x97\"",
		`"\u2028"`, `"\uD83C\uDF89"`, "\"\xed\xa0\x80\""}
	for _, s := range texts {
		checkString(t, []byte(s))
	}
}

func checkString(t *testing.T, b []byte) {
	t.Helper()
	var want string
	werr := json.Unmarshal(b, &want)
	var got string
	gerr := Decode(b, func(r *Reader) (err error) { got, err = r.String(); return err })
	if werr != nil {
		assert.Error(t, gerr, "%q", b)
		return
	}
	require.NoError(t, gerr, "%q", b)
	assert.Equal(t, want, got, "%q", b)
	assert.True(t, utf8.ValidString(got))
	// The same text as an object key.
	obj := append(append([]byte("{"), b...), ":1}"...)
	var m map[string]int
	require.NoError(t, json.Unmarshal(obj, &m))
	var key string
	require.NoError(t, Decode(obj, func(r *Reader) error {
		return r.Object(func(k []byte) error { key = string(k); _, err := r.Raw(); return err })
	}))
	_, ok := m[key]
	assert.True(t, ok, "key %q of %q", key, obj)
}

func FuzzReader_UnescapesStringsAsEncodingJSON(f *testing.F) {
	f.Add(`plain`)
	f.Add(`\ud83c\udf89\ud800x`)
	f.Fuzz(func(t *testing.T, s string) { checkString(t, []byte(`"`+s+`"`)) })
}

func TestReader_RefusesTheWrongKindOfValue(t *testing.T) {
	cases := map[string]func(r *Reader) error{
		`"s"`:  func(r *Reader) error { _, err := r.Bool(); return err },
		`1`:    func(r *Reader) error { _, err := r.String(); return err },
		`[]`:   func(r *Reader) error { return r.Object(func([]byte) error { return nil }) },
		`{}`:   func(r *Reader) error { return r.Array(func() error { return nil }) },
		`nul`:  func(r *Reader) error { _, err := r.Raw(); return err },
		``:     func(r *Reader) error { _, err := r.String(); return err },
		`true`: func(r *Reader) error { _, err := r.String(); return err },
	}
	for text, read := range cases {
		err := Decode([]byte(text), read)
		assert.ErrorIs(t, err, ErrSyntax, "%q", text)
	}
	var inner = errors.New("field refused")
	err := Decode([]byte(`{"a":1}`), func(r *Reader) error {
		return r.Object(func([]byte) error { return inner })
	})
	assert.ErrorIs(t, err, inner, "a field's own error comes back as it is")
	assert.False(t, NewReader([]byte("nul")).Null())
	assert.True(t, NewReader([]byte(" null")).Null())
}
