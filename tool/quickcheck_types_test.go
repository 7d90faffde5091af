package tool

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
)

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

var qtKeys = []string{"e", "em", "q", "t", "pp", "ms", "tag", "f32", "i", "mm", "d", "ps", "n", "x", "E", ""}

func qtGen(r *rand.Rand, depth int) any {
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
		return []float64{0, 1, -3, 1.5, 1e300, -1e308, 9007199254740993, 1e-300, 3.4e39}[r.IntN(9)]
	case 3:
		return []string{"", "x", "7", "2020-01-01T00:00:00Z"}[r.IntN(4)]
	case 4:
		return float64(r.IntN(10))
	case 5:
		out := []any{}
		for range r.IntN(3) {
			out = append(out, qtGen(r, depth-1))
		}
		return out
	default:
		out := map[string]any{}
		for range r.IntN(5) {
			out[qtKeys[r.IntN(len(qtKeys))]] = qtGen(r, depth-1)
		}
		return out
	}
}

func qtMutate(r *rand.Rand, v any) any {
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
			c[k] = qtMutate(r, c[k])
		default:
			c[qtKeys[r.IntN(len(qtKeys))]] = qtGen(r, 2)
		}
		return c
	case []any:
		if len(x) == 0 {
			return []any{qtGen(r, 2)}
		}
		c := append([]any(nil), x...)
		i := r.IntN(len(c))
		c[i] = qtMutate(r, c[i])
		return c
	}
	return qtGen(r, 2)
}

// The quick check agrees with the schema library for the schemas of time
// values, pointers to pointers, maps of slices, embedded structs, tagged
// fields, float32 and interface fields.
func TestQuickCheck_AgreesWithTheSchemaLibraryOnMoreTypes(t *testing.T) {
	s, err := jsonschema.For[qtAll](schemaOptions())
	require.NoError(t, err)
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	lib, err := s.Resolve(nil)
	require.NoError(t, err)
	q := compileQuick(raw)
	require.NotNil(t, q, "%s", raw)
	x, str := 3, "s"
	px, sl := &x, []*string{&str, nil}
	valid, err := json.Marshal(qtAll{qtEmb: qtEmb{E: 1, EM: map[string][]bool{"a": {true}}}, qtEmbP: &qtEmbP{Q: "q"},
		T: time.Unix(0, 0), PP: &px, MS: map[string][]int{"a": {1}, "b": nil}, F32: 1.5, I: []any{1},
		MM: map[string]map[string]bool{"a": {"b": true}}, D: 5, PS: &sl, N: 4})
	require.NoError(t, err)
	var base any
	require.NoError(t, json.Unmarshal(valid, &base))
	require.True(t, q.accepts(base), "%s", valid)
	require.NoError(t, lib.Validate(base))
	r := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for i := range 100000 {
		var doc any
		if i%2 == 0 {
			doc = qtMutate(r, base)
			if r.IntN(2) == 0 {
				doc = qtMutate(r, doc)
			}
		} else {
			doc = qtGen(r, 3)
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
	require.Greater(t, accepted, 1000)
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
