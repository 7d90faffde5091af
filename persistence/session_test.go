package persistence_test

// Unit tests of SessionManager over the memory store and the file store,
// through exported APIs only: skipped saves, AfterSave, durability per save
// point, conflicts, the Unchanged count, id checks and loading a missing
// record (SPEC S1, S2, S4).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

// spyStore wraps a Store and records every Save it forwards, and every
// Checkpoint (a durable point with nothing new to save). It forwards
// Checkpoint to the wrapped store when it has it, so wrapping hides nothing.
type spyStore struct {
	persistence.Store

	mu    sync.Mutex
	saves []spySave
	// durables records each Checkpoint's sync flag.
	durables []bool
}

type spySave struct {
	Key     persistence.Key
	Opts    persistence.SaveOptions
	Version int64
	Err     error
}

func (s *spyStore) Save(ctx context.Context, rec *persistence.Record, opts persistence.SaveOptions) (int64, error) {
	v, err := s.Store.Save(ctx, rec, opts)
	s.mu.Lock()
	s.saves = append(s.saves, spySave{Key: rec.Key, Opts: opts, Version: v, Err: err})
	s.mu.Unlock()
	return v, err
}

// Checkpoint records a request to bring key to its durable form, synced or
// not.
func (s *spyStore) Checkpoint(ctx context.Context, key persistence.Key, sync bool) error {
	s.mu.Lock()
	s.durables = append(s.durables, sync)
	s.mu.Unlock()
	if c, ok := s.Store.(persistence.Checkpointer); ok {
		return c.Checkpoint(ctx, key, sync)
	}
	return nil
}

func (s *spyStore) saveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saves)
}

// durableRequests returns how many Checkpoint calls the spy saw, and
// how many of them asked for a sync.
func (s *spyStore) durableRequests() (all, synced int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sy := range s.durables {
		if sy {
			synced++
		}
	}
	return len(s.durables), synced
}

// asksSync reports whether a save asks the store to survive a machine crash
// before it returns: Durable, unless NoSync leaves the sync out.
func asksSync(o persistence.SaveOptions) bool { return o.Durable && !o.NoSync }

func (s *spyStore) last(t *testing.T) spySave {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.saves)
	return s.saves[len(s.saves)-1]
}

// sessionStores are the stores every test runs against. The file store's
// root is returned so tests can look at the folder.
var sessionStores = []struct {
	name string
	open func(t *testing.T) (persistence.Store, string)
}{
	{"memory", func(t *testing.T) (persistence.Store, string) { return persistence.NewMemoryStore(), "" }},
	{"file", func(t *testing.T) (persistence.Store, string) {
		root := t.TempDir()
		st, err := persistence.NewFileStore(root)
		require.NoError(t, err)
		return st, root
	}},
}

func forEachStore(t *testing.T, fn func(t *testing.T, open func() (*spyStore, string))) {
	for _, sc := range sessionStores {
		t.Run(sc.name, func(t *testing.T) {
			fn(t, func() (*spyStore, string) {
				st, root := sc.open(t)
				return &spyStore{Store: st}, root
			})
		})
	}
}

const smSession = "sm-session"
const smAgent = "agent-1"

func smKey() persistence.Key {
	return persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
}

func newManager(t *testing.T, st persistence.Store, opts ...persistence.ManagerOption) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, smSession, opts...)
	require.NoError(t, err)
	return m
}

// agentRec builds a record with state {"n": n} and the given messages.
func agentRec(n int, msgs ...model.Message) *persistence.AgentRecord {
	return &persistence.AgentRecord{
		Messages: msgs,
		State:    map[string]json.RawMessage{"n": json.RawMessage(jsonInt(n))},
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// userMsgs returns alternating user and assistant text messages.
func userMsgs(ss ...string) []model.Message {
	out := make([]model.Message, len(ss))
	for i, s := range ss {
		if i%2 == 0 {
			out[i] = model.UserText(s)
		} else {
			out[i] = model.AssistantText(s)
		}
	}
	return out
}

func saveOK(t *testing.T, m *persistence.SessionManager, rec *persistence.AgentRecord, p persistence.SavePoint) {
	t.Helper()
	require.NoError(t, m.SaveAgent(context.Background(), smAgent, rec, p))
}

func storedVersion(t *testing.T, st persistence.Store) int64 {
	t.Helper()
	r, err := st.Load(context.Background(), smKey())
	require.NoError(t, err)
	return r.Version
}

// SPEC S1: a save with nothing changed since the last save (or load) is
// skipped: the store is not written and the version does not move, at any
// save point.
func TestSessionManager_UnchangedSaveIsSkipped(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		ctx := context.Background()
		st, _ := open()
		m := newManager(t, st)
		saveOK(t, m, agentRec(1, userMsgs("hi", "hello")...), persistence.SaveMessage)
		require.Equal(t, 1, st.saveCount())
		require.Equal(t, int64(1), m.Version(persistence.KindAgent, smAgent))

		// An equal record, built afresh, at every save point.
		for _, p := range []persistence.SavePoint{persistence.SaveMessage, persistence.SaveResume,
			persistence.SaveToolResult, persistence.SaveInterrupt, persistence.SaveInvocation} {
			rec := agentRec(1, userMsgs("hi", "hello")...)
			rec.Interrupts = interrupt.NewState()
			saveOK(t, m, rec, p)
		}
		assert.Equal(t, 1, st.saveCount(), "no write for unchanged records")
		assert.Equal(t, int64(1), m.Version(persistence.KindAgent, smAgent))
		assert.Equal(t, int64(1), storedVersion(t, st))

		// A fresh manager that loaded the record skips saving it unchanged.
		m2 := newManager(t, st)
		rec, err := m2.LoadAgent(ctx, smAgent)
		require.NoError(t, err)
		require.NotNil(t, rec)
		require.NoError(t, m2.SaveAgent(ctx, smAgent, rec, persistence.SaveInvocation))
		assert.Equal(t, 1, st.saveCount(), "a loaded record saved unchanged is not written")
		assert.Equal(t, int64(1), storedVersion(t, st))

		// Any change is written.
		rec.State["n"] = json.RawMessage("2")
		require.NoError(t, m2.SaveAgent(ctx, smAgent, rec, persistence.SaveMessage))
		assert.Equal(t, 2, st.saveCount())
		assert.Equal(t, int64(2), storedVersion(t, st))
		rec.Interrupts.Register(interrupt.Interrupt{ID: "i1", Name: "n1", Source: interrupt.SourceHook})
		require.NoError(t, m2.SaveAgent(ctx, smAgent, rec, persistence.SaveMessage))
		assert.Equal(t, 3, st.saveCount(), "a change of the interrupt state is written")
		rec.Pending = json.RawMessage(`{"kind":"tools"}`)
		require.NoError(t, m2.SaveAgent(ctx, smAgent, rec, persistence.SaveMessage))
		assert.Equal(t, 4, st.saveCount(), "a change of the pending work is written")
		assert.Equal(t, int64(4), storedVersion(t, st))
	})
}

// SPEC S1, I9: a save skipped at a durable point still makes the earlier
// non-durable saves durable (it asks the store to sync them, through Sync or
// Checkpoint where the store has one) without a new version; a save skipped
// at a non-durable point asks nothing; under NoFsync nothing asks for a sync.
func TestSessionManager_SkippedDurableSaveSyncsEarlierSaves(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		for _, noFsync := range []bool{false, true} {
			st, _ := open()
			var opts []persistence.ManagerOption
			if noFsync {
				opts = append(opts, persistence.NoFsync())
			}
			m := newManager(t, st, opts...)
			saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveMessage)
			saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveToolResult)
			all, _ := st.durableRequests()
			assert.Equal(t, 0, all, "nothing asked for a skipped non-durable save")
			saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveInvocation)
			assert.Equal(t, 1, st.saveCount(), "skipped: no Save")
			assert.Equal(t, int64(1), storedVersion(t, st), "skipped: the version does not move")
			_, synced := st.durableRequests()
			if noFsync {
				assert.Equal(t, 0, synced, "NoFsync: no sync asked")
			} else {
				assert.Equal(t, 1, synced, "a skipped durable save makes the earlier saves durable")
			}
		}
	})
}

// SPEC S1, I9: a durable point with nothing new right after a durable save
// (an interrupt save, then the end of the invocation) asks the store for
// nothing: the saves are durable already. After a non-durable save, or a
// load, it asks again.
func TestSessionManager_DurablePointAfterDurableSaveAsksNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		st, _ := open()
		m := newManager(t, st)
		saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveMessage)
		saveOK(t, m, agentRec(2, userMsgs("hi")...), persistence.SaveInterrupt)
		saveOK(t, m, agentRec(2, userMsgs("hi")...), persistence.SaveInvocation)
		_, synced := st.durableRequests()
		assert.Equal(t, 0, synced, "the interrupt save was durable")
		assert.Equal(t, 2, st.saveCount())

		saveOK(t, m, agentRec(3, userMsgs("hi")...), persistence.SaveMessage)
		saveOK(t, m, agentRec(3, userMsgs("hi")...), persistence.SaveInvocation)
		_, synced = st.durableRequests()
		assert.Equal(t, 1, synced, "a non-durable save came between")
		saveOK(t, m, agentRec(3, userMsgs("hi")...), persistence.SaveInvocation)
		_, synced = st.durableRequests()
		assert.Equal(t, 1, synced, "the checkpoint made it durable")

		m2 := newManager(t, st)
		_, err := m2.LoadAgent(context.Background(), smAgent)
		require.NoError(t, err)
		saveOK(t, m2, agentRec(3, userMsgs("hi")...), persistence.SaveInvocation)
		_, synced = st.durableRequests()
		assert.Equal(t, 2, synced, "a manager that only loaded does not know how the record was saved")
	})
}

type afterSaveCall struct {
	Key     persistence.Key
	Point   persistence.SavePoint
	Version int64
}

// SPEC S1: AfterSave is called once per real save, after it, with the key,
// the save point and the new version; not for skipped or failed saves.
func TestSessionManager_AfterSaveOncePerRealSave(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		ctx := context.Background()
		st, _ := open()
		var mu sync.Mutex
		var calls []afterSaveCall
		m := newManager(t, st, persistence.AfterSave(func(k persistence.Key, p persistence.SavePoint, v int64) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, afterSaveCall{k, p, v})
		}))
		other := newManager(t, st)
		_, err := other.LoadAgent(ctx, smAgent)
		require.NoError(t, err)

		saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveMessage)             // v1
		saveOK(t, m, agentRec(1, userMsgs("hi")...), persistence.SaveInvocation)          // skipped
		saveOK(t, m, agentRec(2, userMsgs("hi")...), persistence.SaveToolResult)          // v2
		saveOK(t, m, agentRec(2, userMsgs("hi", "hello")...), persistence.SaveInterrupt)  // v3
		saveOK(t, m, agentRec(2, userMsgs("hi", "hello")...), persistence.SaveMessage)    // skipped
		saveOK(t, m, agentRec(3, userMsgs("hi", "hello")...), persistence.SaveResume)     // v4
		saveOK(t, m, agentRec(3, userMsgs("hi", "hello")...), persistence.SaveInvocation) // skipped

		// Failed saves call nothing: a stale save by another manager, and
		// one by m after someone else wrote.
		require.Error(t, other.SaveAgent(ctx, smAgent, agentRec(9), persistence.SaveMessage))
		m2 := newManager(t, st)
		rec, err := m2.LoadAgent(ctx, smAgent)
		require.NoError(t, err)
		rec.State["n"] = json.RawMessage("10")
		require.NoError(t, m2.SaveAgent(ctx, smAgent, rec, persistence.SaveMessage)) // v5, not m's
		require.ErrorIs(t, m.SaveAgent(ctx, smAgent, agentRec(11), persistence.SaveInvocation), persistence.ErrConflict)

		k := smKey()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []afterSaveCall{
			{k, persistence.SaveMessage, 1},
			{k, persistence.SaveToolResult, 2},
			{k, persistence.SaveInterrupt, 3},
			{k, persistence.SaveResume, 4},
		}, calls)
	})
}

// SPEC S1, I9: Interrupt and Invocation saves are durable (they ask the
// store for a sync), the others are not; under NoFsync no save asks for a
// sync.
func TestSessionManager_DurablePointsAndNoFsync(t *testing.T) {
	points := []persistence.SavePoint{persistence.SaveMessage, persistence.SaveResume,
		persistence.SaveToolResult, persistence.SaveInterrupt, persistence.SaveInvocation}
	durable := map[persistence.SavePoint]bool{persistence.SaveInterrupt: true, persistence.SaveInvocation: true}
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		for _, noFsync := range []bool{false, true} {
			st, _ := open()
			var opts []persistence.ManagerOption
			if noFsync {
				opts = append(opts, persistence.NoFsync())
			}
			m := newManager(t, st, opts...)
			for i, p := range points {
				saveOK(t, m, agentRec(i, userMsgs("hi")...), p) // a change each time: a real save
				require.Equal(t, i+1, st.saveCount())
				got := st.last(t).Opts
				assert.Equal(t, durable[p] && !noFsync, asksSync(got), "sync asked: point %s, NoFsync %v", p, noFsync)
				if !durable[p] {
					assert.False(t, got.Durable, "point %s is never durable", p)
				} else if !noFsync {
					assert.True(t, got.Durable, "point %s is durable", p)
				}
				assert.Equal(t, durable[p], p.Durable(), "SavePoint.Durable(%s)", p)
			}
		}
	})
}

// SPEC S4: two managers load one session; the first save wins, the
// second fails with a *ConflictError carrying both versions, and the stored
// record is the first one's.
func TestSessionManager_ConflictStaleSaveFails(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		for _, existing := range []bool{true, false} {
			name := "new record"
			if existing {
				name = "existing record"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				st, root := open()
				var base int64
				if existing {
					saveOK(t, newManager(t, st), agentRec(0, userMsgs("hi")...), persistence.SaveInvocation)
					base = 1
				}
				m1, m2 := newManager(t, st), newManager(t, st)
				r1, err := m1.LoadAgent(ctx, smAgent)
				require.NoError(t, err)
				r2, err := m2.LoadAgent(ctx, smAgent)
				require.NoError(t, err)
				assert.Equal(t, existing, r1 != nil && r2 != nil)

				first := agentRec(1, userMsgs("hi", "from one")...)
				require.NoError(t, m1.SaveAgent(ctx, smAgent, first, persistence.SaveMessage))
				var before map[string]string
				if root != "" {
					before = readTree(t, root)
				}
				err = m2.SaveAgent(ctx, smAgent, agentRec(2, userMsgs("hi", "from two", "more")...), persistence.SaveInterrupt)
				require.Error(t, err)
				assert.ErrorIs(t, err, persistence.ErrConflict)
				var ce *persistence.ConflictError
				require.True(t, errors.As(err, &ce), "%T %v", err, err)
				assert.Equal(t, smKey(), ce.Key)
				assert.Equal(t, base, ce.Expected, "the version m2 loaded")
				assert.Equal(t, base+1, ce.Actual, "the version m1 wrote")
				assert.Contains(t, err.Error(), smSession)
				assert.Equal(t, base, m2.Version(persistence.KindAgent, smAgent), "the failed save does not move m2's version")
				if root != "" {
					assert.Equal(t, before, readTree(t, root), "the stale save changed no file")
				}

				rec, err := newManager(t, st).LoadAgent(ctx, smAgent)
				require.NoError(t, err)
				require.NotNil(t, rec)
				assert.Equal(t, texts(first.Messages), texts(rec.Messages))
				assert.JSONEq(t, "1", string(rec.State["n"]))
				assert.Equal(t, base+1, storedVersion(t, st))

				// m1 goes on from its own save.
				require.NoError(t, m1.SaveAgent(ctx, smAgent, agentRec(3, userMsgs("hi", "from one")...), persistence.SaveInvocation))
				assert.Equal(t, base+2, storedVersion(t, st))
			})
		}
	})
}

// SPEC S1, S2: SaveOptions.Unchanged is the number of leading messages equal
// to those of the last save, so appending writes only the new ones; a
// replaced history counts 0; every save reads back exactly.
func TestSessionManager_UnchangedCountsLeadingMessages(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		ctx := context.Background()
		st, _ := open()
		m := newManager(t, st)
		steps := []struct {
			name      string
			rec       *persistence.AgentRecord
			unchanged int
		}{
			{"first save", agentRec(0, userMsgs("a", "b")...), 0},
			{"append two", agentRec(0, userMsgs("a", "b", "c", "d")...), 2},
			{"state only", agentRec(1, userMsgs("a", "b", "c", "d")...), 4},
			{"append one", agentRec(1, userMsgs("a", "b", "c", "d", "e")...), 4},
			{"replaced", agentRec(1, userMsgs("x", "y")...), 0},
			{"append after replace", agentRec(1, userMsgs("x", "y", "z")...), 2},
			{"first message changed", agentRec(1, userMsgs("X", "y", "z")...), 0},
			{"trimmed", agentRec(1, userMsgs("X")...), 1},
			{"emptied", agentRec(1), 0},
			{"refilled", agentRec(1, userMsgs("p", "q")...), 0},
		}
		for i, s := range steps {
			saveOK(t, m, s.rec, persistence.SaveMessage)
			require.Equal(t, i+1, st.saveCount(), s.name)
			last := st.last(t)
			assert.Equal(t, s.unchanged, last.Opts.Unchanged, s.name)
			assert.Equal(t, int64(i), last.Opts.Base, "%s: based on the last save", s.name)

			rec, err := newManager(t, st).LoadAgent(ctx, smAgent)
			require.NoError(t, err, s.name)
			assert.Equal(t, texts(s.rec.Messages), texts(rec.Messages), s.name)
		}
	})
}

// SPEC S2: NewSessionManager refuses a nil store and session ids that could
// escape the folder; agent ids are checked at load and save alike. Nothing
// is created on disk.
func TestSessionManager_RejectsNilStoreAndBadIDs(t *testing.T) {
	_, err := persistence.NewSessionManager(nil, "s")
	assert.Error(t, err, "nil store")

	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		ctx := context.Background()
		st, root := open()
		for _, id := range []string{"", ".", "..", "a/b", `a\b`, "a\x00b", "a\nb", "../escape"} {
			m, err := persistence.NewSessionManager(st, id)
			require.Error(t, err, "session id %q", id)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, persistence.ErrBadID, "session id %q", id)
			var ie *persistence.IDError
			require.True(t, errors.As(err, &ie), "session id %q: %T", id, err)
			assert.Equal(t, "session", ie.What)
		}
		for _, id := range []string{"ok", "my-app_1", "with space", "ünïcode"} {
			_, err := persistence.NewSessionManager(st, id)
			assert.NoError(t, err, "session id %q", id)
		}

		m := newManager(t, st)
		for _, id := range []string{"", "..", "a/b", `a\b`, "a\x00b"} {
			_, err := m.LoadAgent(ctx, id)
			assert.ErrorIs(t, err, persistence.ErrBadID, "load agent id %q", id)
			err = m.SaveAgent(ctx, id, agentRec(1, userMsgs("hi")...), persistence.SaveMessage)
			assert.ErrorIs(t, err, persistence.ErrBadID, "save agent id %q", id)
		}
		assert.Equal(t, 0, st.saveCount(), "bad ids never reach the store's Save")
		if root != "" {
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing created on disk")
		}
	})
}

// SPEC S1: LoadAgent on a session without a record for the agent returns
// nil and no error, creates nothing, and the first save then creates the
// record (version 1).
func TestSessionManager_LoadWithoutRecordIsNil(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() (*spyStore, string)) {
		ctx := context.Background()
		st, root := open()
		m := newManager(t, st)
		rec, err := m.LoadAgent(ctx, smAgent)
		assert.NoError(t, err)
		assert.Nil(t, rec)
		assert.Equal(t, int64(0), m.Version(persistence.KindAgent, smAgent))
		if root != "" {
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			assert.Empty(t, entries, "loading creates nothing")
		}

		// Another agent of the same session has a record; this one still has none.
		require.NoError(t, m.SaveAgent(ctx, "other", agentRec(1, userMsgs("hi")...), persistence.SaveInvocation))
		rec, err = newManager(t, st).LoadAgent(ctx, smAgent)
		assert.NoError(t, err)
		assert.Nil(t, rec)

		saveOK(t, m, agentRec(1), persistence.SaveMessage)
		assert.Equal(t, int64(0), st.last(t).Opts.Base, "created from nothing")
		assert.Equal(t, int64(1), m.Version(persistence.KindAgent, smAgent))
		rec, err = newManager(t, st).LoadAgent(ctx, smAgent)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Empty(t, rec.Messages)
		require.NotNil(t, rec.Interrupts, "a loaded record always has an interrupt state")
		assert.Equal(t, 0, rec.Interrupts.Len())
		assert.Empty(t, rec.Pending)
	})
}
