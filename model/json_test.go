package model_test

// The hand-written JSON form of messages (model/json.go) against
// encoding/json, the reference it must equal (SPEC S5: stored records keep
// their form, and decode strictly):
//   - AppendJSON writes byte for byte what encoding/json writes for the same
//     value through reflection;
//   - ParseMessage accepts exactly what the reflective strict decoding
//     (json.Unmarshal, then encoding again and comparing) accepts, with the
//     same value, except that it also refuses a key repeated in an object.

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/model"
)

// Reference types: the JSON shape of the model types through encoding/json's
// reflection alone (no hand-written methods but the block's choice of form).
type (
	refMessage struct {
		Role    model.Role `json:"role"`
		Content []refBlock `json:"content"`
	}
	refBlock struct{ b model.ContentBlock }
	refWire  struct {
		Text       *string        `json:"text,omitempty"`
		ToolUse    *model.ToolUse `json:"toolUse,omitempty"`
		ToolResult *refToolResult `json:"toolResult,omitempty"`
	}
	refToolResult struct {
		ToolUseID string                    `json:"toolUseId"`
		Status    model.ToolStatus          `json:"status"`
		Content   []model.ToolResultContent `json:"content"`
	}
)

func (b refBlock) MarshalJSON() ([]byte, error) {
	x := b.b
	if x.Text == nil && x.ToolUse == nil && x.ToolResult == nil {
		if x.Other == nil {
			return nil, model.ErrEmptyBlock
		}
		return x.Other, nil
	}
	w := refWire{Text: x.Text, ToolUse: x.ToolUse}
	if x.ToolResult != nil {
		w.ToolResult = refResult(*x.ToolResult)
	}
	return refEncode(w)
}

func refResult(r model.ToolResult) *refToolResult {
	return &refToolResult{ToolUseID: r.ToolUseID, Status: r.Status, Content: r.Content}
}

func refMsg(m model.Message) refMessage {
	out := refMessage{Role: m.Role}
	if m.Content != nil {
		out.Content = make([]refBlock, len(m.Content))
		for i, b := range m.Content {
			out.Content[i] = refBlock{b}
		}
	}
	return out
}

var refEncode = strictjsontest.Reference

var tricky = []string{"", "ok", "<b>&amp;</b>", "quote\" back\\slash", "ctl\x00\x1f\t\n", "bad\xff\xfe", "\u2028\u2029",
	"日本語 🎉", "\xed\xa0\x80", "a/b"}

var rawValues = []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"paths":["a.txt"]}`), json.RawMessage(` { "x" : [1, 2.5e3, null, true] } `),
	json.RawMessage(`"s<>"`), json.RawMessage(`null`), json.RawMessage(`[]`), json.RawMessage(`-0`)}

func genString(r *rand.Rand) string { return tricky[r.IntN(len(tricky))] }

func genRaw(r *rand.Rand) json.RawMessage { return rawValues[r.IntN(len(rawValues))] }

func genResult(r *rand.Rand) model.ToolResult {
	tr := model.ToolResult{ToolUseID: genString(r), Status: model.ToolStatus(genString(r))}
	if r.IntN(5) > 0 {
		tr.Content = []model.ToolResultContent{}
		for range r.IntN(3) {
			var c model.ToolResultContent
			if r.IntN(2) == 0 {
				s := genString(r)
				c.Text = &s
			}
			if r.IntN(2) == 0 {
				c.JSON = genRaw(r)
			}
			tr.Content = append(tr.Content, c)
		}
	}
	return tr
}

func genBlock(r *rand.Rand) model.ContentBlock {
	var b model.ContentBlock
	switch r.IntN(6) {
	case 0:
		s := genString(r)
		b.Text = &s
	case 1:
		b.ToolUse = &model.ToolUse{ToolUseID: genString(r), Name: genString(r), Input: genRaw(r)}
	case 2:
		tr := genResult(r)
		b.ToolResult = &tr
	case 3:
		b.Other = json.RawMessage(`{"image":{"format":"png","source":{"bytes":"AAEC"}}}`)
	case 4:
		b.Other = json.RawMessage(` {"reasoningContent" : {"text":"x y"}} `)
	default: // more than one kind set: both forms write every kind set
		s := genString(r)
		b.Text = &s
		b.ToolUse = &model.ToolUse{ToolUseID: "t", Name: "n", Input: json.RawMessage(`{}`)}
	}
	return b
}

func genMessage(r *rand.Rand) model.Message {
	m := model.Message{Role: model.Role(genString(r))}
	if r.IntN(6) > 0 {
		m.Content = []model.ContentBlock{}
		for range r.IntN(4) {
			m.Content = append(m.Content, genBlock(r))
		}
	}
	return m
}

func TestMessageAppendJSON_WritesWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		m := genMessage(r)
		want, werr := refEncode(refMsg(m))
		got, gerr := m.AppendJSON([]byte("p"))
		if werr != nil {
			require.Error(t, gerr, "case %d: %#v", i, m)
			continue
		}
		require.NoError(t, gerr, "case %d", i)
		require.Equal(t, "p"+string(want), string(got), "case %d", i)
		viaMarshal, err := json.Marshal(m) // MarshalJSON, HTML escaped by encoding/json as before
		require.NoError(t, err)
		wantEscaped, err := json.Marshal(refMsg(m))
		require.NoError(t, err)
		require.Equal(t, string(wantEscaped), string(viaMarshal), "case %d", i)
	}
}

func TestMessageAppendJSON_RefusesWhatEncodingJSONRefuses(t *testing.T) {
	cases := []model.Message{
		{Role: "user", Content: []model.ContentBlock{{}}},
		{Role: "user", Content: []model.ContentBlock{model.ToolUseBlock(model.ToolUse{ToolUseID: "t", Name: "n", Input: json.RawMessage(`{"a":`)})}},
		{Role: "user", Content: []model.ContentBlock{model.ToolUseBlock(model.ToolUse{ToolUseID: "t", Name: "n", Input: json.RawMessage{}})}},
		{Role: "user", Content: []model.ContentBlock{{Other: json.RawMessage(`nope`)}}},
		{Role: "user", Content: []model.ContentBlock{model.ToolResultBlock(model.ToolResult{ToolUseID: "t", Status: "success",
			Content: []model.ToolResultContent{{JSON: json.RawMessage(`{`)}}})}},
	}
	for i, m := range cases {
		_, werr := refEncode(refMsg(m))
		require.Error(t, werr, "case %d", i)
		got, err := m.AppendJSON([]byte("p"))
		assert.Error(t, err, "case %d", i)
		assert.Equal(t, "p", string(got), "case %d: dst unchanged", i)
	}
	_, err := model.Message{Role: "user", Content: []model.ContentBlock{{}}}.AppendJSON(nil)
	assert.ErrorIs(t, err, model.ErrEmptyBlock)
}

// oldStrict is the reflective strict decoding ParseMessage replaces:
// json.Unmarshal, then encoding again and comparing.
func oldStrict(raw []byte) (model.Message, error) {
	var m model.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, err
	}
	again, err := refEncode(refMsg(m))
	if err != nil {
		return m, err
	}
	if !strictjsontest.SameJSON(raw, again) {
		return m, errors.New("does not read back")
	}
	return m, nil
}

// requireReadsBack checks that a written message reads back and is written
// again as it was read (invalid UTF-8 in a string is written as U+FFFD the
// first time, so the second writing is the fixed point).
func requireReadsBack(t *testing.T, b []byte) {
	t.Helper()
	got, err := model.ParseMessage(b)
	require.NoError(t, err, "%s", b)
	again, err := got.AppendJSON(nil)
	require.NoError(t, err)
	got, err = model.ParseMessage(again)
	require.NoError(t, err, "%s", again)
	third, err := got.AppendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, string(again), string(third), "what was read is written again as it was read")
}

func checkParse(t *testing.T, raw []byte) {
	t.Helper()
	strictjsontest.Differential(t, raw, oldStrict, model.ParseMessage, func(a, b model.Message) bool { return reflect.DeepEqual(a, b) })
}

// messageDamage renames, drops, repeats and nulls keys of a stored message.
var messageDamage = [][2]string{{`"role"`, `"Role"`}, {`"content"`, `"messages"`}, {`"toolUseId"`, `"toolUseID"`},
	{`"input":`, `"input":null,"x":`}, {`"status":`, `"status":"error","status":`}, {`"role":`, ` "role" : `},
	{`,"content":null`, ``}, {`"name":`, `"name":null,"y":`}, {`"text":`, `"text":null,"z":`}, {`"json":`, `"text":"a","json":`},
	{`[`, `[ `}, {`"content":[`, `"content":[null,`}, {`{"toolUse":`, `{"toolUse":{},"text":`}}

func TestParseMessage_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		m := genMessage(r)
		b, err := m.AppendJSON(nil)
		if err != nil {
			continue
		}
		requireReadsBack(t, b)
		for _, x := range strictjsontest.Mutations(r, b, messageDamage) {
			checkParse(t, x)
		}
	}
	for _, raw := range []string{`{"role":"user","content":[{"text":"a","text":"b"}]}`, `{"role":"user","content":[null]}`,
		`{"role":"user","content":[{"text":5}]}`, `{"role":"user","content":[{"text":5,"x":1}]}`, `{"role":"user","content":[{}]}`,
		`{"role":"user","content":[{"toolUse":{"toolUseId":"a","name":"b","input":{}},"extra":1}]}`, ` {"content":[],"role":"x"} `,
		`{"role":"user","content":[{"toolResult":{"toolUseId":"a","status":"success","content":[{}]}}]}`} {
		checkParse(t, []byte(raw))
	}
}

// Nesting is bounded over the whole text, as encoding/json bounds it
// (10,000 objects and arrays), raw values inside typed ones included.
func TestParseMessage_BoundsNestingOverTheWholeText(t *testing.T) {
	for _, n := range []int{9996, 9997, 9998, 9999} {
		deep := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkParse(t, []byte(`{"role":"user","content":[{"x":`+deep+`}]}`))
		checkParse(t, []byte(`{"role":"user","content":[{"toolUse":{"toolUseId":"t","name":"n","input":`+deep+`}}]}`))
	}
}

func FuzzParseMessage_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 30 {
		if b, err := genMessage(r).AppendJSON(nil); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkParse(t, raw) })
}

func TestParseToolResult_ReadsWhatAppendJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		tr := genResult(r)
		b, err := tr.AppendJSON(nil)
		require.NoError(t, err)
		want, err := refEncode(refResult(tr))
		require.NoError(t, err)
		require.Equal(t, string(want), string(b))
		got, err := model.ParseToolResult(b)
		require.NoError(t, err)
		again, err := got.AppendJSON(nil)
		require.NoError(t, err)
		got, err = model.ParseToolResult(again)
		require.NoError(t, err)
		third, err := got.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(again), string(third), "what was read is written again as it was read")
	}
	for _, bad := range []string{`{"toolUseId":"a","status":"success"}`, `{"toolUseId":"a","status":"success","content":[],"x":1}`,
		`{"toolUseId":null,"status":"success","content":[]}`, `{"toolUseId":"a","status":"success","content":[{"text":null}]}`, `[]`} {
		_, err := model.ParseToolResult([]byte(bad))
		assert.Error(t, err, bad)
	}
}
