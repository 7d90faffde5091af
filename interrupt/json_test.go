package interrupt_test

// The hand-written JSON form of interrupt state (interrupt/json.go)
// against encoding/json, the reference it must equal (SPEC S5): AppendJSON
// writes byte for byte what encoding/json writes through reflection, and
// ParseState accepts exactly what the reflective strict decoding accepts,
// with the same state, except that it also refuses a key repeated in an
// object.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/interrupt"
)

type (
	refState struct {
		Activated  bool           `json:"activated"`
		Interrupts []refInterrupt `json:"interrupts"`
	}
	refInterrupt struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Reason   json.RawMessage `json:"reason,omitempty"`
		Response json.RawMessage `json:"response,omitempty"`
		Source   string          `json:"source"`
	}
)

var refEncode = strictjsontest.Reference

func refOf(s *interrupt.State) refState {
	out := refState{Activated: s.Activated(), Interrupts: []refInterrupt{}}
	for _, in := range s.All() {
		ri := refInterrupt{ID: in.ID, Name: in.Name, Reason: in.Reason, Source: string(in.Source)}
		if in.Answered {
			ri.Response = in.Response.Raw()
		}
		out.Interrupts = append(out.Interrupts, ri)
	}
	return out
}

var tricky = []string{"ok", "<b>&amp;</b>", "quote\" back\\slash", "ctl\x00\x1f\t\n", "bad\xff", "\u2028", "日本 🎉"}

var raws = []json.RawMessage{nil, json.RawMessage(`{"paths":["a.txt"]}`), json.RawMessage(` [ 1 , "x<" ] `), json.RawMessage(`null`),
	json.RawMessage(`"y"`), json.RawMessage(`1e3`)}

// genState writes a random state in the wire form, through encoding/json.
func genState(r *rand.Rand) []byte {
	w := refState{Activated: r.IntN(2) == 0, Interrupts: []refInterrupt{}}
	n := r.IntN(4)
	if r.IntN(8) == 0 {
		n = 12 // past the index threshold
	}
	for i := range n {
		w.Interrupts = append(w.Interrupts, refInterrupt{
			ID: fmt.Sprintf("id-%d-%s", i, tricky[r.IntN(len(tricky))]), Name: tricky[r.IntN(len(tricky))],
			Reason: raws[r.IntN(len(raws))], Response: raws[r.IntN(len(raws))],
			Source: []string{"tool", "hook", "multiagent-hook"}[r.IntN(3)],
		})
	}
	b, _ := refEncode(w) // every value above encodes
	return b
}

func TestStateAppendJSON_WritesWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var s interrupt.State
		require.NoError(t, json.Unmarshal(genState(r), &s))
		want, err := refEncode(refOf(&s))
		require.NoError(t, err)
		got, err := s.AppendJSON([]byte("p"))
		require.NoError(t, err)
		require.Equal(t, "p"+string(want), string(got))
	}
	var empty interrupt.State
	got, err := empty.AppendJSON(nil)
	require.NoError(t, err)
	assert.Equal(t, `{"activated":false,"interrupts":[]}`, string(got))

	var bad interrupt.State
	bad.Register(interrupt.Interrupt{ID: "a", Name: "n", Reason: json.RawMessage(`{"x":`), Source: interrupt.SourceHook})
	out, err := bad.AppendJSON([]byte("p"))
	assert.Error(t, err, "a reason that is not JSON is refused")
	assert.Equal(t, "p", string(out))
}

// oldStrict is the reflective strict decoding ParseState replaces.
func oldStrict(raw []byte) (*interrupt.State, error) {
	var s interrupt.State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	again, err := refEncode(refOf(&s))
	if err != nil {
		return nil, err
	}
	if !strictjsontest.SameJSON(raw, again) {
		return nil, errors.New("does not read back")
	}
	return &s, nil
}

func checkParse(t *testing.T, raw []byte) {
	t.Helper()
	strictjsontest.Differential(t, raw, oldStrict, interrupt.ParseState, func(a, b *interrupt.State) bool {
		return a.Activated() == b.Activated() && reflect.DeepEqual(a.All(), b.All())
	})
}

// stateDamage renames, drops, repeats and nulls keys of stored state.
var stateDamage = [][2]string{{`"activated"`, `"Activated"`}, {`"interrupts":[`, `"interrupts":null,"x":[`},
	{`"source":"hook"`, `"source":"hooks"`}, {`,"source":"tool"`, ``}, {`"name":`, `"name":null,"n":`},
	{`"id":`, `"id":"dup","id":`}, {`"reason":`, `"reason":null,"r":`}, {`"response":`, `"response":null,"z":`},
	{`"activated":false`, `"activated":null`}, {`,"interrupts":[]`, ``}, {`"name":`, ` "name" : `}}

func TestParseState_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1500 {
		for _, x := range strictjsontest.Mutations(r, genState(r), stateDamage) {
			checkParse(t, x)
		}
	}
	for _, raw := range []string{`{"activated":true,"interrupts":[{"id":"a","name":"n","source":"hook"},{"id":"a","name":"m","source":"hook"}]}`,
		`{"activated":true,"interrupts":[{"id":"","name":"n","source":"hook"}]}`, `{"activated":true}`, `{"interrupts":[]}`,
		`{"activated":true,"interrupts":[{"id":"a","name":"n"}]}`, ` {"interrupts":[],"activated":false} `} {
		checkParse(t, []byte(raw))
	}
	for _, id := range []string{`""`, `null`} {
		_, err := interrupt.ParseState([]byte(`{"activated":true,"interrupts":[{"id":` + id + `,"name":"n","source":"hook"}]}`))
		assert.ErrorIs(t, err, interrupt.ErrEmptyID, id)
	}
	for _, n := range []int{9997, 9998} {
		deep := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkParse(t, []byte(`{"activated":false,"interrupts":[{"id":"a","name":"b","source":"hook","reason":`+deep+`}]}`))
	}
	_, err := interrupt.ParseState([]byte(`{"activated":true,"interrupts":[],"x":1}`))
	assert.ErrorContains(t, err, `unknown key "x"`)
}

func FuzzParseState_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		f.Add(genState(r))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkParse(t, raw) })
}

func TestParseState_ReadStateWorksAsLoaded(t *testing.T) {
	raw := []byte(`{"activated":true,"interrupts":[{"id":"a","name":"approve","reason":{"p":1},"source":"hook"},` +
		`{"id":"b","name":"n","response":"y","source":"tool"}]}`)
	s, err := interrupt.ParseState(raw)
	require.NoError(t, err)
	assert.True(t, s.Activated())
	assert.Len(t, s.Unanswered(), 1)
	in, ok := s.Get("b")
	require.True(t, ok)
	v, ok := in.Response.String()
	assert.True(t, ok)
	assert.Equal(t, "y", v)
	again, err := s.AppendJSON(nil)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(again))
}
