package interrupt

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustValue(t *testing.T, v any) Value {
	t.Helper()
	val, err := ValueOf(v)
	require.NoError(t, err)
	return val
}

func TestValue_ZeroIsNotAnAnswer(t *testing.T) {
	// SPEC I1: "no answer" is never a nil value.
	var v Value
	assert.False(t, v.Valid())
	assert.False(t, v.IsNull())
	assert.Nil(t, v.Raw())
	_, ok := v.String()
	assert.False(t, ok)
	var dst any
	assert.ErrorIs(t, v.Decode(&dst), ErrNoAnswer)
}

func TestValueOf_EncodesEveryJSONKind(t *testing.T) {
	// SPEC I1
	type approval struct {
		OK   bool   `json:"ok"`
		Note string `json:"note,omitempty"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil is JSON null", nil, `null`},
		{"string", "yes", `"yes"`},
		{"HTML characters not escaped", "<a> & <b>", `"<a> & <b>"`},
		{"int", 42, `42`},
		{"float", 2.5, `2.5`},
		{"false", false, `false`},
		{"true", true, `true`},
		{"map", map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{"slice", []any{1, "two", nil}, `[1,"two",null]`},
		{"struct", approval{OK: true}, `{"ok":true}`},
		{"raw message is compacted", json.RawMessage(` { "a" : [ 1 , 2 ] } `), `{"a":[1,2]}`},
		{"raw null", json.RawMessage(`null`), `null`},
		{"Value passes through", Value{raw: json.RawMessage(`"v"`)}, `"v"`},
		{"*Value passes through", &Value{raw: json.RawMessage(`[true]`)}, `[true]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ValueOf(tt.in)
			require.NoError(t, err)
			assert.True(t, v.Valid())
			assert.Equal(t, tt.want, string(v.Raw()))
		})
	}
}

func TestValueOf_RejectsUnencodable(t *testing.T) {
	// SPEC I3, I7
	tests := []struct {
		name string
		in   any
	}{
		{"channel", make(chan int)},
		{"func", func() {}},
		{"infinity", math.Inf(1)},
		{"NaN", math.NaN()},
		{"map with channel", map[string]any{"c": make(chan int)}},
		{"invalid raw message", json.RawMessage(`{"a":`)},
		{"nil raw message", json.RawMessage(nil)},
		{"zero Value", Value{}},
		{"nil *Value", (*Value)(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ValueOf(tt.in)
			assert.Error(t, err)
			assert.False(t, v.Valid())
		})
	}
}

func TestJSON_CompactsAndValidates(t *testing.T) {
	v, err := JSON([]byte("{\n  \"a\": \"x y\",\n  \"b\": [ 1, null ]\n}"))
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x y","b":[1,null]}`, string(v.Raw()))

	for _, bad := range []string{``, `{`, `nul`, `1 2`, `"unterminated`, `{'a':1}`} {
		_, err := JSON([]byte(bad))
		assert.Error(t, err, "JSON(%q)", bad)
	}
}

func TestValue_String(t *testing.T) {
	tests := []struct {
		raw    string
		want   string
		wantOK bool
	}{
		{`"yes"`, "yes", true},
		{`""`, "", true},
		{`"caf\u00e9 \ud83d\ude00"`, "café 😀", true},
		{`"line\nbreak"`, "line\nbreak", true},
		{`null`, "", false},
		{`42`, "", false},
		{`true`, "", false},
		{`["yes"]`, "", false},
		{`{"s":"yes"}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			v, err := JSON([]byte(tt.raw))
			require.NoError(t, err)
			got, ok := v.String()
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValue_IsNull(t *testing.T) {
	// SPEC I1
	assert.True(t, mustValue(t, nil).IsNull())
	assert.True(t, mustValue(t, json.RawMessage(" null ")).IsNull())
	assert.False(t, mustValue(t, "null").IsNull(), "the string \"null\" is not JSON null")
	assert.False(t, mustValue(t, false).IsNull())
	assert.False(t, mustValue(t, 0).IsNull())
	assert.False(t, Value{}.IsNull(), "the zero Value holds nothing, not null")
}

func TestValue_Decode(t *testing.T) {
	var got struct {
		Approved bool     `json:"approved"`
		Tags     []string `json:"tags"`
	}
	v := mustValue(t, map[string]any{"approved": true, "tags": []string{"a", "b"}})
	require.NoError(t, v.Decode(&got))
	assert.True(t, got.Approved)
	assert.Equal(t, []string{"a", "b"}, got.Tags)

	s := "preset"
	sp := &s
	require.NoError(t, mustValue(t, nil).Decode(&sp))
	assert.Nil(t, sp, "null decodes into a nil pointer")

	var n int
	assert.Error(t, mustValue(t, "x").Decode(&n), "type mismatch is reported")
}

func TestValue_JSONMarshalling(t *testing.T) {
	// SPEC I1
	type holder struct {
		V Value `json:"v"`
	}
	b, err := json.Marshal(holder{V: mustValue(t, map[string]int{"a": 1})})
	require.NoError(t, err)
	assert.Equal(t, `{"v":{"a":1}}`, string(b))

	b, err = json.Marshal(holder{})
	require.NoError(t, err)
	assert.Equal(t, `{"v":null}`, string(b), "zero Value writes null")

	var h holder
	require.NoError(t, json.Unmarshal([]byte(`{"v": [ 1, 2 ]}`), &h))
	assert.Equal(t, `[1,2]`, string(h.V.Raw()), "kept compacted")

	h = holder{}
	require.NoError(t, json.Unmarshal([]byte(`{"v":null}`), &h))
	assert.True(t, h.V.Valid(), "JSON null is a value")
	assert.True(t, h.V.IsNull())

	h = holder{}
	require.NoError(t, json.Unmarshal([]byte(`{}`), &h))
	assert.False(t, h.V.Valid(), "absent stays no answer")
}

// An interrupt's reason and an answer print as JSON with fmt, not as bytes.
func TestValue_PrintsAsJSONText(t *testing.T) {
	v, err := ValueOf(map[string]string{"node": "b"})
	require.NoError(t, err)
	assert.Equal(t, `{"node":"b"}`, fmt.Sprintf("%v", v))
	assert.Equal(t, `{"node":"b"}`, fmt.Sprint(v))
	assert.Equal(t, `"{\"node\":\"b\"}"`, fmt.Sprintf("%q", v))
	in := Interrupt{ID: "i", Name: "approval", Reason: v.Raw(), Source: SourceHook}
	assert.Equal(t, `interrupt i name="approval" source=hook reason={"node":"b"}`, fmt.Sprintf("%v", in))
	in.Response, in.Answered = mustValue(t, "y"), true
	assert.Equal(t, `interrupt i name="approval" source=hook reason={"node":"b"} response="y"`, fmt.Sprint(in))
	assert.Contains(t, fmt.Sprintf("%v", Response{ID: "i", Value: mustValue(t, "y")}), `"y"`)
	assert.Equal(t, "", fmt.Sprint(Value{}))
}

// SPEC I1, I3, I9: JSON text is UTF-8. A reason or an answer given as
// JSON bytes that are not UTF-8 (which encoding/json's checks let through)
// is taken with each such byte as U+FFFD, as encoding/json and
// JSON.stringify write a Go or JavaScript string holding it, so that the
// owner's state can be saved. Before, the bytes were kept as they were,
// and every later save of the owner failed ("damaged session data").
func TestValue_I3_JSONThatIsNotUTF8IsTakenAsEncodingJSONWritesIt(t *testing.T) {
	bad := json.RawMessage("\"y\xff\xfez\"")
	const want = "\"y\ufffd\ufffdz\""
	v, err := JSON(bad)
	require.NoError(t, err)
	assert.Equal(t, want, string(v.Raw()))
	r := Respond("i", bad)
	require.NoError(t, r.Err())
	assert.Equal(t, want, string(r.Value.Raw()))
	rs, err := ParseResponses([]byte("[{\"interruptResponse\":{\"interruptId\":\"i\",\"response\":\"y\xff\xfez\"}}]"))
	require.NoError(t, err)
	assert.Equal(t, want, string(rs[0].Value.Raw()))

	st := NewState()
	scope := NewScope(st, SourceHook, func(name string) string { return "id:" + name })
	_, err = scope.Interrupt("gate", bad)
	require.ErrorIs(t, err, ErrInterrupted)
	in, ok := st.Get("id:gate")
	require.True(t, ok)
	assert.Equal(t, want, string(in.Reason))
	saved, err := json.Marshal(st)
	require.NoError(t, err, "the state can be saved")
	var back State
	require.NoError(t, json.Unmarshal(saved, &back))
}

// rawBytesReason is a json.Marshaler that writes a string holding bytes
// that are not UTF-8, as a marshaler of binary data might.
type rawBytesReason struct{}

func (rawBytesReason) MarshalJSON() ([]byte, error) { return []byte("\"y\xff\xfez\""), nil }

// SPEC I3: a reason or answer that a json.Marshaler encodes with bytes that
// are not UTF-8 is taken as encoding/json writes such a string (each bad
// byte U+FFFD) at the call, as raw JSON is, so what is kept in memory is
// what a session stores and reads back.
func TestValue_I3_MarshalerThatWritesNonUTF8IsTakenAsEncodingJSONWritesIt(t *testing.T) {
	const want = "\"y\ufffd\ufffdz\""
	v, err := ValueOf(rawBytesReason{})
	require.NoError(t, err)
	assert.Equal(t, want, string(v.Raw()))
	r := Respond("i", rawBytesReason{})
	require.NoError(t, r.Err())
	assert.Equal(t, want, string(r.Value.Raw()))

	st := NewState()
	scope := NewScope(st, SourceHook, func(name string) string { return "id:" + name })
	_, err = scope.Interrupt("gate", map[string]any{"k": rawBytesReason{}})
	require.ErrorIs(t, err, ErrInterrupted)
	in, ok := st.Get("id:gate")
	require.True(t, ok)
	assert.Equal(t, `{"k":`+want+`}`, string(in.Reason))
	saved, err := json.Marshal(st)
	require.NoError(t, err)
	assert.True(t, utf8.Valid(saved), "the saved state is UTF-8")
	back, err := ParseState(saved)
	require.NoError(t, err)
	got, _ := back.Get("id:gate")
	assert.Equal(t, in.Reason, got.Reason, "the reason reads back as it was kept")
}
