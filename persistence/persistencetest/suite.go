// Package persistencetest is the conformance suite every persistence.Store
// passes (SPEC S1–S5), and a benchmark of the costs that matter: call Run
// from a test and Bench from a benchmark.
//
//	func TestStore_Conformance(t *testing.T) {
//		persistencetest.Run(t, func(t *testing.T) persistencetest.Harness {
//			s := memory.New()
//			return persistencetest.Harness{Store: s, Tamper: ...}
//		})
//	}
//
// Every case uses fresh random session ids, so stores over shared data (a
// database server) may be reused. Stores must keep JSON text byte for byte.
package persistencetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// Harness is a store under test and a way to damage its stored data.
type Harness struct {
	Store persistence.Store
	// Tamper edits the record stored under key in place, bypassing every
	// check (an SQL UPDATE for SQL stores, memory.Store.Tamper for memory),
	// as a person editing the data by hand would. fn sees the record as
	// stored; it fails t if there is no such record.
	Tamper func(t *testing.T, key persistence.Key, fn func(*persistence.Record))
	// Exec runs one SQL statement ($1, $2, ... placeholders) on the
	// store's tables by hand, on a connection of its own, for damage only
	// tables can take (a message row of no record): SQL stores only. The
	// cases that need it are skipped when it is nil.
	Exec func(t *testing.T, stmt string, args ...any)
}

// NewHarness returns a harness for one test; the suite closes its store.
type NewHarness func(t *testing.T) Harness

// Run runs the whole suite, each case as a subtest on a fresh harness.
func Run(t *testing.T, newHarness NewHarness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"LoadMissing_IsNotFound", testLoadMissing},
		{"CreateAndUpdate_NumberVersions", testCreateAndLoad},
		{"Append_KeepsStoredMessages", testAppend},
		{"Rewrite_ReplacesTheTail", testRewrite},
		{"FromPastEnd_IsBadSaveAndChangesNothing", testFromPastEnd},
		{"StaleBase_ConflictsAndChangesNothing", testStale},
		{"CreateWhenExists_Conflicts", testCreateExists},
		{"Batch_CommitsEveryOwner", testBatch},
		{"Batch_OneStaleMemberWritesNothing", testBatchStale},
		{"Batch_BadShapeIsBadSaveBeforeIO", testBatchShape},
		{"TooLarge_RefusedBeforeIO", testTooLarge},
		{"ConcurrentWriters_LoseNoUpdate", testConcurrent},
		{"Keys_AreIsolated", testIsolation},
		{"BadIDs_RejectedBeforeIO", testBadIDs},
		{"BadData_RejectedAndNothingStored", testBadData},
		{"Damage_IsTypedAndLocal", testDamage},
		{"OtherSchema_NeverOverwritten", testSchema},
		{"S5_MessageRowsNotAsWritten_AreDamageNamingTheRecord", testMessageRows},
		{"S5_VersionNoSaveWrites_IsDamageAndNeverOverwritten", testBadVersion},
		{"S5_RecordUnderAKeyNoSaveWrites_IsDamageNamingIt", testBadKeyRow},
		{"S4_VersionsPast32Bits_SaveAsAnyOther", testBigVersion},
		{"JSON_KeptByteForByte", testExactJSON},
		{"ManyMessages_KeepOrder", testMany},
		{"Sync_AndDurableSave", testSync},
		{"Delete_Removes", testDelete},
		{"DeleteSession_RemovesEveryRecordOfTheSessionOnly", testDeleteSession},
		{"Incarnation_AWriterOfADeletedRecordConflictsWithItsNewOne", testIncarnation},
		{"Close_ThenErrClosed", testClose},
		{"CancelledContext_Fails", testCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			t.Cleanup(func() { _ = h.Store.Close() })
			tc.fn(t, h)
		})
	}
}

var bg = context.Background()

func newKey(kind persistence.Kind, id string) persistence.Key {
	return persistence.Key{SessionID: "s-" + uuid.NewString(), Kind: kind, ID: id}
}

func agentKey() persistence.Key { return newKey(persistence.KindAgent, "agent-1") }

func msg(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"user","content":[{"text":"message %d"}]}`, i))
}

func msgs(from, to int) []json.RawMessage {
	var out []json.RawMessage
	for i := from; i < to; i++ {
		out = append(out, msg(i))
	}
	return out
}

func data(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }

func save(t testing.TB, s persistence.Store, opts persistence.SaveOptions, changes ...persistence.Change) []int64 {
	t.Helper()
	v, err := s.Save(bg, opts, changes...)
	require.NoError(t, err)
	require.Len(t, v, len(changes))
	return v
}

func load(t testing.TB, s persistence.Store, k persistence.Key) *persistence.Record {
	t.Helper()
	r, err := s.Load(bg, k)
	require.NoError(t, err, "load %s", k)
	return r
}

// assertRecord checks a loaded record's version, data and messages, bytes
// for bytes.
func assertRecord(t *testing.T, r *persistence.Record, k persistence.Key, version int64, d json.RawMessage, ms []json.RawMessage) {
	t.Helper()
	assert.Equal(t, k, r.Key)
	assert.Equal(t, persistence.SchemaVersion, r.SchemaVersion)
	assert.Equal(t, version, r.Version)
	assert.Equal(t, string(d), string(r.Data))
	require.Len(t, r.Messages, len(ms))
	for i := range ms {
		assert.Equal(t, string(ms[i]), string(r.Messages[i]), "message %d", i)
	}
}

// SPEC S1: a record never saved is ErrNotFound; its session is empty.
func testLoadMissing(t *testing.T, h Harness) {
	_, err := h.Store.Load(bg, agentKey())
	assert.ErrorIs(t, err, persistence.ErrNotFound)
	recs, err := h.Store.Session(bg, agentKey().SessionID)
	require.NoError(t, err)
	assert.Empty(t, recs)
}

// SPEC S1, S4: versions start at 1 and grow by one per save; a record
// comes back as saved, with its schema version and time.
func testCreateAndLoad(t *testing.T, h Harness) {
	k := agentKey()
	before := time.Now()
	assert.Equal(t, []int64{1}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(1), Messages: msgs(0, 2)}))
	r := load(t, h.Store, k)
	assertRecord(t, r, k, 1, data(1), msgs(0, 2))
	assert.WithinRange(t, r.UpdatedAt, before.Add(-time.Minute), time.Now().Add(time.Minute))
	assert.Equal(t, []int64{2}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(2), From: 2}))
	assert.Equal(t, []int64{3}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2, Data: data(3), From: 2}))
	assertRecord(t, load(t, h.Store, k), k, 3, data(3), msgs(0, 2))
}

// SPEC S1: appending keeps the stored messages and adds the new ones.
func testAppend(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 3)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 3, Messages: msgs(3, 5)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2, Data: data(2), From: 5, Messages: msgs(5, 6)})
	assertRecord(t, load(t, h.Store, k), k, 3, data(2), msgs(0, 6))
}

// SPEC S1: a rewrite keeps the first From messages and replaces the rest.
func testRewrite(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 5)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 2, Messages: msgs(10, 11)})
	assertRecord(t, load(t, h.Store, k), k, 2, data(1), append(msgs(0, 2), msgs(10, 11)...))
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2, Data: data(2), From: 0})
	assertRecord(t, load(t, h.Store, k), k, 3, data(2), nil)
}

// SPEC S1: a change cannot keep more messages than are stored.
func testFromPastEnd(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 2)})
	_, err := h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 3, Messages: msgs(3, 4)})
	assert.ErrorIs(t, err, persistence.ErrBadSave)
	assertRecord(t, load(t, h.Store, k), k, 1, data(0), msgs(0, 2))
}

// assertConflict checks err is a *ConflictError about k.
func assertConflict(t *testing.T, err error, k persistence.Key, expected, actual int64) {
	t.Helper()
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, persistence.ConflictError{Key: k, Expected: expected, Actual: actual}, *ce)
}

// SPEC S4: a stale save fails with a conflict and changes nothing.
func testStale(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 1)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 1, Messages: msgs(1, 2)})
	for _, durable := range []bool{false, true} {
		_, err := h.Store.Save(bg, persistence.SaveOptions{Durable: durable},
			persistence.Change{Key: k, Base: 1, Data: data(9), From: 1, Messages: msgs(7, 9)})
		assertConflict(t, err, k, 1, 2)
	}
	_, err := h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: agentKey(), Base: 4, Data: data(9)})
	assert.ErrorIs(t, err, persistence.ErrConflict, "an update of a missing record")
	assertRecord(t, load(t, h.Store, k), k, 2, data(1), msgs(0, 2))
}

// SPEC S4: Base 0 creates; it conflicts with a stored record.
func testCreateExists(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 2)})
	_, err := h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(5), Messages: msgs(5, 6)})
	assertConflict(t, err, k, 0, 1)
	assertRecord(t, load(t, h.Store, k), k, 1, data(0), msgs(0, 2))
}

// owners returns three keys of one session: an orchestrator and two nodes.
func owners() []persistence.Key {
	g := newKey(persistence.KindMultiAgent, "graph")
	return []persistence.Key{g, {SessionID: g.SessionID, Kind: persistence.KindAgent, ID: "node-a"},
		{SessionID: g.SessionID, Kind: persistence.KindAgent, ID: "node-b"}}
}

// SPEC S4, M10: several owners of one session commit in one save.
func testBatch(t *testing.T, h Harness) {
	ks := owners()
	var cs []persistence.Change
	for i, k := range ks {
		cs = append(cs, persistence.Change{Key: k, Data: data(i), Messages: msgs(0, i)})
	}
	assert.Equal(t, []int64{1, 1, 1}, save(t, h.Store, persistence.SaveOptions{Durable: true}, cs...))
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: ks[1], Base: 1, Data: data(10), From: 1})
	v := save(t, h.Store, persistence.SaveOptions{},
		persistence.Change{Key: ks[2], Base: 1, Data: data(20), From: 2, Messages: msgs(2, 3)},
		persistence.Change{Key: ks[1], Base: 2, Data: data(11), From: 0, Messages: msgs(5, 6)})
	assert.Equal(t, []int64{2, 3}, v, "versions in the order of the changes")
	assertRecord(t, load(t, h.Store, ks[0]), ks[0], 1, data(0), nil)
	assertRecord(t, load(t, h.Store, ks[1]), ks[1], 3, data(11), msgs(5, 6))
	assertRecord(t, load(t, h.Store, ks[2]), ks[2], 2, data(20), msgs(0, 3))
}

// SPEC S4: a batch is all or nothing.
func testBatchStale(t *testing.T, h Harness) {
	ks := owners()
	fresh := persistence.Key{SessionID: ks[0].SessionID, Kind: persistence.KindAgent, ID: "node-c"}
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: ks[0], Data: data(0), Messages: msgs(0, 1)},
		persistence.Change{Key: ks[1], Data: data(0), Messages: msgs(0, 1)})
	for _, bad := range []persistence.Change{
		{Key: ks[1], Base: 7, Data: data(1), From: 1},       // stale
		{Key: ks[1], Base: 0, Data: data(1)},                // exists
		{Key: ks[2], Base: 1, Data: data(1)},                // missing
		{Key: ks[1], Base: 1, Data: data(1), From: 2},       // past the end
		{Key: ks[1], Base: 1, Data: json.RawMessage(`[1]`)}, // not an object
	} {
		_, err := h.Store.Save(bg, persistence.SaveOptions{Durable: true},
			persistence.Change{Key: ks[0], Base: 1, Data: data(1), From: 1, Messages: msgs(1, 3)},
			bad,
			persistence.Change{Key: fresh, Data: data(1), Messages: msgs(0, 1)})
		require.Error(t, err, "%+v", bad)
		if bad.Base == 7 {
			assertConflict(t, err, ks[1], 7, 1)
		}
		assertRecord(t, load(t, h.Store, ks[0]), ks[0], 1, data(0), msgs(0, 1))
		assertRecord(t, load(t, h.Store, ks[1]), ks[1], 1, data(0), msgs(0, 1))
		for _, k := range []persistence.Key{ks[2], fresh} {
			_, err = h.Store.Load(bg, k)
			assert.ErrorIs(t, err, persistence.ErrNotFound)
		}
	}
}

// SPEC S4: a save is one session's non-empty set of distinct keys; the
// check comes before any I/O, so a cancelled context does not hide it.
func testBatchShape(t *testing.T, h Harness) {
	a, b := agentKey(), agentKey()
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for _, ctx := range []context.Context{bg, cancelled} {
		for name, cs := range map[string][]persistence.Change{
			"no changes":   nil,
			"two sessions": {{Key: a, Data: data(0)}, {Key: b, Data: data(0)}},
			"a key twice":  {{Key: a, Data: data(0)}, {Key: a, Data: data(1)}},
			"negative":     {{Key: a, Base: -1, Data: data(0)}},
			"create keeps": {{Key: a, Data: data(0), From: 1}},
		} {
			_, err := h.Store.Save(ctx, persistence.SaveOptions{}, cs...)
			assert.ErrorIs(t, err, persistence.ErrBadSave, name)
		}
	}
	for _, k := range []persistence.Key{a, b} {
		_, err := h.Store.Load(bg, k)
		assert.ErrorIs(t, err, persistence.ErrNotFound)
	}
}

// SPEC S1, S4: a record's data or a message longer than
// persistence.MaxValueSize is refused before any I/O, with an error that
// matches ErrTooLarge and ErrBadSave, and nothing of its save is stored.
func testTooLarge(t *testing.T, h Harness) {
	big := make([]byte, persistence.MaxValueSize+1)
	copy(big, `{"a":"`)
	for i := 6; i < len(big)-2; i++ {
		big[i] = 'x'
	}
	copy(big[len(big)-2:], `"}`)
	a := agentKey()
	b := a
	b.ID = "agent-2"
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for _, ctx := range []context.Context{bg, cancelled} {
		for name, cs := range map[string][]persistence.Change{
			"data":            {{Key: a, Data: big}},
			"message":         {{Key: a, Data: data(0), Messages: []json.RawMessage{msg(0), big}}},
			"a batch's other": {{Key: a, Data: data(0)}, {Key: b, Data: data(0), Messages: []json.RawMessage{big}}},
		} {
			_, err := h.Store.Save(ctx, persistence.SaveOptions{}, cs...)
			assert.ErrorIs(t, err, persistence.ErrTooLarge, name)
			assert.ErrorIs(t, err, persistence.ErrBadSave, name)
		}
	}
	for _, k := range []persistence.Key{a, b} {
		_, err := h.Store.Load(bg, k)
		assert.ErrorIs(t, err, persistence.ErrNotFound)
	}
}

// SPEC S4: writers that retry on conflict lose no update.
func testConcurrent(t *testing.T, h Harness) {
	const writers, each = 8, 15
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
	errs := make(chan error, writers)
	for w := range writers {
		go func() { errs <- Increment(h.Store, k, each, w%2 == 0) }()
	}
	for range writers {
		require.NoError(t, <-errs)
	}
	r := load(t, h.Store, k)
	assert.Equal(t, int64(writers*each+1), r.Version)
	assert.Equal(t, string(data(writers*each)), string(r.Data))
	assert.Len(t, r.Messages, writers*each)
}

// Increment adds 1 to the counter of the record under k ({"n":N}, as the
// suite writes it) n times, appending a message each time, reloading and
// retrying on conflict: stores use it to race writers in several stores or
// processes over one database (SPEC S4). The record must exist.
func Increment(s persistence.Store, k persistence.Key, n int, durable bool) error {
	for done := 0; done < n; {
		r, err := s.Load(bg, k)
		if err != nil {
			return err
		}
		var d struct{ N int }
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return err
		}
		_, err = s.Save(bg, persistence.SaveOptions{Durable: durable}, persistence.Change{
			Key: k, Base: r.Version, Data: data(d.N + 1), From: len(r.Messages), Messages: msgs(d.N, d.N+1)})
		switch {
		case errors.Is(err, persistence.ErrConflict):
		case err != nil:
			return err
		default:
			done++
		}
	}
	return nil
}

// SPEC S4: records of other sessions, kinds and ids are untouched; Session
// lists one session's records in order; Sessions counts them.
func testIsolation(t *testing.T, h Harness) {
	a := newKey(persistence.KindAgent, "b")
	keys := []persistence.Key{a,
		{SessionID: a.SessionID, Kind: persistence.KindAgent, ID: "a"},
		{SessionID: a.SessionID, Kind: persistence.KindMultiAgent, ID: "a"},
		{SessionID: a.SessionID, Kind: persistence.KindAgent, ID: "c"},
		{SessionID: a.SessionID + "x", Kind: persistence.KindAgent, ID: "b"},
		{SessionID: a.SessionID[:len(a.SessionID)-1], Kind: persistence.KindAgent, ID: "b"},
	}
	for i, k := range keys {
		save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(i), Messages: msgs(i, i+2)})
	}
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: a, Base: 1, Data: data(100), From: 0, Messages: msgs(50, 51)})
	require.NoError(t, h.Store.Delete(bg, keys[1]))
	assertRecord(t, load(t, h.Store, a), a, 2, data(100), msgs(50, 51))
	for i, k := range keys[2:] {
		assertRecord(t, load(t, h.Store, k), k, 1, data(i+2), msgs(i+2, i+4))
	}
	recs, err := h.Store.Session(bg, a.SessionID)
	require.NoError(t, err)
	var got []persistence.Key
	for _, r := range recs {
		got = append(got, r.Key)
	}
	assert.Equal(t, []persistence.Key{keys[0], keys[3], keys[2]}, got, "ordered by kind and id")
	assertRecord(t, recs[0], a, 2, data(100), msgs(50, 51))
	assertRecord(t, recs[2], keys[2], 1, data(2), msgs(2, 4))

	infos, err := h.Store.Sessions(bg)
	require.NoError(t, err)
	assert.True(t, slices.IsSortedFunc(infos, func(x, y persistence.SessionInfo) int { return strings.Compare(x.SessionID, y.SessionID) }))
	counts := map[string]int{}
	for _, in := range infos {
		counts[in.SessionID] = in.Records
		if in.SessionID == a.SessionID {
			assert.WithinRange(t, in.UpdatedAt, time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
		}
	}
	assert.Equal(t, 3, counts[a.SessionID])
	assert.Equal(t, 1, counts[keys[4].SessionID])
	assert.Equal(t, 1, counts[keys[5].SessionID])
}

// SPEC S2: ids a store cannot keep alike are ErrBadID, before any I/O.
func testBadIDs(t *testing.T, h Harness) {
	good := agentKey()
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	bad := []string{"", strings.Repeat("x", 256), "\xff", "a/b", `a\b`, "a\x00b", "a\nb", "a\u0085b", "\x7f"}
	for _, ctx := range []context.Context{bg, cancelled} {
		for _, id := range bad {
			for _, k := range []persistence.Key{
				{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
				{SessionID: good.SessionID, Kind: persistence.KindAgent, ID: id},
			} {
				_, err := h.Store.Load(ctx, k)
				assert.ErrorIs(t, err, persistence.ErrBadID, "load %q", id)
				_, err = h.Store.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
				assert.ErrorIs(t, err, persistence.ErrBadID, "save %q", id)
				assert.ErrorIs(t, h.Store.Delete(ctx, k), persistence.ErrBadID, "delete %q", id)
			}
			_, err := h.Store.Session(ctx, id)
			assert.ErrorIs(t, err, persistence.ErrBadID, "session %q", id)
		}
		for _, kind := range []persistence.Kind{"", "tool", "Agent"} {
			k := persistence.Key{SessionID: good.SessionID, Kind: kind, ID: "a"}
			_, err := h.Store.Load(ctx, k)
			assert.ErrorIs(t, err, persistence.ErrBadID, "kind %q", kind)
			_, err = h.Store.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
			assert.ErrorIs(t, err, persistence.ErrBadID, "kind %q", kind)
		}
	}
	// The edges of what is allowed are ids like any other.
	for _, id := range []string{".", "..", "a b", " ", "é", "\u00a0", "a..b", "-"} {
		for _, k := range []persistence.Key{
			{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
			{SessionID: "edge-" + uuid.NewString(), Kind: persistence.KindMultiAgent, ID: id},
		} {
			save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(1)})
			assertRecord(t, load(t, h.Store, k), k, 1, data(1), nil)
			require.NoError(t, h.Store.Delete(bg, k), "%q", id)
		}
	}
	long := persistence.Key{SessionID: strings.Repeat("é", 109) + uuid.NewString() + "x", Kind: persistence.KindAgent, ID: strings.Repeat("z", 255)}
	require.Len(t, long.SessionID, 255)
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: long, Data: data(1)})
	assertRecord(t, load(t, h.Store, long), long, 1, data(1), nil)
}

// SPEC S5: data that is not JSON objects in UTF-8 is refused, naming the
// record to save, and nothing is stored.
func testBadData(t *testing.T, h Harness) {
	existing := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: existing, Data: data(0), Messages: msgs(0, 1)})
	bad := []string{``, `null`, `[1]`, `"x"`, `12`, `{`, `{"a":1}{`, "{\"a\":\"\xff\"}", "{\"a\":\"\x00\"}"}
	for _, b := range bad {
		for _, c := range []persistence.Change{
			{Key: agentKey(), Data: json.RawMessage(b)},
			{Key: agentKey(), Data: data(0), Messages: []json.RawMessage{msg(0), json.RawMessage(b)}},
			{Key: existing, Base: 1, Data: json.RawMessage(b), From: 1},
			{Key: existing, Base: 1, Data: data(1), From: 1, Messages: []json.RawMessage{json.RawMessage(b)}},
		} {
			_, err := h.Store.Save(bg, persistence.SaveOptions{}, c)
			var de *persistence.DamageError
			require.ErrorAs(t, err, &de, "%q", b)
			assert.ErrorIs(t, err, persistence.ErrDamaged)
			assert.Equal(t, "record to save", de.Part)
			assert.Equal(t, c.Key, de.Key)
			if c.Key != existing {
				_, err = h.Store.Load(bg, c.Key)
				assert.ErrorIs(t, err, persistence.ErrNotFound)
			}
		}
	}
	assertRecord(t, load(t, h.Store, existing), existing, 1, data(0), msgs(0, 1))
}

// damages are the ways the suite damages a stored record (SPEC S5). Each
// keeps the text valid UTF-8, which every store can hold.
var damages = []struct {
	name   string
	fn     func(r *persistence.Record)
	schema bool
}{
	{"bit flip in data", func(r *persistence.Record) { r.Data[0] ^= 0x01 }, false},
	{"bit flip at the end of data", func(r *persistence.Record) { r.Data[len(r.Data)-1] ^= 0x01 }, false},
	{"truncated data", func(r *persistence.Record) { r.Data = r.Data[:len(r.Data)/2] }, false},
	{"empty data", func(r *persistence.Record) { r.Data = r.Data[:0] }, false},
	{"data an array", func(r *persistence.Record) { r.Data = json.RawMessage(`[{"n":1}]`) }, false},
	{"truncated message", func(r *persistence.Record) { r.Messages[1] = r.Messages[1][:len(r.Messages[1])/2] }, false},
	{"bit flip in a message", func(r *persistence.Record) { r.Messages[2][0] ^= 0x01 }, false},
	{"message a string", func(r *persistence.Record) { r.Messages[0] = json.RawMessage(`"hi"`) }, false},
	{"schema version 2", func(r *persistence.Record) { r.SchemaVersion = 2 }, true},
	{"schema version 0", func(r *persistence.Record) { r.SchemaVersion = 0 }, true},
}

// SPEC S5: a damaged record is a *DamageError naming it, never a panic,
// and other sessions stay usable.
func testDamage(t *testing.T, h Harness) {
	for _, d := range damages {
		t.Run(strings.ReplaceAll(d.name, " ", "_"), func(t *testing.T) {
			k, other := agentKey(), agentKey()
			sibling := persistence.Key{SessionID: k.SessionID, Kind: persistence.KindMultiAgent, ID: "graph"}
			for _, x := range []persistence.Key{k, other, sibling} {
				save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: x, Data: json.RawMessage(`{"state":{"a":"b"},"n":1}`), Messages: msgs(0, 3)})
			}
			h.Tamper(t, k, d.fn)
			_, err := h.Store.Load(bg, k)
			assertDamage(t, err, k, d.schema)
			_, err = h.Store.Session(bg, k.SessionID)
			assertDamage(t, err, k, d.schema)

			r := load(t, h.Store, sibling)
			assert.Len(t, r.Messages, 3)
			for _, x := range []persistence.Key{other, sibling} {
				save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: x, Base: 1, Data: data(2), From: 3, Messages: msgs(3, 4)})
				assertRecord(t, load(t, h.Store, x), x, 2, data(2), msgs(0, 4))
			}
			_, err = h.Store.Sessions(bg)
			assert.NoError(t, err)
		})
	}
}

// SPEC S5: message rows that no save writes, edited in by hand (a seq
// below 0, a row of no record), are a *DamageError naming the record's
// session and owner, never a record of another schema version, a partial
// load or ErrNotFound; other records stay usable, and DeleteSession
// clears the damage so that the record can be created again.
func testMessageRows(t *testing.T, h Harness) {
	if h.Exec == nil {
		t.Skip("the store has no message rows")
	}
	for name, stmt := range map[string]string{
		"a seq edited to -1":       `UPDATE braid_messages SET seq = -1 WHERE session_id = $1 AND kind = $2 AND id = $3 AND seq = 2`,
		"a seq edited to -7":       `UPDATE braid_messages SET seq = -7 WHERE session_id = $1 AND kind = $2 AND id = $3 AND seq = 2`,
		"an extra row at seq -5":   `INSERT INTO braid_messages SELECT session_id, kind, id, -5, data FROM braid_messages WHERE session_id = $1 AND kind = $2 AND id = $3 AND seq = 0`,
		"rows of a deleted record": `DELETE FROM braid_records WHERE session_id = $1 AND kind = $2 AND id = $3`,
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			k := agentKey()
			sibling := persistence.Key{SessionID: k.SessionID, Kind: persistence.KindAgent, ID: "sibling"}
			for _, x := range []persistence.Key{k, sibling} {
				save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: x, Data: data(0), Messages: msgs(0, 3)})
			}
			h.Exec(t, stmt, k.SessionID, string(k.Kind), k.ID)
			_, err := h.Store.Load(bg, k)
			assertDamage(t, err, k, false)
			_, err = h.Store.Session(bg, k.SessionID)
			assertDamage(t, err, k, false)
			assertRecord(t, load(t, h.Store, sibling), sibling, 1, data(0), msgs(0, 3))
			_, err = h.Store.Sessions(bg)
			require.NoError(t, err)

			n, err := h.Store.DeleteSession(bg, k.SessionID)
			require.NoError(t, err)
			assert.Equal(t, 2, n, "both records removed, one left as its messages alone included")
			_, err = h.Store.Load(bg, k)
			assert.ErrorIs(t, err, persistence.ErrNotFound)
			save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(1), Messages: msgs(0, 3)})
			assertRecord(t, load(t, h.Store, k), k, 1, data(1), msgs(0, 3))
		})
	}
}

// SPEC S2, S5: a record row copied by hand under a key no save writes (a
// kind that is not one, an id with a path separator) is a *DamageError
// naming it when its session is read, never a record handed on under a
// key that every other call refuses; the session's other records load,
// the listing goes on, and DeleteSession clears it.
func testBadKeyRow(t *testing.T, h Harness) {
	if h.Exec == nil {
		t.Skip("the store takes no rows by hand")
	}
	for name, key := range map[string]func(k persistence.Key) persistence.Key{
		"a kind that is not one": func(k persistence.Key) persistence.Key { k.Kind = "bogus"; return k },
		"an id with a '/'":       func(k persistence.Key) persistence.Key { k.ID = "x/y"; return k },
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			k := agentKey()
			save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 1)})
			bad := key(k)
			h.Exec(t, `INSERT INTO braid_records (session_id, kind, id, schema_version, version, updated_at, data, messages, incarnation)
SELECT session_id, CAST($4 AS text), CAST($5 AS text), schema_version, version, updated_at, data, 0, incarnation FROM braid_records
WHERE session_id = $1 AND kind = $2 AND id = $3`, k.SessionID, string(k.Kind), k.ID, string(bad.Kind), bad.ID)
			_, err := h.Store.Session(bg, k.SessionID)
			assertDamage(t, err, bad, false)
			assertRecord(t, load(t, h.Store, k), k, 1, data(0), msgs(0, 1))
			_, err = h.Store.Sessions(bg)
			require.NoError(t, err)
			n, err := h.Store.DeleteSession(bg, k.SessionID)
			require.NoError(t, err)
			assert.Equal(t, 2, n)
		})
	}
}

// SPEC S5: a stored version no save writes (0, below 0, or the largest,
// which no save can follow), edited in by hand, is a *DamageError naming
// the record at load, never a record that loads and then cannot be saved
// (or saves a version that wrapped around); a save over it, a create
// included, is refused as damage and writes nothing. A save based on the
// largest version is ErrBadSave before any I/O.
func testBadVersion(t *testing.T, h Harness) {
	for _, v := range []int64{0, -3, math.MinInt64, math.MaxInt64} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			k := agentKey()
			save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 2), Incarnation: 4})
			h.Tamper(t, k, func(r *persistence.Record) { r.Version = v })
			_, err := h.Store.Load(bg, k)
			assertDamage(t, err, k, false)
			_, err = h.Store.Session(bg, k.SessionID)
			assertDamage(t, err, k, false)
			if v == 0 {
				_, err = h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(1), Incarnation: 4})
				assertDamage(t, err, k, false)
			}
			if v == math.MaxInt64 {
				_, err = h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: v, Data: data(1), From: 2, Incarnation: 4})
				assert.ErrorIs(t, err, persistence.ErrBadSave)
			}
			var stored persistence.Record
			h.Tamper(t, k, func(r *persistence.Record) { stored = *r })
			assert.Equal(t, v, stored.Version, "nothing written")
			assert.Equal(t, string(data(0)), string(stored.Data), "nothing written")
		})
	}
}

// SPEC S4: versions are 64-bit: a record past 2^31 versions (edited up,
// or long-lived) is appended to and rewritten like any other.
func testBigVersion(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 2), Incarnation: 4})
	const big = int64(1)<<32 + 5
	h.Tamper(t, k, func(r *persistence.Record) { r.Version = big })
	assertRecord(t, load(t, h.Store, k), k, big, data(0), msgs(0, 2))
	assert.Equal(t, []int64{big + 1}, save(t, h.Store, persistence.SaveOptions{},
		persistence.Change{Key: k, Base: big, Data: data(1), From: 2, Messages: msgs(2, 3), Incarnation: 4}))
	assert.Equal(t, []int64{big + 2}, save(t, h.Store, persistence.SaveOptions{Durable: true},
		persistence.Change{Key: k, Base: big + 1, Data: data(2), From: 1, Messages: msgs(5, 6), Incarnation: 4}))
	_, err := h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: big, Data: data(3), From: 2, Incarnation: 4})
	assertConflict(t, err, k, big, big+2)
	assertRecord(t, load(t, h.Store, k), k, big+2, data(2), append(msgs(0, 1), msgs(5, 6)...))
}

func assertDamage(t *testing.T, err error, k persistence.Key, schema bool) {
	t.Helper()
	var de *persistence.DamageError
	require.ErrorAs(t, err, &de)
	assert.ErrorIs(t, err, persistence.ErrDamaged)
	assert.Equal(t, k, de.Key)
	if schema {
		assert.ErrorIs(t, err, persistence.ErrSchemaVersion)
	} else {
		assert.NotErrorIs(t, err, persistence.ErrSchemaVersion)
	}
}

// SPEC S5: a record of another schema version is never overwritten, alone
// or in a batch, and the batch writes nothing.
func testSchema(t *testing.T, h Harness) {
	ks := owners()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: ks[0], Data: data(0), Messages: msgs(0, 2)},
		persistence.Change{Key: ks[1], Data: data(0), Messages: msgs(0, 2)})
	h.Tamper(t, ks[0], func(r *persistence.Record) { r.SchemaVersion = 2 })
	for _, cs := range [][]persistence.Change{
		{{Key: ks[0], Base: 1, Data: data(1), From: 2, Messages: msgs(2, 3)}},
		{{Key: ks[0], Base: 1, Data: data(1), From: 0}},
		{{Key: ks[1], Base: 1, Data: data(1), From: 2}, {Key: ks[0], Base: 1, Data: data(1), From: 2}},
	} {
		_, err := h.Store.Save(bg, persistence.SaveOptions{Durable: true}, cs...)
		assertDamage(t, err, ks[0], true)
	}
	var stored persistence.Record
	h.Tamper(t, ks[0], func(r *persistence.Record) { stored = *r })
	assert.Equal(t, 2, stored.SchemaVersion)
	assert.Equal(t, int64(1), stored.Version)
	assert.Equal(t, string(data(0)), string(stored.Data))
	assert.Equal(t, []string{string(msg(0)), string(msg(1))}, rawStrings(stored.Messages))
	_, err := h.Store.Load(bg, ks[0])
	assertDamage(t, err, ks[0], true)
	assertRecord(t, load(t, h.Store, ks[1]), ks[1], 1, data(0), msgs(0, 2))
}

func rawStrings(ms []json.RawMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// SPEC S2: records are JSON text, kept as written.
func testExactJSON(t *testing.T, h Harness) {
	k := agentKey()
	d := json.RawMessage("{ \"b\" : [1, 2.50, 1e400, -0],\n\t\"a\":\"\\u0000 \\ud83d\\ude00 é 😀 \\\" \\\\\", \"z\":{} }")
	ms := []json.RawMessage{json.RawMessage(`{"text":"\u0000"}`), json.RawMessage(" {\"k\":null} "), json.RawMessage(`{"a":1,"a":2}`)}
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: d, Messages: ms})
	assertRecord(t, load(t, h.Store, k), k, 1, d, ms)
}

// SPEC S1: long histories come back in order, and appends stay appends.
func testMany(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 1000)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 1000, Messages: msgs(1000, 1001)})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2, Data: data(2), From: 999, Messages: msgs(0, 450)})
	assertRecord(t, load(t, h.Store, k), k, 3, data(2), append(msgs(0, 999), msgs(0, 450)...))
}

// SPEC I9, S2: Sync and durable saves succeed, with and without saves
// before them; a save after Sync is as usual.
func testSync(t *testing.T, h Harness) {
	require.NoError(t, h.Store.Sync(bg))
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
	require.NoError(t, h.Store.Sync(bg))
	save(t, h.Store, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Base: 1, Data: data(1), Messages: msgs(0, 1)})
	require.NoError(t, h.Store.Sync(bg))
	require.NoError(t, h.Store.Sync(bg))
	assertRecord(t, load(t, h.Store, k), k, 2, data(1), msgs(0, 1))
}

// SPEC S1: Delete removes a record (a missing one is no error); the key
// can then be created again, from version 1.
func testDelete(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 3)})
	require.NoError(t, h.Store.Delete(bg, k))
	_, err := h.Store.Load(bg, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, h.Store.Delete(bg, k), "deleting a missing record")
	_, err = h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 0})
	assertConflict(t, err, k, 1, 0)
	assert.Equal(t, []int64{1}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(1), Messages: msgs(5, 6)}))
	assertRecord(t, load(t, h.Store, k), k, 1, data(1), msgs(5, 6))
}

// DeleteSession removes every record of one session, damaged ones and
// ones of another schema version included, and nothing of another
// session, and counts them; deleting it again, or a session never stored,
// is no error and counts 0; a writer that still holds a version of a
// deleted record conflicts while the record is gone; a bad id is ErrBadID
// before any I/O.
func testDeleteSession(t *testing.T, h Harness) {
	gone, kept := agentKey(), agentKey()
	ks := []persistence.Key{gone,
		{SessionID: gone.SessionID, Kind: persistence.KindAgent, ID: "damaged"},
		{SessionID: gone.SessionID, Kind: persistence.KindAgent, ID: "newer"},
		{SessionID: gone.SessionID, Kind: persistence.KindMultiAgent, ID: "graph"},
		kept}
	for _, k := range ks {
		save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 3)})
	}
	h.Tamper(t, ks[1], func(r *persistence.Record) { r.Data = json.RawMessage(`{"n":`) })
	h.Tamper(t, ks[2], func(r *persistence.Record) { r.SchemaVersion = 2 })

	n, err := h.Store.DeleteSession(bg, gone.SessionID)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	recs, err := h.Store.Session(bg, gone.SessionID)
	require.NoError(t, err)
	assert.Empty(t, recs)
	for _, k := range ks[:4] {
		_, err := h.Store.Load(bg, k)
		assert.ErrorIs(t, err, persistence.ErrNotFound, "%s", k)
	}
	infos, err := h.Store.Sessions(bg)
	require.NoError(t, err)
	for _, info := range infos {
		assert.NotEqual(t, gone.SessionID, info.SessionID)
	}
	assertRecord(t, load(t, h.Store, kept), kept, 1, data(0), msgs(0, 3))

	_, err = h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: gone, Base: 1, Data: data(1), From: 3})
	assertConflict(t, err, gone, 1, 0)
	for _, id := range []string{gone.SessionID, "never-stored-" + uuid.NewString()} {
		n, err := h.Store.DeleteSession(bg, id)
		require.NoError(t, err, "%q", id)
		assert.Zero(t, n, "%q", id)
	}
	for _, id := range []string{"", "a/b", "bad\xff"} {
		_, err := h.Store.DeleteSession(bg, id)
		assert.ErrorIs(t, err, persistence.ErrBadID, "%q", id)
	}
	assert.Equal(t, []int64{1}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: gone, Data: data(5)}),
		"a record created again starts from version 1 (of another incarnation: testIncarnation)")
}

// SPEC S4: a record keeps the incarnation it was created with; a save
// that names another (the record was deleted and created again since its
// base was read, so its version may be the base again) fails with a
// *ConflictError and changes nothing, whether it appends, rewrites or is
// part of a batch; incarnation 0 (records from before incarnations) is
// one like any other.
func testIncarnation(t *testing.T, h Harness) {
	k := agentKey()
	sibling := persistence.Key{SessionID: k.SessionID, Kind: persistence.KindMultiAgent, ID: "graph"}
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, 2), Incarnation: 7},
		persistence.Change{Key: sibling, Data: data(0), Incarnation: 8})
	r := load(t, h.Store, k)
	assert.Equal(t, int64(7), r.Incarnation)
	assert.Equal(t, int64(8), load(t, h.Store, sibling).Incarnation)
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1), From: 2, Messages: msgs(2, 3), Incarnation: 7})

	// Deleted and created again, by another writer, up to version 2.
	require.NoError(t, h.Store.Delete(bg, k))
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(10), Messages: msgs(10, 11), Incarnation: 9})
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(11), From: 1, Messages: msgs(11, 13), Incarnation: 9})
	want := load(t, h.Store, k)
	require.Equal(t, int64(2), want.Version)

	for name, cs := range map[string][]persistence.Change{
		"append":  {{Key: k, Base: 2, Data: data(2), From: 3, Messages: msgs(3, 4), Incarnation: 7}},
		"rewrite": {{Key: k, Base: 2, Data: data(2), From: 1, Messages: msgs(3, 4), Incarnation: 7}},
		"batch": {{Key: sibling, Base: 1, Data: data(1), Incarnation: 8},
			{Key: k, Base: 2, Data: data(2), From: 3, Messages: msgs(3, 4), Incarnation: 7}},
	} {
		_, err := h.Store.Save(bg, persistence.SaveOptions{Durable: true}, cs...)
		var ce *persistence.ConflictError
		require.ErrorAs(t, err, &ce, name)
		assert.ErrorIs(t, err, persistence.ErrConflict)
		assert.True(t, ce.Recreated, name)
		assert.Equal(t, k, ce.Key, name)
		assertRecord(t, load(t, h.Store, k), k, 2, data(11), append(msgs(10, 11), msgs(11, 13)...))
		assert.Equal(t, int64(1), load(t, h.Store, sibling).Version, "%s: the batch wrote nothing", name)
	}
	assert.Equal(t, []int64{3}, save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 2, Data: data(3), From: 3, Incarnation: 9}))
	assert.Equal(t, int64(9), load(t, h.Store, k).Incarnation)

	// A record of incarnation 0, deleted and created again: its writer,
	// which names 0, conflicts too.
	old := persistence.Key{SessionID: k.SessionID, Kind: persistence.KindAgent, ID: "old"}
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: old, Data: data(0)})
	require.NoError(t, h.Store.Delete(bg, old))
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: old, Data: data(1), Incarnation: 5})
	_, err := h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: old, Base: 1, Data: data(2)})
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.True(t, ce.Recreated)
	assertRecord(t, load(t, h.Store, old), old, 1, data(1), nil)
}

// Every call after Close fails with ErrClosed.
func testClose(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
	require.NoError(t, h.Store.Close())
	_, err := h.Store.Load(bg, k)
	assert.ErrorIs(t, err, persistence.ErrClosed)
	_, err = h.Store.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Base: 1, Data: data(1)})
	assert.ErrorIs(t, err, persistence.ErrClosed)
	assert.ErrorIs(t, h.Store.Sync(bg), persistence.ErrClosed)
	assert.ErrorIs(t, h.Store.Delete(bg, k), persistence.ErrClosed)
	_, err = h.Store.DeleteSession(bg, k.SessionID)
	assert.ErrorIs(t, err, persistence.ErrClosed)
	_, err = h.Store.Session(bg, k.SessionID)
	assert.ErrorIs(t, err, persistence.ErrClosed)
	_, err = h.Store.Sessions(bg)
	assert.ErrorIs(t, err, persistence.ErrClosed)
}

// SPEC S4: a call whose context has ended fails with its error and
// changes nothing: every call, alike in every store (a Delete with an
// ended context deletes nothing).
func testCancelled(t *testing.T, h Harness) {
	k := agentKey()
	save(t, h.Store, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0)})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := h.Store.Load(ctx, k)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = h.Store.Save(ctx, persistence.SaveOptions{Durable: true}, persistence.Change{Key: k, Base: 1, Data: data(1)})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, h.Store.Sync(ctx), context.Canceled)
	_, err = h.Store.DeleteSession(ctx, k.SessionID)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, h.Store.Delete(ctx, k), context.Canceled)
	_, err = h.Store.Session(ctx, k.SessionID)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = h.Store.Sessions(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assertRecord(t, load(t, h.Store, k), k, 1, data(0), nil)
}

// Bench measures what a session costs (SPEC S1): appending one message to
// histories of 10 to 10000 messages, durable and not (the time must not
// grow with the history), and durable saves from 32 goroutines on
// distinct sessions (which a store may commit in groups).
func Bench(b *testing.B, newStore func(b *testing.B) persistence.Store) {
	for _, durable := range []bool{false, true} {
		mode := map[bool]string{false: "nondurable", true: "durable"}[durable]
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(fmt.Sprintf("Append/%s/history=%d", mode, n), func(b *testing.B) {
				s := newStore(b)
				defer s.Close()
				k := agentKey()
				save(b, s, persistence.SaveOptions{}, persistence.Change{Key: k, Data: data(0), Messages: msgs(0, n)})
				m := msg(0)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					_, err := s.Save(bg, persistence.SaveOptions{Durable: durable}, persistence.Change{
						Key: k, Base: int64(i + 1), Data: data(i), From: n + i, Messages: []json.RawMessage{m}})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("Parallel32/durable", func(b *testing.B) {
		const workers = 32
		s := newStore(b)
		defer s.Close()
		keys := make([]persistence.Key, workers)
		for i := range keys {
			keys[i] = agentKey()
			save(b, s, persistence.SaveOptions{}, persistence.Change{Key: keys[i], Data: data(0), Messages: msgs(0, 10)})
		}
		var left atomic.Int64
		left.Store(int64(b.N))
		take := func() bool { return left.Add(-1) >= 0 }
		errs := make(chan error, workers)
		b.ResetTimer()
		for _, k := range keys {
			go func() {
				v := int64(1)
				for take() {
					_, err := s.Save(bg, persistence.SaveOptions{Durable: true}, persistence.Change{
						Key: k, Base: v, Data: data(int(v)), From: int(v) + 9, Messages: []json.RawMessage{msg(0)}})
					if err != nil {
						errs <- err
						return
					}
					v++
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	})
}
