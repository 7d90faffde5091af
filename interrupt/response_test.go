package interrupt

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readLines returns the non-empty lines of a testdata file. The files are
// made by testdata/gen_responses.js (node, JSON.stringify) and
// testdata/gen_responses.py (python3, json.dumps).
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

// plainBlock is the resume list decoded with encoding/json alone, to check
// ParseResponses against.
type plainBlock struct {
	InterruptResponse struct {
		InterruptID string `json:"interruptId"`
		Response    any    `json:"response"`
	} `json:"interruptResponse"`
}

func decodePlain(t *testing.T, line string) []plainBlock {
	t.Helper()
	var blocks []plainBlock
	require.NoError(t, json.Unmarshal([]byte(line), &blocks))
	return blocks
}

func decodeAny(t *testing.T, v Value) any {
	t.Helper()
	var out any
	require.NoError(t, v.Decode(&out))
	return out
}

// caseID names a golden line by the id of its first response.
func caseID(t *testing.T, line string) string {
	t.Helper()
	return decodePlain(t, line)[0].InterruptResponse.InterruptID
}

func TestParseResponses_JavaScriptClientBytesRoundTripExactly(t *testing.T) {
	// SPEC I6
	for _, line := range readLines(t, "js_responses.jsonl") {
		t.Run(caseID(t, line), func(t *testing.T) {
			rs, err := ParseResponses([]byte(line))
			require.NoError(t, err)

			plain := decodePlain(t, line)
			require.Len(t, rs, len(plain))
			for i, r := range rs {
				assert.Equal(t, plain[i].InterruptResponse.InterruptID, r.ID)
				assert.True(t, r.Value.Valid())
				assert.Equal(t, plain[i].InterruptResponse.Response, decodeAny(t, r.Value))
			}

			out, err := MarshalResponses(rs)
			require.NoError(t, err)
			assert.Equal(t, line, string(out))
		})
	}
}

func TestParseResponses_AcceptsPythonClientBytes(t *testing.T) {
	// SPEC I6: json.dumps default output: spaces and \uXXXX escapes.
	jsLines := readLines(t, "js_responses.jsonl")
	pyLines := readLines(t, "py_responses.jsonl")
	require.Len(t, pyLines, len(jsLines))
	for i, py := range pyLines {
		js := jsLines[i]
		id := caseID(t, js)
		t.Run(id, func(t *testing.T) {
			require.NotEqual(t, js, py, "the Python form differs from the JavaScript one")
			rs, err := ParseResponses([]byte(py))
			require.NoError(t, err)
			want, err := ParseResponses([]byte(js))
			require.NoError(t, err)
			require.Len(t, rs, len(want))
			for j := range rs {
				assert.Equal(t, want[j].ID, rs[j].ID)
				assert.Equal(t, decodeAny(t, want[j].Value), decodeAny(t, rs[j].Value))
			}

			out, err := MarshalResponses(rs)
			require.NoError(t, err)
			if strings.HasPrefix(id, "num:") {
				// Number text is kept as sent: Python prints 1.5e-07.
				assert.Equal(t, strings.Replace(js, "1.5e-7", "1.5e-07", 1), string(out))
				return
			}
			assert.Equal(t, js, string(out), "printed as JSON.stringify prints it")
		})
	}
}

func TestMarshalResponses_GoAnswersPrintAsJSONStringify(t *testing.T) {
	// SPEC I6
	skip := map[string]string{
		"str:lone-surrogate": "a Go string cannot hold a lone surrogate",
		"object":             "Go maps sort keys; JavaScript keeps insertion order",
		"object:key-order":   "Go maps sort keys; JavaScript keeps insertion order",
		"object:odd-keys":    "Go maps sort keys; JavaScript keeps insertion order",
	}
	for _, line := range readLines(t, "js_responses.jsonl") {
		id := caseID(t, line)
		if _, ok := skip[id]; ok {
			continue
		}
		t.Run(id, func(t *testing.T) {
			var rs []Response
			for _, b := range decodePlain(t, line) {
				rs = append(rs, Respond(b.InterruptResponse.InterruptID, b.InterruptResponse.Response))
			}
			out, err := MarshalResponses(rs)
			require.NoError(t, err)
			assert.Equal(t, line, string(out))
		})
	}
}

func TestMarshalResponses_EscapesStringsAsJSONStringify(t *testing.T) {
	// SPEC I6: expected outputs checked with node's JSON.stringify.
	tests := []struct {
		name string
		raw  string // the answer as stored
		want string // the answer as printed
	}{
		{"upper-case hex escape", `"caf\u00E9"`, `"café"`},
		{"escaped slash", `"a\/b"`, `"a/b"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"lone high surrogate", `"\uD800x"`, `"\ud800x"`},
		{"lone low surrogate", `"\udfff"`, `"\udfff"`},
		{"reversed pair", `"\udc00\ud800"`, `"\udc00\ud800"`},
		{"high surrogate then BMP escape", `"\ud800\u0041"`, `"\ud800A"`},
		{"line separators", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"control escapes", `"\u0008\u000C\u000A\u000D\u0009\u001F\u0000"`, `"\b\f\n\r\t\u001f\u0000"`},
		{"short escapes kept", `"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
		{"escaped quote and backslash", `"\u0022\u005c"`, `"\"\\"`},
		{"DEL printed raw", `"\u007f"`, "\"\x7f\""},
		{"HTML kept", `"\u003c\u0026\u003e"`, `"<&>"`},
		{"object keys too", `{"k\u00e9":["\u00e9",{"\u2028":1}]}`, "{\"ké\":[\"é\",{\"\u2028\":1}]}"},
		{"numbers untouched", `[1.0,1E+2,-0,1e-07]`, `[1.0,1E+2,-0,1e-07]`},
		{"literals untouched", `[true,false,null]`, `[true,false,null]`},
		{"invalid UTF-8 becomes U+FFFD", "\"a\xffb\"", "\"a\ufffdb\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := JSON([]byte(tt.raw))
			require.NoError(t, err)
			out, err := MarshalResponses([]Response{{ID: "i", Value: v}})
			require.NoError(t, err)
			assert.Equal(t, `[{"interruptResponse":{"interruptId":"i","response":`+tt.want+`}}]`, string(out))
		})
	}
}

func TestMarshalResponses_EscapesIDAsJSONStringify(t *testing.T) {
	// SPEC I6
	out, err := MarshalResponses([]Response{Respond("a\x01\x7f\u2028\"\\<\xff", 1)})
	require.NoError(t, err)
	assert.Equal(t, "[{\"interruptResponse\":{\"interruptId\":\"a\\u0001\x7f\u2028\\\"\\\\<\ufffd\",\"response\":1}}]", string(out))
}

func TestParseResponses_AnswersOfEveryJSONKind(t *testing.T) {
	// SPEC I1, I6
	tests := []struct {
		name string
		json string
	}{
		{"string", `"yes"`},
		{"empty string", `""`},
		{"integer", `42`},
		{"negative float", `-0.5`},
		{"exponent", `1e+21`},
		{"object", `{"approved":true,"reason":null}`},
		{"empty object", `{}`},
		{"array", `[1,"a",null]`},
		{"empty array", `[]`},
		{"true", `true`},
		{"false", `false`},
		{"null", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `[{"interruptResponse":{"interruptId":"i","response":` + tt.json + `}}]`
			rs, err := ParseResponses([]byte(in))
			require.NoError(t, err)
			require.Len(t, rs, 1)
			assert.Equal(t, "i", rs[0].ID)
			assert.True(t, rs[0].Value.Valid(), "every JSON value is an answer")
			assert.Equal(t, tt.json, string(rs[0].Value.Raw()))
			assert.Equal(t, tt.json == "null", rs[0].Value.IsNull())
			out, err := MarshalResponses(rs)
			require.NoError(t, err)
			assert.Equal(t, in, string(out))
		})
	}
}

func TestParseResponses_PythonEscapesDecode(t *testing.T) {
	// SPEC I6
	in := `[{"interruptResponse": {"interruptId": "v1:tool_call:t1:78714d6c-613c-5cf4-bf25-7037569941f9", ` +
		`"response": {"approved": true, "note": "caf\u00e9 \ud83d\ude00 <ok> & \"q\"\n"}}}]`
	rs, err := ParseResponses([]byte(in))
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, ToolCallID("t1", "test_name"), rs[0].ID)
	var got struct {
		Approved bool   `json:"approved"`
		Note     string `json:"note"`
	}
	require.NoError(t, rs[0].Value.Decode(&got))
	assert.True(t, got.Approved)
	assert.Equal(t, "café 😀 <ok> & \"q\"\n", got.Note)
}

func TestParseResponses_KeepsGivenOrder(t *testing.T) {
	// SPEC I6: responses may come in any order.
	in := `[{"interruptResponse":{"interruptId":"` + idC + `","response":3}},` +
		`{"interruptResponse":{"interruptId":"` + idA + `","response":1}}]`
	rs, err := ParseResponses([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, []string{idC, idA}, []string{rs[0].ID, rs[1].ID})

	st := interruptedState(t)
	require.NoError(t, st.Resume(rs))
	assert.Empty(t, st.Unanswered())
	a, _ := st.Get(idA)
	assert.Equal(t, `1`, string(a.Response.Raw()))
	assert.Equal(t, []string{idA, idB, idC}, ids(st.All()), "raise order is kept")
}

func TestParseResponses_ToleratesTypeKey(t *testing.T) {
	// SPEC I6: older TypeScript clients add "type".
	in := `[{"type":"interruptResponseContent","interruptResponse":{"interruptId":"i","response":"y"}},` +
		`{"interruptResponse":{"interruptId":"j","response":"n"},"type":"interruptResponseContent"}]`
	rs, err := ParseResponses([]byte(in))
	require.NoError(t, err)
	require.Len(t, rs, 2)
	out, err := MarshalResponses(rs)
	require.NoError(t, err)
	assert.Equal(t, `[{"interruptResponse":{"interruptId":"i","response":"y"}},{"interruptResponse":{"interruptId":"j","response":"n"}}]`, string(out))
}

func TestParseResponses_EmptyListParses(t *testing.T) {
	// SPEC I7: rejected by State.Resume, not by the parser.
	rs, err := ParseResponses([]byte(`[]`))
	require.NoError(t, err)
	assert.Empty(t, rs)
	assert.ErrorIs(t, interruptedState(t).Resume(rs), ErrEmptyResume)
}

func TestParseResponses_BlockWithoutResponseParses(t *testing.T) {
	// SPEC I6, I7
	rs, err := ParseResponses([]byte(`[{"interruptResponse":{"interruptId":"i"}}]`))
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "i", rs[0].ID)
	assert.False(t, rs[0].Value.Valid())

	_, err = MarshalResponses(rs)
	assert.ErrorIs(t, err, ErrMissingResponse)
}

func TestParseResponses_RejectsMixedInput(t *testing.T) {
	// SPEC I7
	tests := []struct {
		name      string
		in        string
		wantTypes []string
		wantMsg   string
	}{
		{"text only", `[{"text":"hi"}]`, []string{"text"}, "element 0"},
		{"text after a response", `[{"interruptResponse":{"interruptId":"i","response":1}},{"text":"hi"}]`, []string{"text"}, "element 1"},
		{"several kinds, listed sorted", `[{"text":"hi","image":{},"document":{}}]`, []string{"document", "image", "text"}, "content_types=<document,image,text>"},
		{"Strands typed text block", `[{"type":"textContent","text":"hi"}]`, []string{"text", "type"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseResponses([]byte(tt.in))
			require.Error(t, err)
			assert.Nil(t, rs)
			assert.ErrorIs(t, err, ErrMixedInput)
			assert.NotErrorIs(t, err, ErrResumeRequired)
			var ce *ContentError
			require.ErrorAs(t, err, &ce)
			assert.True(t, ce.Mixed)
			assert.Equal(t, tt.wantTypes, ce.Types)
			assert.Contains(t, err.Error(), "resume with interrupt responses only")
			if tt.wantMsg != "" {
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestParseResponses_RejectsMalformedInput(t *testing.T) {
	// SPEC I6, I7
	tests := []struct {
		name    string
		in      string
		wantIs  error // or nil
		wantMsg string
	}{
		{"missing interruptId", `[{"interruptResponse":{"response":"y"}}]`, ErrEmptyID, "element 0"},
		{"empty interruptId", `[{"interruptResponse":{"interruptId":"","response":"y"}}]`, ErrEmptyID, ""},
		{"missing id in second element", `[{"interruptResponse":{"interruptId":"i","response":1}},{"interruptResponse":{"response":2}}]`, ErrEmptyID, "element 1"},
		{"null body", `[{"interruptResponse":null}]`, ErrEmptyID, ""},
		{"numeric id", `[{"interruptResponse":{"interruptId":7,"response":"y"}}]`, nil, "interruptResponse"},
		{"body not an object", `[{"interruptResponse":"i"}]`, nil, "interruptResponse"},
		{"extra key beside the block", `[{"interruptResponse":{"interruptId":"i","response":1},"text":"hi"}]`, nil, `unexpected key "text"`},
		{"other type value", `[{"type":"textContent","interruptResponse":{"interruptId":"i","response":1}}]`, nil, `unexpected key "type"`},
		{"object, not a list", `{"interruptResponse":{"interruptId":"i","response":1}}`, nil, "want a JSON list"},
		{"string", `"approve"`, nil, "want a JSON list"},
		{"not JSON", `[{"interruptResponse":`, nil, "want a JSON list"},
		{"empty input", ``, nil, "want a JSON list"},
		{"null element", `[null]`, ErrMixedInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseResponses([]byte(tt.in))
			require.Error(t, err)
			assert.Nil(t, rs)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			if tt.wantMsg != "" {
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestMarshalResponses_RejectsUnusableResponses(t *testing.T) {
	// SPEC I7
	tests := []struct {
		name   string
		rs     []Response
		wantIs error
		wantID string
	}{
		{"unencodable answer", []Response{Respond("ok", 1), Respond("bad", make(chan int))}, ErrAnswer, "bad"},
		{"NaN answer", []Response{Respond("bad", math.NaN())}, ErrAnswer, "bad"},
		{"no answer", []Response{{ID: "none"}}, ErrMissingResponse, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := MarshalResponses(tt.rs)
			assert.Nil(t, out)
			assert.ErrorIs(t, err, tt.wantIs)
			var idErr *IDError
			require.ErrorAs(t, err, &idErr)
			assert.Equal(t, tt.wantID, idErr.ID)
		})
	}
}

func TestMarshalResponses_EmptyList(t *testing.T) {
	out, err := MarshalResponses(nil)
	require.NoError(t, err)
	assert.Equal(t, `[]`, string(out))
}

func TestRespond_ErrReportsUnencodableAnswer(t *testing.T) {
	// SPEC I7
	assert.NoError(t, Respond("i", nil).Err())
	assert.True(t, Respond("i", nil).Value.IsNull(), "nil answers JSON null")

	err := Respond("i", func() {}).Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrAnswer)
	var idErr *IDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, "i", idErr.ID)
	assert.Contains(t, err.Error(), "interrupt_id=<i>")
}

func TestResponse_JSONMethods(t *testing.T) {
	// SPEC I6
	r := Respond("v1:x", map[string]string{"note": "<ok>"})
	b, err := r.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"interruptResponse":{"interruptId":"v1:x","response":{"note":"<ok>"}}}`, string(b))

	var got Response
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "v1:x", got.ID)
	assert.Equal(t, `{"note":"<ok>"}`, string(got.Value.Raw()))

	var list []Response
	require.NoError(t, json.Unmarshal([]byte(`[{"interruptResponse":{"interruptId":"a","response":null}},{"interruptResponse":{"interruptId":"b","response":2}}]`), &list))
	require.Len(t, list, 2)
	assert.True(t, list[0].Value.IsNull())
	assert.Equal(t, "b", list[1].ID)

	assert.ErrorIs(t, json.Unmarshal([]byte(`{"text":"hi"}`), &got), ErrMixedInput)
	_, err = Response{ID: "none"}.MarshalJSON()
	assert.ErrorIs(t, err, ErrMissingResponse)
}

func TestParseResponseBlock(t *testing.T) {
	// SPEC I6
	r, err := ParseResponseBlock([]byte(`{"interruptId":"i","response":[1, 2]}`))
	require.NoError(t, err)
	assert.Equal(t, "i", r.ID)
	assert.Equal(t, `[1,2]`, string(r.Value.Raw()))

	r, err = ParseResponseBlock([]byte(`{"interruptId":"i","response":null}`))
	require.NoError(t, err)
	assert.True(t, r.Value.IsNull(), "null is an answer, not a missing response")

	_, err = ParseResponseBlock([]byte(`{"response":1}`))
	assert.ErrorIs(t, err, ErrEmptyID)
}

func TestIsResponseBlock(t *testing.T) {
	// SPEC I7
	tests := []struct {
		obj  string
		want bool
	}{
		{`{"interruptResponse":{"interruptId":"i","response":1}}`, true},
		{`{"interruptResponse":null}`, true},
		{`{"text":"hi"}`, false},
		{`{}`, false},
	}
	for _, tt := range tests {
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(tt.obj), &obj))
		assert.Equal(t, tt.want, IsResponseBlock(obj), tt.obj)
	}
}
