package actors_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/proto/braidv1"
)

// builtinSentinels are the sentinels every ErrorCodec knows.
var builtinSentinels = []error{
	interrupt.ErrInterrupted, interrupt.ErrNotInterrupted, interrupt.ErrResumeRequired,
	interrupt.ErrMixedInput, interrupt.ErrEmptyResume, interrupt.ErrUnknownID,
	interrupt.ErrMissingResponse, interrupt.ErrDuplicateResponse, interrupt.ErrDuplicateName,
	interrupt.ErrReason, interrupt.ErrAnswer, interrupt.ErrNoAnswer, interrupt.ErrNoReason,
	interrupt.ErrEmptyID, interrupt.ErrEmptyName, interrupt.ErrNotUTF8, interrupt.ErrNotInterruptible,
	persistence.ErrNotFound, persistence.ErrConflict, persistence.ErrDamaged,
	persistence.ErrSchemaVersion, persistence.ErrBadID, persistence.ErrBadSave, persistence.ErrClosed,
	context.Canceled, context.DeadlineExceeded,
	actors.ErrClosed,
}

func newCodec(t *testing.T, extra ...actors.ErrorCode) *actors.ErrorCodec {
	t.Helper()
	c, err := actors.NewErrorCodec(extra...)
	require.NoError(t, err)
	return c
}

// overWire encodes err, marshals it to bytes and back, and decodes it, as a
// send to another process does.
func overWire(t *testing.T, enc, dec *actors.ErrorCodec, err error) error {
	t.Helper()
	return dec.Decode(marshalled(t, enc.Encode(err)))
}

func marshalled(t *testing.T, w *braidv1.Error) *braidv1.Error {
	t.Helper()
	b, err := proto.Marshal(w)
	require.NoError(t, err)
	var got braidv1.Error
	require.NoError(t, proto.Unmarshal(b, &got))
	return &got
}

// assertMatchesExactly checks that got matches every sentinel of want, and
// no other built-in one.
func assertMatchesExactly(t *testing.T, got error, want ...error) {
	t.Helper()
	for _, s := range builtinSentinels {
		wanted := false
		for _, w := range want {
			wanted = wanted || w == s
		}
		assert.Equal(t, wanted, errors.Is(got, s), "errors.Is(%q, %q)", got, s)
	}
}

// SPEC R2: every built-in sentinel survives a process boundary, and matches
// only itself there.
func TestErrorCodec_RoundTripsEveryBuiltInSentinel(t *testing.T) {
	c := newCodec(t)
	for _, s := range builtinSentinels {
		t.Run(s.Error(), func(t *testing.T) {
			got := overWire(t, c, c, s)
			require.Error(t, got)
			assert.Equal(t, s.Error(), got.Error())
			assert.ErrorIs(t, got, actors.ErrRemote)
			assertMatchesExactly(t, got, s)
		})
	}
}

// Typed errors that are not carried as types still match their sentinels.
func TestErrorCodec_KeepsSentinelsOfUncarriedTypedErrors(t *testing.T) {
	c := newCodec(t)
	for _, tc := range []struct {
		err  error
		want error
	}{
		{&interrupt.RaisedError{Interrupt: interrupt.Interrupt{ID: "i1", Name: "approve"}}, interrupt.ErrInterrupted},
		{&persistence.ConflictError{Key: persistence.Key{SessionID: "s", Kind: "agent", ID: "a"}, Expected: 2, Actual: 3}, persistence.ErrConflict},
		{&persistence.IDError{What: "session", ID: "a/b", Why: "contains a path separator"}, persistence.ErrBadID},
	} {
		got := overWire(t, c, c, tc.err)
		assert.Equal(t, tc.err.Error(), got.Error())
		assertMatchesExactly(t, got, tc.want)
	}
}

// SPEC R2: sentinels wrapped with %w (on several levels, several per level)
// or joined keep matching, and the message is kept exactly.
func TestErrorCodec_KeepsWrappedSentinels(t *testing.T) {
	c := newCodec(t)
	for _, tc := range []struct {
		name string
		err  error
		want []error
	}{
		{"two levels", fmt.Errorf("resume: %w", fmt.Errorf("session s1: %w", interrupt.ErrUnknownID)),
			[]error{interrupt.ErrUnknownID}},
		{"joined", errors.Join(persistence.ErrConflict, fmt.Errorf("save: %w", context.Canceled)),
			[]error{persistence.ErrConflict, context.Canceled}},
		{"several per level", fmt.Errorf("%w, then %w", actors.ErrClosed, persistence.ErrClosed),
			[]error{actors.ErrClosed, persistence.ErrClosed}},
		{"joined inside wrapped", fmt.Errorf("close: %w", errors.Join(
			fmt.Errorf("a: %w", context.DeadlineExceeded), errors.New("plain"), interrupt.ErrNoAnswer)),
			[]error{context.DeadlineExceeded, interrupt.ErrNoAnswer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := overWire(t, c, c, tc.err)
			assert.Equal(t, tc.err.Error(), got.Error())
			assertMatchesExactly(t, got, tc.want...)
		})
	}
}

// The wire lists codes outermost first; the first is Code. The codes are
// part of the wire format and must not change.
func TestErrorCodec_ListsCodesOutermostFirst(t *testing.T) {
	c := newCodec(t)
	w := c.Encode(fmt.Errorf("%w: %w", persistence.ErrNotFound,
		fmt.Errorf("x: %w", errors.Join(actors.ErrClosed, interrupt.ErrInterrupted))))
	assert.Equal(t, "persistence.ErrNotFound", w.GetCode())
	assert.Equal(t, []string{"actors.ErrClosed", "interrupt.ErrInterrupted"}, w.GetCauses())

	w = c.Encode(&interrupt.IDError{ID: "t1", Err: interrupt.ErrUnknownID})
	assert.Equal(t, "interrupt.IDError", w.GetCode())
	assert.Equal(t, "t1", w.GetInterruptId())
	assert.Equal(t, "interrupt.ErrUnknownID", w.GetDetail())
	assert.Equal(t, []string{"interrupt.ErrUnknownID"}, w.GetCauses())
}

// SPEC I7: a rejected response's IDError is found with errors.As on the
// receiving side, with its id and its sentinel.
func TestErrorCodec_RestoresIDError(t *testing.T) {
	c := newCodec(t)
	for _, s := range []error{interrupt.ErrUnknownID, interrupt.ErrMissingResponse, interrupt.ErrDuplicateResponse,
		interrupt.ErrNotInterrupted, interrupt.ErrEmptyID, interrupt.ErrAnswer} {
		orig := &interrupt.IDError{ID: "v1:tool_call:t1:confirm", Err: s}
		err := fmt.Errorf("resume agent a1: %w", orig)
		got := overWire(t, c, c, err)
		assert.Equal(t, err.Error(), got.Error())
		assertMatchesExactly(t, got, s)

		var idErr *interrupt.IDError
		require.ErrorAs(t, got, &idErr)
		assert.Equal(t, orig.ID, idErr.ID)
		assert.Same(t, s, idErr.Err, "the cause is the sentinel itself")
		assert.Equal(t, orig.Error(), idErr.Error())
	}
}

// An IDError whose cause is more than a bare sentinel keeps the cause's text
// and the sentinel it matches.
func TestErrorCodec_RestoresIDErrorWithWrappedCause(t *testing.T) {
	c := newCodec(t)
	cause := fmt.Errorf("%w: json: unsupported value: NaN", interrupt.ErrAnswer)
	orig := &interrupt.IDError{ID: "i7", Err: cause}
	got := overWire(t, c, c, orig)
	assert.Equal(t, orig.Error(), got.Error())

	var idErr *interrupt.IDError
	require.ErrorAs(t, got, &idErr)
	assert.Equal(t, "i7", idErr.ID)
	assert.Equal(t, cause.Error(), idErr.Err.Error())
	assert.ErrorIs(t, idErr.Err, interrupt.ErrAnswer)
	assert.Equal(t, orig.Error(), idErr.Error())
}

// An IDError whose cause is no known sentinel keeps its id and the cause's
// text.
func TestErrorCodec_RestoresIDErrorWithUnknownCause(t *testing.T) {
	c := newCodec(t)
	orig := &interrupt.IDError{ID: "i8", Err: errors.New("invalid character 'x'")}
	got := overWire(t, c, c, orig)
	assertMatchesExactly(t, got)

	var idErr *interrupt.IDError
	require.ErrorAs(t, got, &idErr)
	assert.Equal(t, "i8", idErr.ID)
	assert.Equal(t, "invalid character 'x'", idErr.Err.Error())
	assert.ErrorIs(t, idErr.Err, actors.ErrRemote)
}

// SPEC I7: content given while interrupted is a ContentError with its
// content types and whether responses were mixed in.
func TestErrorCodec_RestoresContentError(t *testing.T) {
	c := newCodec(t)
	for _, orig := range []*interrupt.ContentError{
		{Types: []string{"text", "image"}},
		{Types: []string{"text"}, Mixed: true},
	} {
		err := fmt.Errorf("invoke: %w", orig)
		got := overWire(t, c, c, err)
		assert.Equal(t, err.Error(), got.Error())
		if orig.Mixed {
			assertMatchesExactly(t, got, interrupt.ErrMixedInput)
		} else {
			assertMatchesExactly(t, got, interrupt.ErrResumeRequired)
		}

		var ce *interrupt.ContentError
		require.ErrorAs(t, got, &ce)
		assert.Equal(t, orig.Types, ce.Types)
		assert.Equal(t, orig.Mixed, ce.Mixed)
	}
}

// SPEC I4: a duplicate interrupt name is a DuplicateNameError with the name.
func TestErrorCodec_RestoresDuplicateNameError(t *testing.T) {
	c := newCodec(t)
	orig := &interrupt.DuplicateNameError{Name: "approve"}
	got := overWire(t, c, c, errors.Join(errors.New("hook failed"), orig))
	assertMatchesExactly(t, got, interrupt.ErrDuplicateName)

	var dn *interrupt.DuplicateNameError
	require.ErrorAs(t, got, &dn)
	assert.Equal(t, "approve", dn.Name)
	assert.Equal(t, orig.Error(), dn.Error())
}

// SPEC S5: a DamageError keeps its key and part, and its cause keeps its
// text and sentinels, including extra codes registered by another package.
func TestErrorCodec_RestoresDamageError(t *testing.T) {
	errSnapshot := errors.New("invalid snapshot")
	c := newCodec(t, actors.ErrorCode{Code: "test.ErrSnapshot", Err: errSnapshot})
	key := persistence.Key{SessionID: "s1", Kind: "agent", ID: "a1"}
	for _, tc := range []struct {
		name string
		orig *persistence.DamageError
		want []error
	}{
		{"damaged", persistence.Damaged(key, "message 3", "truncated JSON"), nil},
		{"schema", persistence.SchemaDamage(key, "record", 99), []error{persistence.ErrSchemaVersion}},
		{"extra sentinel", &persistence.DamageError{Key: key, Part: "pending work",
			Err: fmt.Errorf("%w: %v", errSnapshot, errors.New("unknown field"))}, []error{errSnapshot}},
		{"bare sentinel", &persistence.DamageError{Key: key, Part: "record", Err: errSnapshot}, []error{errSnapshot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fmt.Errorf("open session: %w", tc.orig)
			got := overWire(t, c, c, err)
			assert.Equal(t, err.Error(), got.Error())
			assertMatchesExactly(t, got, append(tc.want, persistence.ErrDamaged)...)
			for _, s := range tc.want {
				assert.ErrorIs(t, got, s)
			}

			var de *persistence.DamageError
			require.ErrorAs(t, got, &de)
			assert.Equal(t, key, de.Key)
			assert.Equal(t, tc.orig.Part, de.Part)
			require.Error(t, de.Err)
			assert.Equal(t, tc.orig.Err.Error(), de.Err.Error())
			for _, s := range tc.want {
				assert.ErrorIs(t, de.Err, s)
			}
			assert.Equal(t, tc.orig.Error(), de.Error())
		})
	}
}

// Context errors from real contexts survive, wrapped or not.
func TestErrorCodec_KeepsContextErrors(t *testing.T) {
	c := newCodec(t)
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("user pressed stop"))
	expired, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()

	got := overWire(t, c, c, cancelled.Err())
	assertMatchesExactly(t, got, context.Canceled)
	got = overWire(t, c, c, fmt.Errorf("model call: %w", expired.Err()))
	assert.Equal(t, "model call: context deadline exceeded", got.Error())
	assertMatchesExactly(t, got, context.DeadlineExceeded)
}

// Extra codes given to NewErrorCodec are carried like the built-in ones; a
// receiver that does not know a code keeps the message and matches only
// ErrRemote.
func TestErrorCodec_CarriesExtraCodes(t *testing.T) {
	errCancelled := errors.New("invocation cancelled")
	errBusy := errors.New("agent busy")
	c := newCodec(t,
		actors.ErrorCode{Code: "test.ErrCancelled", Err: errCancelled},
		actors.ErrorCode{Code: "test.ErrBusy", Err: errBusy})
	err := fmt.Errorf("invoke: %w", fmt.Errorf("%w: %w", errCancelled, context.Canceled))

	got := overWire(t, c, c, err)
	assert.Equal(t, err.Error(), got.Error())
	assert.ErrorIs(t, got, errCancelled)
	assert.ErrorIs(t, got, context.Canceled)
	assert.NotErrorIs(t, got, errBusy)

	plain := newCodec(t)
	got = overWire(t, c, plain, err)
	assert.Equal(t, err.Error(), got.Error())
	assert.NotErrorIs(t, got, errCancelled)
	assertMatchesExactly(t, got, context.Canceled)
}

// An unknown code, or an error that matches no known sentinel, decodes to
// an error with the message that matches ErrRemote only.
func TestErrorCodec_UnknownCodeMatchesOnlyErrRemote(t *testing.T) {
	c := newCodec(t)
	got := c.Decode(marshalled(t, &braidv1.Error{Code: "other.ErrSomething", Message: "something: went wrong", Causes: []string{"other.ErrElse"}}))
	require.Error(t, got)
	assert.Equal(t, "something: went wrong", got.Error())
	assert.ErrorIs(t, got, actors.ErrRemote)
	assertMatchesExactly(t, got)

	plain := errors.New("disk full")
	w := c.Encode(plain)
	assert.Empty(t, w.GetCode())
	assert.Empty(t, w.GetCauses())
	got = c.Decode(marshalled(t, w))
	assert.Equal(t, "disk full", got.Error())
	assert.ErrorIs(t, got, actors.ErrRemote)
	assertMatchesExactly(t, got)
	var idErr *interrupt.IDError
	assert.False(t, errors.As(got, &idErr))
}

// Messages are kept byte for byte, even empty or odd ones.
func TestErrorCodec_KeepsMessagesExactly(t *testing.T) {
	c := newCodec(t)
	for _, msg := range []string{"", " padded \n", "ünïcødé: <id> | \"quoted\"", "line1\nline2\ttab"} {
		got := overWire(t, c, c, fmt.Errorf("%s%w", msg, errors.New("")))
		assert.Equal(t, msg, got.Error())
		got = overWire(t, c, c, &interrupt.IDError{ID: msg, Err: interrupt.ErrUnknownID})
		assert.Equal(t, (&interrupt.IDError{ID: msg, Err: interrupt.ErrUnknownID}).Error(), got.Error())
	}
}

// Nil encodes to nil and decodes to nil.
func TestErrorCodec_NilIsNil(t *testing.T) {
	c := newCodec(t)
	assert.Nil(t, c.Encode(nil))
	assert.NoError(t, c.Decode(nil))
}

// A decoded error relayed to a third process encodes to the same wire form,
// codes unknown to the relay included.
func TestErrorCodec_RelayKeepsWireForm(t *testing.T) {
	errExtra := errors.New("extra")
	sender := newCodec(t, actors.ErrorCode{Code: "test.ErrExtra", Err: errExtra})
	relay := newCodec(t)
	key := persistence.Key{SessionID: "s", Kind: "multi_agent", ID: "g"}
	for _, err := range []error{
		fmt.Errorf("%w: %w", actors.ErrClosed, interrupt.ErrInterrupted),
		fmt.Errorf("%w: %w", interrupt.ErrInterrupted, actors.ErrClosed),
		fmt.Errorf("a: %w", &interrupt.IDError{ID: "x", Err: fmt.Errorf("%w: nan", interrupt.ErrAnswer)}),
		&interrupt.ContentError{Types: []string{"text"}, Mixed: true},
		&interrupt.DuplicateNameError{Name: "n"},
		&persistence.DamageError{Key: key, Part: "data", Err: fmt.Errorf("%w: %w", errExtra, persistence.ErrSchemaVersion)},
		errors.Join(errExtra, context.Canceled),
		errors.New("plain"),
	} {
		want := marshalled(t, sender.Encode(err))
		got := relay.Encode(relay.Decode(want))
		assert.True(t, proto.Equal(want, got), "%q: want %v, got %v", err, want, got)

		final := sender.Decode(marshalled(t, got))
		assert.Equal(t, err.Error(), final.Error())
		for _, s := range append(builtinSentinels, errExtra) {
			assert.Equal(t, errors.Is(err, s), errors.Is(final, s), "%q matching %q", err, s)
		}
	}
}

// NewErrorCodec refuses ambiguous or unusable registrations.
func TestErrorCodec_RejectsBadRegistration(t *testing.T) {
	errA := errors.New("a")
	for _, tc := range []struct {
		name  string
		extra []actors.ErrorCode
		names string
	}{
		{"code twice", []actors.ErrorCode{{"test.A", errA}, {"test.A", errors.New("b")}}, `"test.A"`},
		{"sentinel twice", []actors.ErrorCode{{"test.A", errA}, {"test.B", errA}}, `"test.B"`},
		{"built-in code", []actors.ErrorCode{{"interrupt.ErrInterrupted", errA}}, `"interrupt.ErrInterrupted"`},
		{"built-in sentinel", []actors.ErrorCode{{"test.Cancel", context.Canceled}}, `"test.Cancel"`},
		{"typed code", []actors.ErrorCode{{"interrupt.IDError", errA}}, `"interrupt.IDError"`},
		{"empty code", []actors.ErrorCode{{"", errA}}, `"a"`},
		{"nil sentinel", []actors.ErrorCode{{"test.Nil", nil}}, `"test.Nil"`},
		{"not comparable", []actors.ErrorCode{{"test.Slice", sliceError{"x"}}}, `"test.Slice"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := actors.NewErrorCodec(tc.extra...)
			assert.Nil(t, c)
			require.ErrorIs(t, err, actors.ErrBadErrorCode)
			assert.Contains(t, err.Error(), tc.names)
		})
	}
}

type sliceError []string

func (e sliceError) Error() string { return fmt.Sprint([]string(e)) }

// One codec serves many goroutines at once.
func TestErrorCodec_IsSafeForConcurrentUse(t *testing.T) {
	c := newCodec(t)
	err := fmt.Errorf("x: %w", &interrupt.IDError{ID: "i", Err: interrupt.ErrUnknownID})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				got := c.Decode(c.Encode(err))
				assert.ErrorIs(t, got, interrupt.ErrUnknownID)
			}
		})
	}
	wg.Wait()
}
