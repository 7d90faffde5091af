package agent

// The stored form of pending work (pending_json.go) against encoding/json
// (SPEC S5): appendJSON writes byte for byte what encoding/json writes for
// a Pending with HTML escaping off, and parsePending accepts exactly what
// the reflective strict decoding (persistence.DecodeExact) accepts, with
// the same value, except that it may also refuse a key repeated inside a
// value that DecodeExact keeps opaque.

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/strictjson/strictjsontest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

func stdEncode(t testing.TB, v any) []byte {
	b, err := strictjsontest.Reference(v)
	require.NoError(t, err)
	return b
}

var pendingStrings = []string{"t1", "<x> & y", "q\"\\", "nl\n", "bad\xff", "\u2028", "日本"}

func genPending(r *rand.Rand) *Pending {
	s := func() string { return pendingStrings[r.IntN(len(pendingStrings))] }
	p := &Pending{Kind: PendingKind([]string{"tools", "model", s()}[r.IntN(3)])}
	if r.IntN(4) > 0 {
		m := model.Message{Role: model.RoleAssistant, Content: []model.ContentBlock{model.Text(s())}}
		for range 1 + r.IntN(3) {
			m.Content = append(m.Content, model.ToolUseBlock(model.ToolUse{ToolUseID: s(), Name: s(),
				Input: json.RawMessage([]string{`{}`, `{"paths": ["a<b"]}`, `null`}[r.IntN(3)])}))
		}
		p.Message = &m
	}
	if r.IntN(5) > 0 {
		p.Completed = []model.ToolResult{}
		for range r.IntN(3) {
			p.Completed = append(p.Completed, model.TextResult(s(), s()))
		}
	}
	for range r.IntN(3) {
		at := time.Date(2026, 12, 4, 10, r.IntN(60), r.IntN(60), r.IntN(3)*123456789, time.FixedZone("x", r.IntN(3)*3600))
		p.Started = append(p.Started, ToolStart{ToolUseID: s(), StartedAt: at})
	}
	if r.IntN(3) > 0 {
		p.Cycle = s()
	}
	return p
}

func TestPendingAppendJSON_WritesWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		p := genPending(r)
		got, err := p.appendJSON([]byte("p"))
		require.NoError(t, err)
		require.Equal(t, "p"+string(stdEncode(t, p)), string(got))
	}
}

// checkPendingParse compares parsePending with the reflective strict decoding.
func checkPendingParse(t *testing.T, raw []byte) {
	t.Helper()
	old := func(raw []byte) (*Pending, error) {
		var p Pending
		return &p, persistence.DecodeExact(raw, &p)
	}
	strictjsontest.Differential(t, raw, old, parsePending, func(a, b *Pending) bool { return reflect.DeepEqual(a, b) })
}

func TestParsePending_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	reps := [][2]string{{`"kind"`, `"Kind"`}, {`"completedToolResults":`, `"completedToolResults":null,"c":`},
		{`,"startedTools":[`, `,"startedTools":[],"s":[`}, {`"startedAt":"2026-12-04T10:`, `"startedAt":"2026-12-04T10:0`},
		{`"assistantMessage":`, `"assistantMessage":null,"a":`}, {`"toolUseId":`, `"toolUseId":null,"u":`},
		{`Z"`, `.000Z"`}, {`"kind":`, `"kind":"tools","kind":`}, {`,"completedToolResults":null`, ``},
		{`"startedAt":`, ` "startedAt" : `}, {`"status":"success"`, `"status":"success","extra":1`},
		{`"cycleId":`, `"cycleId":null,"y":`}, {`,"cycleId":"`, `,"cycleId":"","z":"`}}
	for range 1500 {
		p := genPending(r)
		b, err := p.appendJSON(nil)
		require.NoError(t, err)
		for _, x := range strictjsontest.Mutations(r, b, reps) {
			checkPendingParse(t, x)
		}
	}
	for _, raw := range []string{`null`, `{}`, `{"kind":"tools","completedToolResults":[],"startedTools":null}`,
		`{"kind":"tools","completedToolResults":[],"startedTools":[{"toolUseId":"a","startedAt":"2026-12-04T10:00:00\u005a"}]}`,
		`{"kind":"tools","completedToolResults":[],"startedTools":[{"toolUseId":"a","startedAt":"2026-12-04T10:00:00Z"}]}`,
		`{"kind":"tools","completedToolResults":[],"startedTools":[{"toolUseId":"a","startedAt":null}]}`,
		`{"kind":"tools","completedToolResults":[],"cycleId":"c1"}`, `{"kind":"tools","completedToolResults":[],"cycleId":""}`,
		`{"kind":"tools","completedToolResults":[],"cycleId":null}`, `{"kind":"tools","completedToolResults":[],"cycleId":1}`,
		`{"kind":"tools","completedToolResults":[],"cycleId":"c1","cycleId":"c2"}`} {
		checkPendingParse(t, []byte(raw))
	}
}

func FuzzParsePending_AcceptsExactlyWhatTheStrictReflectiveDecodingAccepts(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		b, err := genPending(r).appendJSON(nil)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPendingParse(t, raw) })
}
