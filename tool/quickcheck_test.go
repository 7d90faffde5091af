package tool

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

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

type qtEmb struct {
	E  int               `json:"e"`
	EM map[string][]bool `json:"em,omitempty"`
}

type qtEmbP struct {
	Q string `json:"q,omitempty"`
}

type qtAll struct {
	qtEmb
	*qtEmbP
	T   time.Time                  `json:"t"`
	PP  **int                      `json:"pp"`
	MS  map[string][]int           `json:"ms"`
	Tag string                     `json:"tag" jsonschema:"a described field"`
	F32 float32                    `json:"f32"`
	I   any                        `json:"i,omitempty"`
	MM  map[string]map[string]bool `json:"mm,omitempty"`
	D   time.Duration              `json:"d"`
	PS  *[]*string                 `json:"ps"`
	N   int64                      `json:"n,omitempty"`
}

// docGen makes random JSON values (as encoding/json decodes into any)
// from a set of object keys, numbers and strings.
type docGen struct {
	keys    []string
	numbers []float64
	strings []string
}

func (g docGen) gen(r *rand.Rand, depth int) any {
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
		return g.numbers[r.IntN(len(g.numbers))]
	case 3:
		return g.strings[r.IntN(len(g.strings))]
	case 4:
		return float64(r.IntN(10))
	case 5:
		out := []any{}
		for range r.IntN(3) {
			out = append(out, g.gen(r, depth-1))
		}
		return out
	default:
		out := map[string]any{}
		for range r.IntN(5) {
			out[g.keys[r.IntN(len(g.keys))]] = g.gen(r, depth-1)
		}
		return out
	}
}

// mutate returns v with one random change somewhere inside it.
func (g docGen) mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k, e := range x {
			c[k] = e
			keys = append(keys, k)
		}
		switch {
		case len(keys) > 0 && r.IntN(3) == 0:
			delete(c, keys[r.IntN(len(keys))])
		case len(keys) > 0 && r.IntN(2) == 0:
			k := keys[r.IntN(len(keys))]
			c[k] = g.mutate(r, c[k])
		default:
			c[g.keys[r.IntN(len(g.keys))]] = g.gen(r, 2)
		}
		return c
	case []any:
		if len(x) == 0 {
			return []any{g.gen(r, 2)}
		}
		c := append([]any(nil), x...)
		i := r.IntN(len(c))
		c[i] = g.mutate(r, c[i])
		return c
	}
	return g.gen(r, 2)
}

// requireAgreement checks that the quick form of schema exists and agrees
// with the schema library on valid (a value of the input type) and on n
// inputs made from it and at random: it never accepts what the library
// refuses (Run trusts it then), and accepts what the library accepts (so
// valid input never pays for the library).
func requireAgreement(t *testing.T, schema *jsonschema.Schema, valid any, g docGen, n int) {
	t.Helper()
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	lib, err := schema.Resolve(nil)
	require.NoError(t, err)
	q := compileQuick(raw)
	require.NotNil(t, q, "New's schemas have a quick form: %s", raw)
	b, err := json.Marshal(valid)
	require.NoError(t, err)
	var base any
	require.NoError(t, json.Unmarshal(b, &base))
	require.True(t, q.accepts(base), "%s", b)
	require.NoError(t, lib.Validate(base))

	r := rand.New(rand.NewPCG(7, 8))
	accepted := 0
	for i := range n {
		var doc any
		if i%2 == 0 {
			doc = g.mutate(r, base)
			if r.IntN(2) == 0 {
				doc = g.mutate(r, doc)
			}
		} else {
			doc = g.gen(r, 3)
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
	require.Greater(t, accepted, n/40, "enough valid inputs among those tried")
}

// The quick check of a tool's input agrees with the schema library on
// every input tried, valid or not.
func TestQuickCheck_AgreesWithTheSchemaLibrary(t *testing.T) {
	s, err := jsonschema.For[quickAll](schemaOptions())
	require.NoError(t, err)
	valid := quickAll{S: "s", I: 3, B: true, P: &quickInner{N: 1, Tags: []string{"a"}},
		L: []quickInner{{N: 2}}, M: map[string]int{"k": 1}, R: json.RawMessage(`{"any":[1]}`), A: []any{"x"}}
	requireAgreement(t, s, valid, docGen{keys: []string{"s", "i", "f", "b", "p", "l", "m", "r", "a", "n", "tags", "x", "S"},
		numbers: []float64{0, 1, -3, 1.5, 1e300}, strings: []string{"", "x", "7"}}, 40000)
}

// The same for the schemas of time values, pointers to pointers, maps of
// slices, embedded structs, tagged fields, float32 and interface fields.
func TestQuickCheck_AgreesWithTheSchemaLibraryOnMoreTypes(t *testing.T) {
	s, err := jsonschema.For[qtAll](schemaOptions())
	require.NoError(t, err)
	x, str := 3, "s"
	px, sl := &x, []*string{&str, nil}
	valid := qtAll{qtEmb: qtEmb{E: 1, EM: map[string][]bool{"a": {true}}}, qtEmbP: &qtEmbP{Q: "q"},
		T: time.Unix(0, 0), PP: &px, MS: map[string][]int{"a": {1}, "b": nil}, F32: 1.5, I: []any{1},
		MM: map[string]map[string]bool{"a": {"b": true}}, D: 5, PS: &sl, N: 4}
	requireAgreement(t, s, valid, docGen{keys: []string{"e", "em", "q", "t", "pp", "ms", "tag", "f32", "i", "mm", "d", "ps", "n", "x", "E", ""},
		numbers: []float64{0, 1, -3, 1.5, 1e300, -1e308, 9007199254740993, 1e-300, 3.4e39},
		strings: []string{"", "x", "7", "2020-01-01T00:00:00Z"}}, 100000)
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

// Types whose schemas bound values or lengths (unsigned and small integers,
// byte slices, fixed-size arrays) give schemas with no quick form.
func TestQuickCheck_BoundedTypesHaveNoQuickForm(t *testing.T) {
	type bounded struct {
		U   uint   `json:"u"`
		U8  uint8  `json:"u8"`
		I8  int8   `json:"i8"`
		BS  []byte `json:"bs"`
		Arr [2]int `json:"arr"`
	}
	s, err := jsonschema.For[bounded](schemaOptions())
	require.NoError(t, err)
	for name, p := range s.Properties {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		require.Nil(t, compileQuick(raw), "%s: %s", name, raw)
	}
}
