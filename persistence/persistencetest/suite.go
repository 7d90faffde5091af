// Package persistencetest is the conformance suite every persistence.Store
// passes (SPEC S3, S4): call Run from a test with a function that returns a
// fresh store.
//
//	func TestFileStore(t *testing.T) {
//		persistencetest.Run(t, func(t *testing.T) persistence.Store { ... })
//	}
package persistencetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
)

// NewStore returns a store for one test. Stores that share data (files,
// databases) may return stores over the same data: the suite uses unique
// session ids.
type NewStore func(t *testing.T) persistence.Store

// Run runs the whole suite.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s persistence.Store)
	}{
		{"LoadMissingIsNotFound", testLoadMissing},
		{"CreateAndLoad", testCreateAndLoad},
		{"AppendKeepsUnchangedMessages", testAppend},
		{"RewriteReplacesHistory", testRewrite},
		{"StaleSaveConflictsAndChangesNothing", testStale},
		{"CreateWhenExistsConflicts", testCreateExists},
		{"ConcurrentWritersLoseNoUpdate", testConcurrent},
		{"KeysAreIsolated", testIsolation},
		{"BadIDsRejected", testBadIDs},
		{"BadRecordsRejected", testBadRecords},
		{"DeleteRemoves", testDelete},
		{"DurableSave", testDurable},
		{"ManyMessagesKeepOrder", testMany},
		{"JSONKeptExactly", testExactJSON},
		{"CancelledContext", testCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			tc.fn(t, s)
		})
	}
}

func key(t *testing.T) persistence.Key {
	return persistence.Key{SessionID: "s-" + uuid.NewString()[:8], Kind: persistence.KindAgent, ID: "agent-1"}
}

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

func record(k persistence.Key, data string, ms []json.RawMessage) *persistence.Record {
	return &persistence.Record{Key: k, SchemaVersion: persistence.SchemaVersion, Data: json.RawMessage(data), Messages: ms}
}

func save(t *testing.T, s persistence.Store, r *persistence.Record, opts persistence.SaveOptions) int64 {
	t.Helper()
	v, err := s.Save(context.Background(), r, opts)
	require.NoError(t, err)
	return v
}

func load(t *testing.T, s persistence.Store, k persistence.Key) *persistence.Record {
	t.Helper()
	r, err := s.Load(context.Background(), k)
	require.NoError(t, err)
	return r
}

func requireSameMessages(t *testing.T, want, got []json.RawMessage) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.JSONEq(t, string(want[i]), string(got[i]), "message %d", i)
	}
}

func testLoadMissing(t *testing.T, s persistence.Store) {
	_, err := s.Load(context.Background(), key(t))
	assert.ErrorIs(t, err, persistence.ErrNotFound)
}

func testCreateAndLoad(t *testing.T, s persistence.Store) {
	k := key(t)
	v := save(t, s, record(k, `{"a":1}`, msgs(0, 2)), persistence.SaveOptions{})
	assert.Equal(t, int64(1), v)
	r := load(t, s, k)
	assert.Equal(t, k, r.Key)
	assert.Equal(t, int64(1), r.Version)
	assert.Equal(t, persistence.SchemaVersion, r.SchemaVersion)
	assert.False(t, r.UpdatedAt.IsZero())
	assert.JSONEq(t, `{"a":1}`, string(r.Data))
	requireSameMessages(t, msgs(0, 2), r.Messages)
}

func testAppend(t *testing.T, s persistence.Store) {
	k := key(t)
	v := save(t, s, record(k, `{"n":1}`, msgs(0, 2)), persistence.SaveOptions{})
	v = save(t, s, record(k, `{"n":2}`, msgs(0, 5)), persistence.SaveOptions{Base: v, Unchanged: 2})
	assert.Equal(t, int64(2), v)
	v = save(t, s, record(k, `{"n":3}`, msgs(0, 5)), persistence.SaveOptions{Base: v, Unchanged: 5})
	r := load(t, s, k)
	assert.Equal(t, v, r.Version)
	assert.JSONEq(t, `{"n":3}`, string(r.Data))
	requireSameMessages(t, msgs(0, 5), r.Messages)
}

func testRewrite(t *testing.T, s persistence.Store) {
	k := key(t)
	v := save(t, s, record(k, `{}`, msgs(0, 4)), persistence.SaveOptions{})
	v = save(t, s, record(k, `{}`, msgs(10, 12)), persistence.SaveOptions{Base: v})
	requireSameMessages(t, msgs(10, 12), load(t, s, k).Messages)
	// Keep one, replace the rest with a shorter tail.
	mixed := append(msgs(10, 11), msgs(20, 21)...)
	save(t, s, record(k, `{}`, mixed), persistence.SaveOptions{Base: v, Unchanged: 1})
	requireSameMessages(t, mixed, load(t, s, k).Messages)
}

func testStale(t *testing.T, s persistence.Store) {
	k := key(t)
	v := save(t, s, record(k, `{"who":"first"}`, msgs(0, 1)), persistence.SaveOptions{})
	save(t, s, record(k, `{"who":"second"}`, msgs(0, 2)), persistence.SaveOptions{Base: v, Unchanged: 1})
	before := load(t, s, k)
	_, err := s.Save(context.Background(), record(k, `{"who":"stale"}`, msgs(0, 3)), persistence.SaveOptions{Base: v, Unchanged: 1})
	require.Error(t, err)
	assert.ErrorIs(t, err, persistence.ErrConflict)
	var ce *persistence.ConflictError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, k, ce.Key)
	assert.Equal(t, v, ce.Expected)
	assert.Equal(t, v+1, ce.Actual)
	after := load(t, s, k)
	assert.Equal(t, before.Version, after.Version)
	assert.JSONEq(t, string(before.Data), string(after.Data))
	requireSameMessages(t, before.Messages, after.Messages)
}

func testCreateExists(t *testing.T, s persistence.Store) {
	k := key(t)
	save(t, s, record(k, `{"x":1}`, nil), persistence.SaveOptions{})
	_, err := s.Save(context.Background(), record(k, `{"x":2}`, nil), persistence.SaveOptions{})
	assert.ErrorIs(t, err, persistence.ErrConflict)
	assert.JSONEq(t, `{"x":1}`, string(load(t, s, k).Data))
}

// SPEC S4: writers that load, change and save with their base version never
// lose an update: each success is counted exactly once.
func testConcurrent(t *testing.T, s persistence.Store) {
	k := key(t)
	save(t, s, record(k, `{"count":0}`, nil), persistence.SaveOptions{})
	const writers, rounds = 6, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	successes, conflicts := 0, 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				for {
					r, err := s.Load(context.Background(), k)
					if !assert.NoError(t, err) {
						return
					}
					var d struct{ Count int }
					if !assert.NoError(t, json.Unmarshal(r.Data, &d)) {
						return
					}
					next := record(k, fmt.Sprintf(`{"count":%d}`, d.Count+1), append(r.Messages, msg(w)))
					_, err = s.Save(context.Background(), next, persistence.SaveOptions{Base: r.Version, Unchanged: len(r.Messages)})
					if errors.Is(err, persistence.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					successes++
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	r := load(t, s, k)
	var d struct{ Count int }
	require.NoError(t, json.Unmarshal(r.Data, &d))
	assert.Equal(t, writers*rounds, successes)
	assert.Equal(t, successes, d.Count, "no update lost")
	assert.Len(t, r.Messages, successes, "one message per successful save")
	assert.Equal(t, int64(successes+1), r.Version)
	t.Logf("%d saves, %d conflicts", successes, conflicts)
}

func testIsolation(t *testing.T, s persistence.Store) {
	k := key(t)
	others := []persistence.Key{
		{SessionID: k.SessionID + "-other", Kind: k.Kind, ID: k.ID},
		{SessionID: k.SessionID, Kind: persistence.KindMultiAgent, ID: k.ID},
		{SessionID: k.SessionID, Kind: k.Kind, ID: "agent-2"},
	}
	save(t, s, record(k, `{"me":true}`, msgs(0, 1)), persistence.SaveOptions{})
	for i, o := range others {
		save(t, s, record(o, fmt.Sprintf(`{"other":%d}`, i), msgs(5, 7)), persistence.SaveOptions{})
	}
	r := load(t, s, k)
	assert.JSONEq(t, `{"me":true}`, string(r.Data))
	requireSameMessages(t, msgs(0, 1), r.Messages)
	for i, o := range others {
		assert.JSONEq(t, fmt.Sprintf(`{"other":%d}`, i), string(load(t, s, o).Data))
	}
}

// SPEC S2: ids that could escape a folder are refused everywhere.
func testBadIDs(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b", "x\ny", "/abs"} {
		for _, k := range []persistence.Key{
			{SessionID: id, Kind: persistence.KindAgent, ID: "a"},
			{SessionID: "s", Kind: persistence.KindAgent, ID: id},
		} {
			_, err := s.Load(ctx, k)
			assert.ErrorIs(t, err, persistence.ErrBadID, "load %q", id)
			_, err = s.Save(ctx, record(k, `{}`, nil), persistence.SaveOptions{})
			assert.ErrorIs(t, err, persistence.ErrBadID, "save %q", id)
			assert.ErrorIs(t, s.Delete(ctx, k), persistence.ErrBadID, "delete %q", id)
		}
	}
	_, err := s.Load(ctx, persistence.Key{SessionID: "s", Kind: "nope", ID: "a"})
	assert.ErrorIs(t, err, persistence.ErrBadID)
}

func testBadRecords(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	k := key(t)
	for name, tc := range map[string]struct {
		rec  *persistence.Record
		opts persistence.SaveOptions
	}{
		"data not an object":     {record(k, `[1]`, nil), persistence.SaveOptions{}},
		"data not JSON":          {record(k, `{"a":`, nil), persistence.SaveOptions{}},
		"message not an object":  {record(k, `{}`, []json.RawMessage{json.RawMessage(`"x"`)}), persistence.SaveOptions{}},
		"unchanged past the end": {record(k, `{}`, msgs(0, 1)), persistence.SaveOptions{Unchanged: 2}},
		"negative base":          {record(k, `{}`, nil), persistence.SaveOptions{Base: -1}},
		"other schema version": {&persistence.Record{Key: k, SchemaVersion: persistence.SchemaVersion + 1, Data: json.RawMessage(`{}`)},
			persistence.SaveOptions{}},
	} {
		_, err := s.Save(ctx, tc.rec, tc.opts)
		assert.Error(t, err, name)
	}
	_, err := s.Save(ctx, nil, persistence.SaveOptions{})
	assert.Error(t, err)
	_, err = s.Load(ctx, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound, "nothing was written")
}

func testDelete(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	k := key(t)
	save(t, s, record(k, `{}`, msgs(0, 3)), persistence.SaveOptions{})
	require.NoError(t, s.Delete(ctx, k))
	_, err := s.Load(ctx, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound)
	require.NoError(t, s.Delete(ctx, k), "deleting a missing record")
	v := save(t, s, record(k, `{"again":1}`, msgs(0, 1)), persistence.SaveOptions{})
	assert.Equal(t, int64(1), v, "a deleted record starts over")
	requireSameMessages(t, msgs(0, 1), load(t, s, k).Messages)
}

func testDurable(t *testing.T, s persistence.Store) {
	k := key(t)
	v := save(t, s, record(k, `{"d":1}`, msgs(0, 1)), persistence.SaveOptions{})
	v = save(t, s, record(k, `{"d":2}`, msgs(0, 2)), persistence.SaveOptions{Base: v, Unchanged: 1, Durable: true})
	r := load(t, s, k)
	assert.Equal(t, v, r.Version)
	requireSameMessages(t, msgs(0, 2), r.Messages)
}

func testMany(t *testing.T, s persistence.Store) {
	k := key(t)
	var v int64
	for i := 0; i < 100; i += 10 {
		v = save(t, s, record(k, `{}`, msgs(0, i+10)), persistence.SaveOptions{Base: v, Unchanged: i})
	}
	requireSameMessages(t, msgs(0, 100), load(t, s, k).Messages)
}

// Answers and reasons are JSON chosen by users: keys, order and escapes must
// survive a round trip.
func testExactJSON(t *testing.T, s persistence.Store) {
	k := key(t)
	data := `{"z":1,"a":{"y":"<&>","b":[null,true,1.50,"\u00e9"]}}`
	m := json.RawMessage(`{"role":"user","content":[{"text":"é \"q\" <b>"}]}`)
	save(t, s, record(k, data, []json.RawMessage{m}), persistence.SaveOptions{})
	r := load(t, s, k)
	var want, got any
	require.NoError(t, json.Unmarshal([]byte(data), &want))
	require.NoError(t, json.Unmarshal(r.Data, &got))
	assert.Equal(t, want, got)
	assert.JSONEq(t, string(m), string(r.Messages[0]))
}

func testCancelled(t *testing.T, s persistence.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := key(t)
	_, err := s.Save(ctx, record(k, `{}`, nil), persistence.SaveOptions{})
	assert.Error(t, err)
	_, err = s.Load(context.Background(), k)
	assert.ErrorIs(t, err, persistence.ErrNotFound)
}
