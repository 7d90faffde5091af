package interrupt

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ids used by the state tests.
var (
	idA = BeforeToolCallID("t1", "approval_a")
	idB = BeforeToolCallID("t1", "approval_b")
	idC = ToolCallID("t2", "test_name")
)

// interruptedState returns an activated State holding idA (unanswered), idB
// (answered "old") and idC (unanswered), raised in that order.
func interruptedState(t *testing.T) *State {
	t.Helper()
	st := NewState()
	_, created := st.Register(Interrupt{ID: idA, Name: "approval_a", Reason: json.RawMessage(`"a?"`), Source: SourceHook})
	require.True(t, created)
	_, created = st.Register(Interrupt{ID: idB, Name: "approval_b", Source: SourceHook})
	require.True(t, created)
	_, created = st.Register(Interrupt{ID: idC, Name: "test_name", Source: SourceTool})
	require.True(t, created)
	resumeWith(t, st, Respond(idB, "old"))
	return st
}

func snapshot(t *testing.T, st *State) (string, uint64) {
	t.Helper()
	b, err := st.MarshalJSON()
	require.NoError(t, err)
	return string(b), st.Version()
}

func TestState_ZeroValueIsUsable(t *testing.T) {
	var st State
	assert.Equal(t, 0, st.Len())
	assert.False(t, st.Activated())
	_, created := st.Register(Interrupt{ID: "i", Name: "n", Source: SourceHook})
	assert.True(t, created)
	assert.Equal(t, 1, st.Len())
}

func TestState_Register_ExistingRecordWins(t *testing.T) {
	// SPEC I3
	st := NewState()
	first := Interrupt{ID: "i", Name: "first", Reason: json.RawMessage(`1`), Source: SourceHook}
	got, created := st.Register(first)
	require.True(t, created)
	assert.Equal(t, first, got)
	v := st.Version()

	got, created = st.Register(Interrupt{ID: "i", Name: "second", Reason: json.RawMessage(`2`), Source: SourceTool})

	assert.False(t, created)
	assert.Equal(t, first, got, "the stored record is returned")
	stored, ok := st.Get("i")
	require.True(t, ok)
	assert.Equal(t, first, stored)
	assert.Equal(t, v, st.Version(), "nothing changed")
	assert.Equal(t, 1, st.Len())
}

func TestState_Register_StoresACopy(t *testing.T) {
	st := NewState()
	in := Interrupt{ID: "i", Name: "n", Reason: json.RawMessage(`"abc"`)}
	st.Register(in)
	in.Reason[1] = 'X'

	got, _ := st.Get("i")
	assert.Equal(t, `"abc"`, string(got.Reason))
	got.Reason[1] = 'Y'
	again, _ := st.Get("i")
	assert.Equal(t, `"abc"`, string(again.Reason), "Get returns a copy")
}

func TestState_Get_Unknown(t *testing.T) {
	_, ok := interruptedState(t).Get("nope")
	assert.False(t, ok)
}

func TestState_Resume_RejectsInvalidInputAtomically(t *testing.T) {
	// SPEC I7
	valid := Respond(idA, "yes")
	tests := []struct {
		name      string
		activated bool
		responses []Response
		wantIs    error
		wantID    string // "" when the error names no id
		wantMsg   string // exact substring of the message, or ""
	}{
		{"not interrupted", false, []Response{valid}, ErrNotInterrupted, idA, ""},
		{"nil list", true, nil, ErrEmptyResume, "", ""},
		{"empty list", true, []Response{}, ErrEmptyResume, "", ""},
		{"empty list while not interrupted", false, []Response{}, ErrNotInterrupted, "", ""},
		{"unknown id", true, []Response{Respond("nope", "yes")}, ErrUnknownID, "nope",
			"interrupt_id=<nope> | no interrupt found"},
		{"unknown id after a valid one", true, []Response{valid, Respond(idB, "new"), Respond("nope", 1)}, ErrUnknownID, "nope",
			"interrupt_id=<nope> | no interrupt found"},
		{"duplicate id", true, []Response{valid, Respond(idA, "again")}, ErrDuplicateResponse, idA, ""},
		{"duplicate of an answered id", true, []Response{Respond(idB, 1), valid, Respond(idB, 2)}, ErrDuplicateResponse, idB, ""},
		{"missing response", true, []Response{{ID: idC}}, ErrMissingResponse, idC, ""},
		{"missing response after a valid one", true, []Response{valid, {ID: idC}}, ErrMissingResponse, idC, ""},
		{"empty id", true, []Response{valid, Respond("", "x")}, ErrEmptyID, "", ""},
		{"unencodable answer", true, []Response{valid, Respond(idC, make(chan int))}, ErrAnswer, idC, ""},
		{"infinite answer", true, []Response{valid, Respond(idC, math.Inf(1))}, ErrAnswer, idC, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := interruptedState(t)
			if !tt.activated {
				st = NewState()
				st.Register(Interrupt{ID: idA, Name: "approval_a", Source: SourceHook})
			}
			beforeJSON, beforeVersion := snapshot(t, st)
			beforeUnanswered := st.Unanswered()

			checkErr := st.CheckResume(tt.responses)
			err := st.Resume(tt.responses)

			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Equal(t, err, checkErr, "CheckResume reports the same rejection")
			if tt.wantID != "" {
				var idErr *IDError
				require.ErrorAs(t, err, &idErr)
				assert.Equal(t, tt.wantID, idErr.ID)
				assert.Contains(t, err.Error(), "interrupt_id=<"+tt.wantID+">")
			}
			if tt.wantMsg != "" {
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
			afterJSON, afterVersion := snapshot(t, st)
			assert.Equal(t, beforeJSON, afterJSON, "state unchanged")
			assert.Equal(t, beforeVersion, afterVersion, "version unchanged")
			assert.Equal(t, beforeUnanswered, st.Unanswered())
			assert.Equal(t, tt.activated, st.Activated())
		})
	}
}

func TestState_Resume_RejectsParsedBlockWithoutResponse(t *testing.T) {
	// SPEC I6, I7
	st := interruptedState(t)
	rs, err := ParseResponses([]byte(`[{"interruptResponse":{"interruptId":"` + idA + `"}}]`))
	require.NoError(t, err, "a block without response parses")
	before, v := snapshot(t, st)

	err = st.Resume(rs)

	assert.ErrorIs(t, err, ErrMissingResponse)
	var idErr *IDError
	require.ErrorAs(t, err, &idErr)
	assert.Equal(t, idA, idErr.ID)
	after, v2 := snapshot(t, st)
	assert.Equal(t, before, after)
	assert.Equal(t, v, v2)
}

func TestState_Resume_StoresAnswersInAnyOrder(t *testing.T) {
	// SPEC I6, I7
	st := interruptedState(t)
	v := st.Version()

	require.NoError(t, st.Resume([]Response{Respond(idC, nil), Respond(idA, map[string]bool{"ok": true})}))

	a, _ := st.Get(idA)
	c, _ := st.Get(idC)
	assert.True(t, a.Answered)
	assert.Equal(t, `{"ok":true}`, string(a.Response.Raw()))
	assert.True(t, c.Answered, "null is an answer")
	assert.True(t, c.Response.IsNull())
	assert.Empty(t, st.Unanswered())
	assert.Greater(t, st.Version(), v)
	assert.True(t, st.Activated(), "resume stores answers; the owner deactivates with Clear")
}

func TestState_Resume_AnswersOnlySome(t *testing.T) {
	// SPEC I6
	st := interruptedState(t)
	require.NoError(t, st.Resume([]Response{Respond(idC, "c")}))
	assert.Equal(t, []string{idA}, ids(st.Unanswered()))
}

func TestState_Resume_ReanswerUpdatesAnswer(t *testing.T) {
	// SPEC I7
	st := interruptedState(t)
	require.NoError(t, st.Resume([]Response{Respond(idB, "new")}))
	b, _ := st.Get(idB)
	s, ok := b.Response.String()
	require.True(t, ok)
	assert.Equal(t, "new", s)

	require.NoError(t, st.Resume([]Response{Respond(idB, nil)}))
	b, _ = st.Get(idB)
	assert.True(t, b.Answered)
	assert.True(t, b.Response.IsNull(), "re-answering with null replaces the answer")
}

func TestState_Resume_StoresACopyOfTheAnswer(t *testing.T) {
	st := interruptedState(t)
	r := Respond(idA, "yes")
	require.NoError(t, st.Resume([]Response{r}))
	r.Value.raw[1] = 'N'
	a, _ := st.Get(idA)
	assert.Equal(t, `"yes"`, string(a.Response.Raw()))
}

func TestState_CheckResume_ChangesNothing(t *testing.T) {
	// SPEC I7
	st := interruptedState(t)
	before, v := snapshot(t, st)
	require.NoError(t, st.CheckResume([]Response{Respond(idA, "yes")}))
	after, v2 := snapshot(t, st)
	assert.Equal(t, before, after)
	assert.Equal(t, v, v2)
}

func ids(ins []Interrupt) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

func TestState_Unanswered_AllUnansweredInRaiseOrder(t *testing.T) {
	// SPEC I8
	st := NewState()
	for _, n := range []string{"d", "b", "e", "a"} {
		st.Register(Interrupt{ID: "id-" + n, Name: n, Source: SourceHook})
	}
	assert.Equal(t, []string{"d", "b", "e", "a"}, names(st.Unanswered()))

	resumeWith(t, st, Respond("id-a", 1), Respond("id-b", 2))
	assert.Equal(t, []string{"d", "e"}, names(st.Unanswered()), "answered ones left out, raise order kept")

	// A later pass raises more; earlier unanswered interrupts stay listed.
	st.Register(Interrupt{ID: "id-c", Name: "c", Source: SourceTool})
	assert.Equal(t, []string{"d", "e", "c"}, names(st.Unanswered()))
	assert.Equal(t, []string{"d", "b", "e", "a", "c"}, names(st.All()))

	resumeWith(t, st, Respond("id-d", 1), Respond("id-e", 1), Respond("id-c", 1))
	assert.Empty(t, st.Unanswered())
}

func TestState_Clear_DropsEverythingAndDeactivates(t *testing.T) {
	st := interruptedState(t)
	v := st.Version()

	st.Clear()

	assert.Equal(t, 0, st.Len())
	assert.Empty(t, st.All())
	assert.Empty(t, st.Unanswered())
	assert.False(t, st.Activated())
	assert.Greater(t, st.Version(), v)
	_, ok := st.Get(idA)
	assert.False(t, ok)
	assert.ErrorIs(t, st.Resume([]Response{Respond(idA, 1)}), ErrNotInterrupted)
	js, _ := snapshot(t, st)
	assert.Equal(t, `{"activated":false,"interrupts":[]}`, js)

	_, created := st.Register(Interrupt{ID: idA, Name: "fresh", Source: SourceHook})
	assert.True(t, created, "an equal id after Clear is a fresh interrupt")
	a, _ := st.Get(idA)
	assert.False(t, a.Answered)
}

func TestState_Version_CountsChanges(t *testing.T) {
	// SPEC I7: a rejected resume changes nothing
	st := NewState()
	v := st.Version()
	step := func(what string, change bool, f func()) {
		t.Helper()
		f()
		if change {
			assert.Greater(t, st.Version(), v, what)
		} else {
			assert.Equal(t, v, st.Version(), what)
		}
		v = st.Version()
	}
	step("register", true, func() { st.Register(Interrupt{ID: "i", Name: "n"}) })
	step("register existing", false, func() { st.Register(Interrupt{ID: "i", Name: "n"}) })
	step("read", false, func() { st.Get("i"); st.All(); st.Unanswered(); st.Len(); st.Activated() })
	step("activate", true, st.Activate)
	step("check resume", false, func() { _ = st.CheckResume([]Response{Respond("i", 1)}) })
	step("failed resume", false, func() { _ = st.Resume([]Response{Respond("x", 1)}) })
	step("resume", true, func() { require.NoError(t, st.Resume([]Response{Respond("i", 1)})) })
	step("clear", true, st.Clear)
}

func TestState_Clone_IsIndependent(t *testing.T) {
	st := interruptedState(t)
	orig, v := snapshot(t, st)

	c := st.Clone()
	cloned, cv := snapshot(t, c)
	require.Equal(t, orig, cloned)
	assert.Equal(t, v, cv)

	require.NoError(t, c.Resume([]Response{Respond(idA, "in clone")}))
	c.Register(Interrupt{ID: "new", Name: "new", Source: SourceTool})
	after, v2 := snapshot(t, st)
	assert.Equal(t, orig, after, "changing the clone leaves the original")
	assert.Equal(t, v, v2)

	st.Clear()
	assert.Equal(t, 4, c.Len(), "clearing the original leaves the clone")
	assert.True(t, c.Activated())
}

func TestState_Restore_ReplacesContents(t *testing.T) {
	src := interruptedState(t)
	want, _ := snapshot(t, src)
	dst := NewState()
	dst.Register(Interrupt{ID: "other", Name: "other"})
	v := dst.Version()

	dst.Restore(src)

	got, _ := snapshot(t, dst)
	assert.Equal(t, want, got)
	assert.Greater(t, dst.Version(), v)
	require.NoError(t, dst.Resume([]Response{Respond(idA, 1)}), "restored ids are found")
	a, _ := src.Get(idA)
	assert.False(t, a.Answered, "the source is not touched")
}

func TestState_MarshalJSON_Form(t *testing.T) {
	// SPEC I1, I8
	st := interruptedState(t)
	require.NoError(t, st.Resume([]Response{Respond(idC, nil)}))
	got, err := st.MarshalJSON()
	require.NoError(t, err)
	want := `{"activated":true,"interrupts":[` +
		`{"id":"` + idA + `","name":"approval_a","reason":"a?","source":"hook"},` +
		`{"id":"` + idB + `","name":"approval_b","response":"old","source":"hook"},` +
		`{"id":"` + idC + `","name":"test_name","response":null,"source":"tool"}]}`
	assert.Equal(t, want, string(got))

	empty, err := NewState().MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"activated":false,"interrupts":[]}`, string(empty))
}

func TestState_JSONRoundTrip(t *testing.T) {
	// SPEC I1, I8
	st := interruptedState(t)
	require.NoError(t, st.Resume([]Response{Respond(idC, nil)}))
	st.Register(Interrupt{ID: "late", Name: "late <&>", Reason: json.RawMessage(`{"k":[1,"<x>"]}`), Source: SourceMultiAgentHook})
	data, err := st.MarshalJSON()
	require.NoError(t, err)

	var got State
	require.NoError(t, json.Unmarshal(data, &got))

	again, err := got.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))
	assert.Equal(t, st.All(), got.All(), "order and answers preserved")
	assert.Equal(t, st.Activated(), got.Activated())
	c, _ := got.Get(idC)
	assert.True(t, c.Answered)
	assert.True(t, c.Response.IsNull())
	assert.Equal(t, []string{idA, "late"}, ids(got.Unanswered()))
	require.NoError(t, got.Resume([]Response{Respond("late", "ok")}), "ids are indexed after loading")
}

func TestState_MarshalJSON_EmbeddedKeepsHTMLWithoutEscapingEncoder(t *testing.T) {
	// SPEC I1: a saver that embeds the state and turns HTML escaping off
	// writes "<" as it is. (json.Marshal itself always escapes it.)
	st := NewState()
	st.Register(Interrupt{ID: "i", Name: "<n>", Reason: json.RawMessage(`"a & b"`), Source: SourceTool})
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(struct {
		Interrupts *State `json:"interrupts"`
	}{st}))
	assert.Equal(t, `{"interrupts":{"activated":false,"interrupts":[{"id":"i","name":"<n>","reason":"a & b","source":"tool"}]}}`+"\n", buf.String())
}

func TestState_UnmarshalJSON_GoldenFile(t *testing.T) {
	// SPEC I1: state written by this release keeps loading.
	data, err := os.ReadFile(filepath.Join("testdata", "state_v1.golden.json"))
	require.NoError(t, err)
	var st State
	require.NoError(t, json.Unmarshal(data, &st))

	assert.True(t, st.Activated())
	all := st.All()
	require.Len(t, all, 4)
	assert.Equal(t, []string{"approval_a", "approval_b", "test_name", "myapp-approval"}, names(all))
	assert.Equal(t, "v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840", all[0].ID)
	assert.Equal(t, SourceHook, all[0].Source)
	assert.True(t, all[1].Answered)
	assert.True(t, all[1].Response.IsNull())
	assert.Equal(t, SourceHook, all[2].Source, "missing source reads as hook")
	assert.Equal(t, SourceMultiAgentHook, all[3].Source)
	assert.Equal(t, []string{"approval_a", "test_name"}, names(st.Unanswered()))

	out, err := st.MarshalJSON()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "state_v1.canonical.json"))
	require.NoError(t, err)
	assert.Equal(t, string(bytesTrimNewline(want)), string(out))
}

func bytesTrimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func TestState_UnmarshalJSON_RejectsAndKeepsState(t *testing.T) {
	// SPEC I1
	tests := []struct {
		name    string
		data    string
		wantIs  error
		wantMsg string
	}{
		{"duplicate ids", `{"activated":true,"interrupts":[{"id":"x","name":"a"},{"id":"x","name":"b"}]}`, nil,
			"interrupt_id=<x> appears twice"},
		{"empty id", `{"activated":true,"interrupts":[{"id":"","name":"a"}]}`, ErrEmptyID, ""},
		{"unknown source", `{"activated":true,"interrupts":[{"id":"x","name":"a","source":"cron"}]}`, nil, "unknown source"},
		{"not JSON", `{"activated":`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := interruptedState(t)
			before, v := snapshot(t, st)

			err := json.Unmarshal([]byte(tt.data), st)

			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			if tt.wantMsg != "" {
				assert.Contains(t, err.Error(), tt.wantMsg)
			}
			after, v2 := snapshot(t, st)
			assert.Equal(t, before, after)
			assert.Equal(t, v, v2)
		})
	}
}

func TestState_UnmarshalJSON_EmptyForms(t *testing.T) {
	for _, data := range []string{`{}`, `{"activated":false,"interrupts":null}`, `{"activated":false,"interrupts":[]}`} {
		st := interruptedState(t)
		require.NoError(t, json.Unmarshal([]byte(data), st), data)
		assert.Equal(t, 0, st.Len(), data)
		assert.False(t, st.Activated(), data)
		js, _ := snapshot(t, st)
		assert.Equal(t, `{"activated":false,"interrupts":[]}`, js, data)
	}
}

func TestState_ConcurrentRegister_RecordsEachIDOnce(t *testing.T) {
	// SPEC I3: concurrent tools of one cycle raise into one State
	const goroutines, idsPerGoroutine = 64, 16
	st := NewState()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created = map[string]int{}
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idsPerGoroutine {
				id := fmt.Sprintf("id-%d", (i+g)%idsPerGoroutine)
				if _, ok := st.Register(Interrupt{ID: id, Name: fmt.Sprintf("g%d", g), Source: SourceTool}); ok {
					mu.Lock()
					created[id]++
					mu.Unlock()
				}
				_ = st.Unanswered()
				_, _ = st.MarshalJSON()
				_ = st.Clone()
			}
		}()
	}
	wg.Wait()

	assert.Equal(t, idsPerGoroutine, st.Len())
	require.Len(t, created, idsPerGoroutine)
	for id, n := range created {
		assert.Equal(t, 1, n, "%s created once", id)
	}
}

func TestState_ConcurrentResumeAndRead(t *testing.T) {
	st := NewState()
	const n = 32
	for i := range n {
		st.Register(Interrupt{ID: fmt.Sprint(i), Name: fmt.Sprint(i)})
	}
	st.Activate()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			assert.NoError(t, st.Resume([]Response{Respond(fmt.Sprint(i), i)}))
		}()
		go func() {
			defer wg.Done()
			_ = st.All()
			_ = st.Version()
		}()
	}
	wg.Wait()
	assert.Empty(t, st.Unanswered())
}

// SPEC I8: DropUnanswered removes only unanswered interrupts it is told
// are moot, keeps the rest in raise order (the index too, past the size
// where the state keeps one), and counts as a change.
func TestState_DropUnansweredKeepsTheRestInOrder(t *testing.T) {
	for _, n := range []int{4, 20} {
		s := NewState()
		for i := range n {
			s.Register(Interrupt{ID: fmt.Sprintf("id-%02d", i), Name: "n"})
		}
		s.Activate()
		require.NoError(t, s.Resume([]Response{Respond("id-00", "y"), Respond("id-02", "y")}))
		v := s.Version()
		dropped := s.DropUnanswered(func(id string) bool { return id == "id-00" || id == "id-01" || id == "id-02" || id == "id-03" })
		assert.Equal(t, 2, dropped, "n=%d: the answered ones stay", n)
		assert.Greater(t, s.Version(), v)
		var ids []string
		for _, in := range s.All() {
			ids = append(ids, in.ID)
		}
		assert.Equal(t, []string{"id-00", "id-02"}, ids[:2], "n=%d", n)
		assert.Len(t, ids, n-2)
		_, ok := s.Get("id-01")
		assert.False(t, ok)
		last := "id-02" // kept
		if n > 4 {
			last = fmt.Sprintf("id-%02d", n-1) // through the rebuilt index
		}
		got, ok := s.Get(last)
		require.True(t, ok, "n=%d: %s", n, last)
		assert.Equal(t, last, got.ID)
		assert.Zero(t, s.DropUnanswered(func(string) bool { return false }))
	}
}
