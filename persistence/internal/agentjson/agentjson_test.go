package agentjson_test

// The stored form of an agent's data against encoding/json
// (SPEC S5): appendAgentData writes byte for byte what encoding/json
// writes for agentjson.Data with HTML escaping off, and agentjson.Parse accepts
// exactly what the reflective strict decoding (DecodeExact) accepts, with
// the same value, except that it may also refuse a key repeated inside a
// value that DecodeExact keeps opaque.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/strictjson"
	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/agentjson"
)

var dataStrings = []string{"k", "<b>&", "q\"\\", "nl\n", "bad\xff", "\u2028", "日本", ""}

func genAgentData(r *rand.Rand) agentjson.Data {
	s := func() string { return dataStrings[r.IntN(len(dataStrings))] }
	d := agentjson.Data{State: map[string]json.RawMessage{}, Interrupts: interrupt.NewState()}
	if r.IntN(3) > 0 {
		d.Session, d.Owner = s(), s()
	}
	for range r.IntN(4) {
		d.State[s()] = []json.RawMessage{nil, json.RawMessage(`["move_files"]`), json.RawMessage(` { "a" : 1 } `),
			json.RawMessage(`"x<"`), json.RawMessage(`null`), json.RawMessage(`{"x\ny":{"\u0062":1}}`)}[r.IntN(6)]
	}
	for i := range r.IntN(3) {
		d.Interrupts.Register(interrupt.Interrupt{ID: fmt.Sprintf("i%d%s", i, s()), Name: s(),
			Reason: json.RawMessage(`{"paths":["a.txt"]}`), Source: interrupt.SourceHook})
	}
	if r.IntN(2) == 0 {
		d.Interrupts.Activate()
	}
	if r.IntN(2) == 0 {
		d.Pending = json.RawMessage(`{"kind":"tools", "assistantMessage":{"role":"assistant","content":[]},"completedToolResults":[]}`)
	}
	if r.IntN(2) == 0 {
		n := []int{0, 1, 7, 120, -3, 1 << 40}
		d.Usage = &model.Usage{InputTokens: n[r.IntN(len(n))], OutputTokens: n[r.IntN(len(n))], TotalTokens: n[r.IntN(len(n))]}
	}
	return d
}

func TestAppendAgentData_WritesWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		d := genAgentData(r)
		want, err := strictjson.Marshal(d)
		require.NoError(t, err)
		got, err := agentjson.Append([]byte("p"), d)
		require.NoError(t, err)
		require.Equal(t, "p"+string(want), string(got))
	}
	bad := agentjson.Data{State: map[string]json.RawMessage{"a": json.RawMessage(`{`)}, Interrupts: interrupt.NewState()}
	out, err := agentjson.Append([]byte("p"), bad)
	assert.Error(t, err)
	assert.Equal(t, "p", string(out))
}

func checkAgentDataParse(t *testing.T, raw []byte) {
	t.Helper()
	old := func(raw []byte) (agentjson.Data, error) {
		var d agentjson.Data
		return d, persistence.DecodeExact(raw, &d)
	}
	strictjsontest.Differential(t, raw, old, agentjson.Parse, func(want, got agentjson.Data) bool {
		return want.Session == got.Session && want.Owner == got.Owner &&
			reflect.DeepEqual(want.State, got.State) && bytes.Equal(want.Pending, got.Pending) &&
			reflect.DeepEqual(want.Usage, got.Usage) &&
			(want.Interrupts == nil) == (got.Interrupts == nil) &&
			(want.Interrupts == nil || (reflect.DeepEqual(want.Interrupts.All(), got.Interrupts.All()) &&
				want.Interrupts.Activated() == got.Interrupts.Activated()))
	})
}

func TestParseAgentData_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	reps := [][2]string{{`"state"`, `"State"`}, {`"interrupts":`, `"interrupts":null,"i":`}, {`"state":`, `"state":null,"s":`},
		{`"pending":`, `"pending":null,"p":`}, {`,"pending":`, `,"pending":1,"pending":`}, {`{"state":{`, `{"state":{"k":1,`},
		{`"activated":`, `"activated":null,"a":`}, {`"state":{}`, `"state":[]`}, {`"interrupts":{`, ` "interrupts" : {`},
		{`"session":`, `"session":null,"x":`}, {`"owner":"`, `"owner":"","o":"`}, {`"owner":`, `"owner":1,"owner":`},
		{`"session":"`, `"Session":"`}, {`{"state"`, `{"owner":"","state"`}, {`{"state"`, `{"session":null,"state"`},
		{`"usage":{`, `"usage":null,"u":{`}, {`"inputTokens":`, `"InputTokens":`}, {`"outputTokens":`, `"outputTokens":1.0,"o":`},
		{`"totalTokens":`, `"totalTokens":-0,"t":`}, {`"inputTokens":`, `"inputTokens":"1","i":`}, {`,"totalTokens":`, `,"totalTokens":1,"totalTokens":`},
		{`"totalTokens":`, `"totalTokens":99999999999999999999,"t":`}, {`"usage":{`, `"usage":{"cacheTokens":1,`},
		{`"usage":{"inputTokens":`, `"usage":{"inputTokens": 1e0,"i":`}, {`{"state"`, `{"usage":{},"state"`}}
	for range 1500 {
		b, err := agentjson.Append(nil, genAgentData(r))
		require.NoError(t, err)
		for _, x := range strictjsontest.Mutations(r, b, reps) {
			checkAgentDataParse(t, x)
		}
	}
}

// A state key with escapes keeps its value when the value has keys with
// escapes of its own (the reader reuses its buffer for such keys).
func TestParseAgentData_EscapedStateKeysKeepTheirValues(t *testing.T) {
	interrupts := `,"interrupts":{"activated":false,"interrupts":[]}}`
	for _, raw := range []string{
		`{"state":{"\u0061":{"\u0062":1}}` + interrupts,
		`{"state":{"\u0061":{"\u0062":1},"b":2}` + interrupts,
		`{"state":{"tab\tkey":{"x\ny":1}}` + interrupts,
	} {
		checkAgentDataParse(t, []byte(raw))
	}
	d, err := agentjson.Parse([]byte(`{"state":{"tab\tkey":{"x\ny":1}}` + interrupts))
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{"tab\tkey": json.RawMessage(`{"x\ny":1}`)}, d.State)
}

func FuzzParseAgentData_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		if b, err := agentjson.Append(nil, genAgentData(r)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAgentDataParse(t, raw) })
}

// interruptedData is an agent's data as the b4 cycle stores it at its
// interrupt: a state key, one interrupt with a reason, the pending tool
// cycle.
func interruptedData(b *testing.B) agentjson.Data {
	st := interrupt.NewState()
	st.Register(interrupt.Interrupt{ID: "v1:before_tool_call:t1:6c1f", Name: "myapp-approval",
		Reason: json.RawMessage(`{"paths":["a.txt","b.txt"]}`), Source: interrupt.SourceHook})
	st.Activate()
	pending := json.RawMessage(`{"kind":"tools","assistantMessage":{"role":"assistant","content":[{"text":"I will delete them."},` +
		`{"toolUse":{"toolUseId":"t1","name":"delete_files","input":{"paths":["a.txt","b.txt"]}}}]},"completedToolResults":[]}`)
	return agentjson.Data{State: map[string]json.RawMessage{"trust": json.RawMessage(`["move_files"]`)}, Interrupts: st, Pending: pending}
}

// BenchmarkAgentData compares the hand-written form of an agent's data with
// encoding/json's reflection on the same value: encoding it, and reading it
// strictly.
func BenchmarkAgentData(b *testing.B) {
	d := interruptedData(b)
	raw, err := agentjson.Append(nil, d)
	require.NoError(b, err)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := agentjson.Append(nil, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := strictjson.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := agentjson.Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x agentjson.Data
			if err := persistence.DecodeExact(raw, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
