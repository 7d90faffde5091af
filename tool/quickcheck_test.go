package tool

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
)

type quickInner struct {
	N    int      `json:"n"`
	Tags []string `json:"tags,omitempty"`
}

type quickAll struct {
	S string          `json:"s"`
	I int             `json:"i"`
	F float64         `json:"f,omitempty"`
	B bool            `json:"b"`
	P *quickInner     `json:"p,omitempty"`
	L []quickInner    `json:"l"`
	M map[string]int  `json:"m,omitempty"`
	R json.RawMessage `json:"r,omitempty"`
	A any             `json:"a,omitempty"`
}

var quickKeys = []string{"s", "i", "f", "b", "p", "l", "m", "r", "a", "n", "tags", "x", "S"}

// genJSON returns a random value as encoding/json decodes into any.
func genJSON(r *rand.Rand, depth int) any {
	n := 7
	if depth <= 0 {
		n = 5
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []float64{0, 1, -3, 1.5, 1e300}[r.IntN(5)]
	case 3:
		return []string{"", "x", "7"}[r.IntN(3)]
	case 4:
		return float64(r.IntN(10))
	case 5:
		out := []any{}
		for range r.IntN(3) {
			out = append(out, genJSON(r, depth-1))
		}
		return out
	default:
		out := map[string]any{}
		for range r.IntN(5) {
			out[quickKeys[r.IntN(len(quickKeys))]] = genJSON(r, depth-1)
		}
		return out
	}
}

// mutate returns v with one random change somewhere inside it.
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = e
		}
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		switch {
		case len(keys) > 0 && r.IntN(3) == 0:
			delete(c, keys[r.IntN(len(keys))])
		case len(keys) > 0 && r.IntN(2) == 0:
			k := keys[r.IntN(len(keys))]
			c[k] = mutate(r, c[k])
		default:
			c[quickKeys[r.IntN(len(quickKeys))]] = genJSON(r, 2)
		}
		return c
	case []any:
		if len(x) == 0 {
			return []any{genJSON(r, 2)}
		}
		c := append([]any(nil), x...)
		i := r.IntN(len(c))
		c[i] = mutate(r, c[i])
		return c
	}
	return genJSON(r, 2)
}

// The quick check of a tool's input agrees with the schema library on
// every input, valid or not: it never accepts what the library refuses
// (Run trusts it then), and accepts what the library accepts (so valid
// input never pays for the library).
func TestQuickCheck_AgreesWithTheSchemaLibrary(t *testing.T) {
	s, err := jsonschema.For[quickAll](schemaOptions())
	require.NoError(t, err)
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	lib, err := s.Resolve(nil)
	require.NoError(t, err)
	q := compileQuick(raw)
	require.NotNil(t, q, "New's schemas have a quick form: %s", raw)

	valid, err := json.Marshal(quickAll{S: "s", I: 3, B: true, P: &quickInner{N: 1, Tags: []string{"a"}},
		L: []quickInner{{N: 2}}, M: map[string]int{"k": 1}, R: json.RawMessage(`{"any":[1]}`), A: []any{"x"}})
	require.NoError(t, err)
	var base any
	require.NoError(t, json.Unmarshal(valid, &base))
	require.True(t, q.accepts(base))
	require.NoError(t, lib.Validate(base))

	r := rand.New(rand.NewPCG(7, 8))
	accepted := 0
	for i := range 40000 {
		var doc any
		if i%2 == 0 {
			doc = mutate(r, base)
			if r.IntN(2) == 0 {
				doc = mutate(r, doc)
			}
		} else {
			doc = genJSON(r, 3)
		}
		libOK := lib.Validate(doc) == nil
		if libOK {
			accepted++
		}
		if q.accepts(doc) != libOK {
			b, _ := json.Marshal(doc)
			t.Fatalf("quick %v, library %v on %s", !libOK, libOK, b)
		}
	}
	require.Greater(t, accepted, 1000, "enough valid inputs among those tried")
}

// A schema with a keyword the quick check does not know has no quick
// form: Run then asks the library alone.
func TestQuickCheck_UnknownKeywordsHaveNoQuickForm(t *testing.T) {
	for _, raw := range []string{`{"type":"object","enum":[{}]}`, `{"$ref":"#/$defs/x"}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1}}}`, `{"type":7}`,
		`{"items":1}`, `{"additionalProperties":1}`} {
		require.Nil(t, compileQuick(json.RawMessage(raw)), raw)
	}
	require.NotNil(t, compileQuick(json.RawMessage(`{"type":["null","array"],"items":{"type":"string"},"description":"d"}`)))
	require.NotNil(t, compileQuick(json.RawMessage(`{"properties":{"a":true,"b":false},"items":true}`)))
}
