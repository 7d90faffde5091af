package interrupt

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolScope returns a Scope raising tool interrupts for tool use "t1".
func toolScope(st *State) *Scope {
	return NewScope(st, SourceTool, func(name string) string { return ToolCallID("t1", name) })
}

// resumeWith activates st and answers the interrupts, failing the test on error.
func resumeWith(t *testing.T, st *State, responses ...Response) {
	t.Helper()
	st.Activate()
	require.NoError(t, st.Resume(responses))
}

func names(ins []Interrupt) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.Name
	}
	return out
}

func TestScope_Interrupt_RecordsBeforeReturningError(t *testing.T) {
	// SPEC I3
	st := NewState()
	sc := toolScope(st)

	v, err := sc.Interrupt("approve", map[string]string{"cmd": "rm -rf <dir>"})

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInterrupted)
	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	id := ToolCallID("t1", "approve")
	assert.Equal(t, id, raised.Interrupt.ID)
	assert.Equal(t, "approve", raised.Interrupt.Name)
	assert.Equal(t, SourceTool, raised.Interrupt.Source)
	assert.Equal(t, `{"cmd":"rm -rf <dir>"}`, string(raised.Interrupt.Reason))
	assert.False(t, raised.Interrupt.Answered)
	assert.Contains(t, err.Error(), "approve")
	assert.False(t, v.Valid(), "no answer comes with the error")

	stored, ok := st.Get(id)
	require.True(t, ok, "recorded in the owner's state")
	assert.Equal(t, raised.Interrupt, stored)
	assert.False(t, st.Activated(), "raising does not activate; the owner does")
}

func TestScope_Interrupt_WithoutReasonRecordsNoReason(t *testing.T) {
	// SPEC I1, I3
	st := NewState()
	_, err := NewScope(st, SourceHook, BeforeToolsID).Interrupt("approval_a", nil)
	require.ErrorIs(t, err, ErrInterrupted)
	in, ok := st.Get("v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840")
	require.True(t, ok)
	assert.False(t, in.HasReason())
	assert.Equal(t, SourceHook, in.Source)
}

func TestScope_Interrupt_ReturnsAnswerAfterResume(t *testing.T) {
	// SPEC I3
	tests := []struct {
		name   string
		answer any
		want   string
	}{
		{"string", "yes", `"yes"`},
		{"null", nil, `null`},
		{"false", false, `false`},
		{"zero", 0, `0`},
		{"object", map[string]any{"ok": true}, `{"ok":true}`},
		{"array", []int{1, 2}, `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			_, err := toolScope(st).Interrupt("approve", "really?")
			require.ErrorIs(t, err, ErrInterrupted)
			resumeWith(t, st, Respond(ToolCallID("t1", "approve"), tt.answer))

			sc := toolScope(st)
			v, err := sc.Interrupt("approve", "really?")

			require.NoError(t, err)
			assert.True(t, v.Valid())
			assert.Equal(t, tt.want, string(v.Raw()))
			assert.False(t, sc.Interrupted())
			assert.Empty(t, sc.Raised())
			assert.Equal(t, 1, st.Len(), "no second record")
		})
	}
}

func TestScope_Interrupt_ExistingRecordWins(t *testing.T) {
	// SPEC I3
	st := NewState()
	_, err := toolScope(st).Interrupt("approve", "first reason")
	require.ErrorIs(t, err, ErrInterrupted)
	before, err := st.MarshalJSON()
	require.NoError(t, err)

	_, err = toolScope(st).Interrupt("approve", map[string]int{"second": 2})

	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, `"first reason"`, string(raised.Interrupt.Reason), "the error carries the stored record")
	after, err := st.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestScope_Interrupt_ExistingRecordKeepsItsName(t *testing.T) {
	// SPEC I3: a record with that id wins, its name and reason never change.
	st := NewState()
	id := ToolCallID("t1", "approve")
	_, created := st.Register(Interrupt{ID: id, Name: "stored-name", Reason: json.RawMessage(`1`), Source: SourceTool})
	require.True(t, created)

	_, err := toolScope(st).Interrupt("approve", 2)

	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, "stored-name", raised.Interrupt.Name)
	got, _ := st.Get(id)
	assert.Equal(t, "stored-name", got.Name)
	assert.Equal(t, `1`, string(got.Reason))
}

func TestScope_Interrupt_RejectsUnencodableReason(t *testing.T) {
	// SPEC I3: an error at the call, not later at save.
	tests := []struct {
		name   string
		reason any
	}{
		{"channel", make(chan int)},
		{"func", func() {}},
		{"infinity", math.Inf(-1)},
		{"NaN inside a map", map[string]float64{"x": math.NaN()}},
		{"invalid raw JSON", json.RawMessage(`{"a":`)},
		{"zero Value", Value{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			v0 := st.Version()
			sc := toolScope(st)

			v, err := sc.Interrupt("approve", tt.reason)

			require.Error(t, err)
			assert.ErrorIs(t, err, ErrReason)
			assert.NotErrorIs(t, err, ErrInterrupted)
			assert.Contains(t, err.Error(), "interrupt_name=<approve>")
			assert.False(t, v.Valid())
			assert.Equal(t, 0, st.Len(), "nothing recorded")
			assert.Equal(t, v0, st.Version())
			assert.False(t, sc.Interrupted())
			assert.NoError(t, sc.Err())
		})
	}
}

func TestScope_Interrupt_PreemptiveAnswerReturnedAndStored(t *testing.T) {
	// SPEC I3
	tests := []struct {
		name   string
		answer any
		want   string
	}{
		{"string", "approved", `"approved"`},
		{"nil is JSON null", nil, `null`},
		{"false", false, `false`},
		{"object", map[string]bool{"ok": true}, `{"ok":true}`},
		{"Value", Value{raw: json.RawMessage(`[1]`)}, `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState()
			sc := toolScope(st)

			v, err := sc.Interrupt("approve", "why", Preemptive(tt.answer))

			require.NoError(t, err)
			assert.Equal(t, tt.want, string(v.Raw()))
			assert.False(t, sc.Interrupted())
			assert.Empty(t, sc.Raised())
			stored, ok := st.Get(ToolCallID("t1", "approve"))
			require.True(t, ok, "preemptive answer is stored")
			assert.True(t, stored.Answered)
			assert.Equal(t, tt.want, string(stored.Response.Raw()))
			assert.Equal(t, `"why"`, string(stored.Reason))
			assert.Empty(t, st.Unanswered())

			again, err := toolScope(st).Interrupt("approve", "why")
			require.NoError(t, err, "a later pass finds the stored answer")
			assert.Equal(t, tt.want, string(again.Raw()))
		})
	}
}

func TestScope_Interrupt_PreemptiveDoesNotReplaceStoredAnswer(t *testing.T) {
	// SPEC I3
	st := NewState()
	_, err := toolScope(st).Interrupt("approve", nil)
	require.ErrorIs(t, err, ErrInterrupted)
	resumeWith(t, st, Respond(ToolCallID("t1", "approve"), "stored"))

	v, err := toolScope(st).Interrupt("approve", nil, Preemptive("preemptive"))

	require.NoError(t, err)
	s, _ := v.String()
	assert.Equal(t, "stored", s)
}

func TestScope_Interrupt_RejectsUnencodablePreemptiveAnswer(t *testing.T) {
	// SPEC I3
	st := NewState()
	sc := toolScope(st)

	_, err := sc.Interrupt("approve", nil, Preemptive(make(chan int)))

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrAnswer)
	assert.NotErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, 0, st.Len())
	assert.False(t, sc.Interrupted())
}

func TestScope_Interrupt_RejectsEmptyName(t *testing.T) {
	// SPEC I3
	st := NewState()
	sc := toolScope(st)
	_, err := sc.Interrupt("", "reason")
	assert.ErrorIs(t, err, ErrEmptyName)
	assert.NotErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, 0, st.Len())
	assert.False(t, sc.Interrupted())
}

func TestScope_Interrupt_RejectsNamesAndIDsThatAreNotUTF8(t *testing.T) {
	// SPEC I3, I7, S1: a session stores JSON, whose writers replace bytes
	// that are not UTF-8, so a name or id holding them would not read back
	// as the caller was given it. It is refused at the raise, with the
	// name quoted, before anything is recorded; an answer already stored
	// does not change that.
	for _, tc := range []struct {
		desc  string
		name  string
		idFor func(string) string
	}{
		{"name", "approve\xff", func(name string) string { return ToolCallID("t1", name) }},
		{"cut rune in name", "caf\xc3", func(name string) string { return ToolCallID("t1", name) }},
		{"id", "approve", func(name string) string { return ToolCallID("t\xfe1", name) }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			st := NewState()
			sc := NewScope(st, SourceTool, tc.idFor)
			_, err := sc.Interrupt(tc.name, "reason", Preemptive("y"))
			require.ErrorIs(t, err, ErrNotUTF8)
			assert.NotErrorIs(t, err, ErrInterrupted)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", tc.name))
			assert.Equal(t, 0, st.Len())
			assert.False(t, sc.Interrupted())
			assert.NoError(t, sc.Err())
		})
	}
}

func TestScope_Interrupt_NotInterruptibleWithoutState(t *testing.T) {
	// SPEC I3: direct tool calls cannot interrupt.
	_, err := NewScope(nil, SourceTool, BeforeToolsID).Interrupt("approve", nil)
	assert.ErrorIs(t, err, ErrNotInterruptible)
	assert.NotErrorIs(t, err, ErrInterrupted)

	var nilScope *Scope
	_, err = nilScope.Interrupt("approve", nil)
	assert.ErrorIs(t, err, ErrNotInterruptible)
}

func TestScope_Raised_ReflectsIgnoredErrors(t *testing.T) {
	// SPEC I3: an unanswered interrupt stops the work even if the callback
	// swallowed the error.
	st := NewState()
	sc := toolScope(st)
	require.False(t, sc.Interrupted())

	_, _ = sc.Interrupt("first", nil)
	_, _ = sc.Interrupt("second", "r")

	assert.True(t, sc.Interrupted())
	raised := sc.Raised()
	assert.Equal(t, []string{"first", "second"}, names(raised))
	assert.Equal(t, ToolCallID("t1", "first"), raised[0].ID)
	assert.Equal(t, names(st.Unanswered()), names(raised))
}

func TestScope_Raised_ExcludesAnsweredInterrupts(t *testing.T) {
	// SPEC I3
	st := NewState()
	_, _ = toolScope(st).Interrupt("answered", nil)
	resumeWith(t, st, Respond(ToolCallID("t1", "answered"), "ok"))

	sc := toolScope(st)
	_, err := sc.Interrupt("answered", nil)
	require.NoError(t, err)
	_, err = sc.Interrupt("pending", nil)
	require.ErrorIs(t, err, ErrInterrupted)

	assert.Equal(t, []string{"pending"}, names(sc.Raised()))
}

func TestScope_Raised_IsACopy(t *testing.T) {
	sc := toolScope(NewState())
	_, _ = sc.Interrupt("a", nil)
	got := sc.Raised()
	got[0].Name = "changed"
	assert.Equal(t, "a", sc.Raised()[0].Name)
}

func TestScope_SameCallbackSameNameTwice_IsNotAClash(t *testing.T) {
	// SPEC I4
	st := NewState()
	sc := toolScope(st)
	sc.BeginCallback(0)

	_, err1 := sc.Interrupt("x", "r")
	_, err2 := sc.Interrupt("x", "r")

	assert.ErrorIs(t, err1, ErrInterrupted)
	assert.ErrorIs(t, err2, ErrInterrupted)
	assert.NotErrorIs(t, err2, ErrDuplicateName)
	assert.NoError(t, sc.Err())
	assert.Equal(t, 1, st.Len())
	assert.Len(t, sc.Raised(), 1, "one interrupt, listed once")
}

func TestScope_SameNameInTwoCallbacks_IsAClash(t *testing.T) {
	// SPEC I4
	st := NewState()
	sc := NewScope(st, SourceHook, func(n string) string { return BeforeToolCallID("t1", n) })
	sc.BeginCallback(0)
	_, err := sc.Interrupt("x", nil)
	require.ErrorIs(t, err, ErrInterrupted)

	sc.BeginCallback(1)
	_, err = sc.Interrupt("x", nil)

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrDuplicateName)
	assert.NotErrorIs(t, err, ErrInterrupted)
	var dup *DuplicateNameError
	require.ErrorAs(t, err, &dup)
	assert.Equal(t, "x", dup.Name)
	assert.Contains(t, err.Error(), "interrupt name used more than once")
	assert.Contains(t, err.Error(), "interrupt_name=<x>")

	scopeErr := sc.Err()
	require.Error(t, scopeErr)
	assert.ErrorIs(t, scopeErr, ErrDuplicateName)
	assert.Same(t, dup, scopeErr, "Err returns the clash error")
	assert.Equal(t, 1, st.Len(), "the clashing call records nothing")
}

func TestScope_Err_KeepsFirstClash(t *testing.T) {
	// SPEC I4
	sc := toolScope(NewState())
	sc.BeginCallback(0)
	_, _ = sc.Interrupt("x", nil)
	_, _ = sc.Interrupt("y", nil)
	sc.BeginCallback(1)
	_, errX := sc.Interrupt("x", nil)
	_, errY := sc.Interrupt("y", nil)
	require.ErrorIs(t, errX, ErrDuplicateName)
	require.ErrorIs(t, errY, ErrDuplicateName)

	var dup *DuplicateNameError
	require.ErrorAs(t, sc.Err(), &dup)
	assert.Equal(t, "x", dup.Name)
}

func TestScope_SameNameInTwoCallbacks_ClashesEvenWhenAnswered(t *testing.T) {
	// SPEC I4: the same name raised twice on one event is an error.
	st := NewState()
	_, _ = toolScope(st).Interrupt("x", nil)
	resumeWith(t, st, Respond(ToolCallID("t1", "x"), "ok"))

	sc := toolScope(st)
	sc.BeginCallback(0)
	_, err := sc.Interrupt("x", nil)
	require.NoError(t, err)
	sc.BeginCallback(1)
	_, err = sc.Interrupt("x", nil)

	assert.ErrorIs(t, err, ErrDuplicateName)
	assert.ErrorIs(t, sc.Err(), ErrDuplicateName)
}

func TestScope_CollectsInterruptsInCallbackOrder(t *testing.T) {
	// SPEC I4
	st := NewState()
	sc := NewScope(st, SourceHook, BeforeToolsID)
	for i, name := range []string{"c", "a", "b"} {
		sc.BeginCallback(i)
		_, err := sc.Interrupt(name, nil)
		require.ErrorIs(t, err, ErrInterrupted)
	}
	assert.NoError(t, sc.Err())
	assert.Equal(t, []string{"c", "a", "b"}, names(sc.Raised()))
	assert.Equal(t, []string{"c", "a", "b"}, names(st.Unanswered()))
}

func TestScope_SequentialInterruptsInOneCallback(t *testing.T) {
	// SPEC I5
	st := NewState()
	idFor := func(n string) string { return BeforeToolCallID("t1", n) }
	hook := func(sc *Scope) (string, error) {
		first, err := sc.Interrupt("first", "step 1")
		if err != nil {
			return "", err
		}
		second, err := sc.Interrupt("second", "step 2")
		if err != nil {
			return "", err
		}
		a, _ := first.String()
		b, _ := second.String()
		return a + "+" + b, nil
	}
	pass := func() (*Scope, string, error) {
		sc := NewScope(st, SourceHook, idFor)
		sc.BeginCallback(0)
		out, err := hook(sc)
		return sc, out, err
	}

	sc, _, err := pass()
	require.ErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, []string{"first"}, names(sc.Raised()))
	assert.Equal(t, []string{"first"}, names(st.Unanswered()))
	resumeWith(t, st, Respond(idFor("first"), "A"))

	sc, _, err = pass()
	require.ErrorIs(t, err, ErrInterrupted)
	var raised *RaisedError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, "second", raised.Interrupt.Name)
	assert.NoError(t, sc.Err(), "answered first then second is no clash")
	assert.Equal(t, []string{"second"}, names(sc.Raised()))
	assert.Equal(t, []string{"second"}, names(st.Unanswered()))
	resumeWith(t, st, Respond(idFor("second"), "B"))

	sc, out, err := pass()
	require.NoError(t, err)
	assert.Equal(t, "A+B", out)
	assert.False(t, sc.Interrupted())
	assert.Equal(t, []string{"first", "second"}, names(st.All()))
}

func TestScope_ConcurrentInterrupts_RecordEachIDOnce(t *testing.T) {
	// SPEC I3, I4: concurrent tools raise into one State.
	const workers, nNames = 32, 8
	st := NewState()
	sc := toolScope(st)
	var wg sync.WaitGroup
	errs := make(chan error, workers*nNames)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range nNames {
				_, err := sc.Interrupt(fmt.Sprintf("name-%d", (n+w)%nNames), w)
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, ErrInterrupted)
	}
	assert.NoError(t, sc.Err())
	assert.Equal(t, nNames, st.Len())
	assert.Len(t, sc.Raised(), nNames)
	seen := map[string]bool{}
	for _, in := range st.All() {
		assert.False(t, seen[in.ID], "id %s recorded twice", in.ID)
		seen[in.ID] = true
		assert.Equal(t, ToolCallID("t1", in.Name), in.ID)
	}
}

func TestScope_ConcurrentScopesOnOneState(t *testing.T) {
	// SPEC I3: one Scope per tool call, all raising into the owner's State.
	const tools = 50
	st := NewState()
	var wg sync.WaitGroup
	for i := range tools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			useID := fmt.Sprintf("t%d", i)
			sc := NewScope(st, SourceTool, func(n string) string { return ToolCallID(useID, n) })
			_, err := sc.Interrupt("approve", useID)
			if !errors.Is(err, ErrInterrupted) {
				t.Errorf("tool %s: got %v", useID, err)
			}
			_, _ = st.MarshalJSON()
		}()
	}
	wg.Wait()
	assert.Equal(t, tools, st.Len())
	assert.Len(t, st.Unanswered(), tools)
}

// SPEC I3: once the runtime has ended a Scope (its event's callbacks or
// its tool call have returned), Interrupt fails with ErrScopeEnded and
// records nothing, answered or not; what was raised before stays readable.
func TestScope_InterruptAfterEnd_FailsAndRecordsNothing(t *testing.T) {
	st := NewState()
	scope := NewScope(st, SourceHook, BeforeToolsID)
	_, err := scope.Interrupt("before", nil)
	require.ErrorIs(t, err, ErrInterrupted)
	scope.End()

	_, err = scope.Interrupt("after", "why")
	require.ErrorIs(t, err, ErrScopeEnded)
	assert.NotErrorIs(t, err, ErrInterrupted)
	_, ok := st.Get(BeforeToolsID("after"))
	assert.False(t, ok, "nothing recorded after End")
	raised := scope.Raised()
	require.Len(t, raised, 1)
	assert.Equal(t, BeforeToolsID("before"), raised[0].ID)
	assert.True(t, scope.Interrupted())

	st.Activate()
	require.NoError(t, st.Resume([]Response{Respond(BeforeToolsID("before"), "y")}))
	_, err = scope.Interrupt("before", nil)
	require.ErrorIs(t, err, ErrScopeEnded, "no answer is handed out after End either")
}
