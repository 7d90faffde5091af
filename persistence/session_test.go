package persistence_test

// Unit tests of SessionManager and its writers over the memory store,
// through exported APIs only: what a save sends (only what changed), skipped
// saves, durable points, conflicts between writers, batch commits, id checks
// (SPEC S1, S2, S4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// spyStore wraps a Store and records every Save and Sync it forwards.
type spyStore struct {
	persistence.Store

	mu    sync.Mutex
	saves []spySave
	syncs int
}

type spySave struct {
	Opts    persistence.SaveOptions
	Changes []persistence.Change
	Err     error
}

func (s *spyStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	v, err := s.Store.Save(ctx, opts, changes...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, spySave{Opts: opts, Changes: changes, Err: err})
	return v, err
}

func (s *spyStore) Sync(ctx context.Context) error {
	s.mu.Lock()
	s.syncs++
	s.mu.Unlock()
	return s.Store.Sync(ctx)
}

func (s *spyStore) counts() (saves, syncs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saves), s.syncs
}

func (s *spyStore) last(t *testing.T) spySave {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.saves)
	return s.saves[len(s.saves)-1]
}

const (
	smSession = "sm-session"
	smAgent   = "sm-agent"
)

func newSpy() *spyStore { return &spyStore{Store: memory.New()} }

func newManager(t *testing.T, st persistence.Store, opts ...persistence.ManagerOption) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, smSession, opts...)
	require.NoError(t, err)
	return m
}

func openAgent(t *testing.T, m *persistence.SessionManager) (*persistence.AgentSession, *persistence.AgentRecord) {
	t.Helper()
	s, rec, err := m.OpenAgent(context.Background(), smAgent)
	require.NoError(t, err)
	return s, rec
}

func agentRec(n int, msgs ...model.Message) *persistence.AgentRecord {
	return &persistence.AgentRecord{
		Messages:   msgs,
		State:      map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprint(n))},
		Interrupts: interrupt.NewState(),
	}
}

func userMsgs(ss ...string) []model.Message {
	out := make([]model.Message, len(ss))
	for i, s := range ss {
		out[i] = model.UserText(s)
	}
	return out
}

func msgTexts(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text())
	}
	return out
}

// SPEC S1: appending sends only the new messages (From = stored count), so
// the cost of a save does not grow with the history; a save with nothing
// new is no save; what was saved reads back exactly.
func TestSessionManager_SaveSendsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	st := newSpy()
	s, rec := openAgent(t, newManager(t, st))
	require.Nil(t, rec)

	history := userMsgs("a", "b")
	require.NoError(t, s.Save(ctx, agentRec(1, history...), persistence.SaveMessage))
	c := st.last(t).Changes
	require.Len(t, c, 1)
	assert.Equal(t, int64(0), c[0].Base)
	assert.Equal(t, 0, c[0].From)
	assert.Len(t, c[0].Messages, 2)

	history = append(history, userMsgs("c")...)
	require.NoError(t, s.Save(ctx, agentRec(1, history...), persistence.SaveMessage))
	c = st.last(t).Changes
	assert.Equal(t, int64(1), c[0].Base)
	assert.Equal(t, 2, c[0].From, "the stored messages are not sent again")
	require.Len(t, c[0].Messages, 1)
	assert.JSONEq(t, `{"role":"user","content":[{"text":"c"}]}`, string(c[0].Messages[0]))

	saves, _ := st.counts()
	require.NoError(t, s.Save(ctx, agentRec(1, history...), persistence.SaveMessage))
	after, syncs := st.counts()
	assert.Equal(t, saves, after, "nothing new: no save")
	assert.Equal(t, 0, syncs)

	require.NoError(t, s.Save(ctx, agentRec(2, history...), persistence.SaveMessage))
	c = st.last(t).Changes
	assert.Equal(t, 3, c[0].From)
	assert.Empty(t, c[0].Messages, "a state change alone sends no message")

	_, got := openAgent(t, newManager(t, st))
	assert.Equal(t, []string{"a", "b", "c"}, msgTexts(got.Messages))
	assert.JSONEq(t, "2", string(got.State["n"]))
	assert.Equal(t, int64(3), s.Version())
}

// SPEC S1: a shorter history through Save is refused (a rewrite is its own
// call); Rewrite keeps the first keep messages and replaces the rest.
func TestSessionManager_RewriteIsExplicit(t *testing.T) {
	ctx := context.Background()
	st := newSpy()
	s, _ := openAgent(t, newManager(t, st))
	require.NoError(t, s.Save(ctx, agentRec(0, userMsgs("a", "b", "c")...), persistence.SaveMessage))

	err := s.Save(ctx, agentRec(0, userMsgs("a")...), persistence.SaveMessage)
	assert.ErrorIs(t, err, persistence.ErrBadSave)

	require.NoError(t, s.Rewrite(ctx, agentRec(0, userMsgs("a", "x")...), 1, persistence.SaveInvocation))
	c := st.last(t).Changes[0]
	assert.Equal(t, 1, c.From)
	assert.Len(t, c.Messages, 1)
	_, got := openAgent(t, newManager(t, st))
	assert.Equal(t, []string{"a", "x"}, msgTexts(got.Messages))

	require.NoError(t, s.Rewrite(ctx, agentRec(0, userMsgs("new")...), 0, persistence.SaveInvocation))
	_, got = openAgent(t, newManager(t, st))
	assert.Equal(t, []string{"new"}, msgTexts(got.Messages))
}

// SPEC I9: interrupt, invocation and tool-start saves are durable; message,
// resume and tool-result saves are not. A durable point with nothing new
// syncs the earlier saves once, and asks nothing after a durable save.
func TestSessionManager_DurablePoints(t *testing.T) {
	ctx := context.Background()
	for _, p := range []persistence.SavePoint{persistence.SaveMessage, persistence.SaveResume,
		persistence.SaveToolStart, persistence.SaveToolResult, persistence.SaveInterrupt, persistence.SaveInvocation} {
		st := newSpy()
		s, _ := openAgent(t, newManager(t, st))
		require.NoError(t, s.Save(ctx, agentRec(0, userMsgs("a")...), p))
		assert.Equal(t, p.Durable(), st.last(t).Opts.Durable, p)
	}

	st := newSpy()
	s, _ := openAgent(t, newManager(t, st))
	rec := agentRec(0, userMsgs("a")...)
	require.NoError(t, s.Save(ctx, rec, persistence.SaveMessage))
	require.NoError(t, s.Save(ctx, rec, persistence.SaveInvocation))
	saves, syncs := st.counts()
	assert.Equal(t, 1, saves)
	assert.Equal(t, 1, syncs, "the durable point made the earlier save durable")
	require.NoError(t, s.Save(ctx, rec, persistence.SaveInvocation))
	_, syncs = st.counts()
	assert.Equal(t, 1, syncs, "already durable: nothing asked")
}

// AfterSaveForTest runs once per committed save, never for skipped ones.
func TestSessionManager_AfterSaveOncePerCommittedSave(t *testing.T) {
	ctx := context.Background()
	var points []persistence.SavePoint
	var versions []int64
	m := newManager(t, memory.New(), persistence.AfterSaveForTest(func(k persistence.Key, p persistence.SavePoint, v int64) {
		points = append(points, p)
		versions = append(versions, v)
	}))
	s, _ := openAgent(t, m)
	rec := agentRec(0, userMsgs("a")...)
	require.NoError(t, s.Save(ctx, rec, persistence.SaveMessage))
	require.NoError(t, s.Save(ctx, rec, persistence.SaveInvocation))
	require.NoError(t, s.Save(ctx, agentRec(1, userMsgs("a")...), persistence.SaveInterrupt))
	assert.Equal(t, []persistence.SavePoint{persistence.SaveMessage, persistence.SaveInterrupt}, points)
	assert.Equal(t, []int64{1, 2}, versions)
}

// SPEC S4: two writers of one owner from one manager (two agents built on
// it) are two writers: the second's stale save fails with a
// *ConflictError naming the key and versions, and changes nothing.
func TestSessionManager_TwoWritersOfOneOwnerConflict(t *testing.T) {
	ctx := context.Background()
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			st := memory.New()
			m := newManager(t, st)
			var base int64
			if existing {
				s, _ := openAgent(t, m)
				require.NoError(t, s.Save(ctx, agentRec(0, userMsgs("hi")...), persistence.SaveInvocation))
				base = 1
			}
			w1, _ := openAgent(t, m)
			w2, _ := openAgent(t, m)
			require.NoError(t, w1.Save(ctx, agentRec(1, userMsgs("hi", "one")...), persistence.SaveResume))
			err := w2.Save(ctx, agentRec(2, userMsgs("hi", "two")...), persistence.SaveResume)
			require.ErrorIs(t, err, persistence.ErrConflict)
			var ce *persistence.ConflictError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Equal(t, persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}, ce.Key)
			assert.Equal(t, base, ce.Expected)
			assert.Equal(t, base+1, ce.Actual)
			assert.Equal(t, base, w2.Version(), "the failed save does not move the writer's version")

			_, got := openAgent(t, newManager(t, st))
			assert.Equal(t, []string{"hi", "one"}, msgTexts(got.Messages))
			assert.JSONEq(t, "1", string(got.State["n"]))
			require.NoError(t, w1.Save(ctx, agentRec(3, userMsgs("hi", "one")...), persistence.SaveInvocation), "the winner goes on")
		})
	}
}

// SPEC S4, M10: Commit saves several owners of one session in one
// transaction: a stale member fails the whole commit and nothing of it is
// written; the writers' versions move only on success.
func TestSessionManager_CommitIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	m := newManager(t, st)
	orch, _, err := m.Open(ctx, persistence.KindMultiAgent, "graph")
	require.NoError(t, err)
	node, _ := openAgent(t, m)
	stO, err := orch.Stage(json.RawMessage(`{"step":1}`), 0, nil)
	require.NoError(t, err)
	stN, err := node.StageAgent(agentRec(1, userMsgs("a")...), 0)
	require.NoError(t, err)
	require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, stO, stN))
	assert.Equal(t, int64(1), orch.Version())
	assert.Equal(t, int64(1), node.Version())

	// Another writer moves the node on: the next batch is stale as a whole.
	other, _ := openAgent(t, m)
	require.NoError(t, other.Save(ctx, agentRec(9, userMsgs("a")...), persistence.SaveMessage))
	stO, err = orch.Stage(json.RawMessage(`{"step":2}`), 0, nil)
	require.NoError(t, err)
	stN, err = node.StageAgent(agentRec(2, userMsgs("a", "b")...), 1)
	require.NoError(t, err)
	err = m.Commit(ctx, persistence.SaveInvocation, stO, stN)
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, int64(1), orch.Version())
	rec, err := st.Load(ctx, orch.Key())
	require.NoError(t, err)
	assert.JSONEq(t, `{"step":1}`, string(rec.Data), "the orchestrator's part was not written either")

	m2 := newManager(t, memory.New())
	foreign, _ := openAgent(t, m2)
	stF, err := foreign.StageAgent(agentRec(0), 0)
	require.NoError(t, err)
	assert.ErrorIs(t, m.Commit(ctx, persistence.SaveMessage, stF), persistence.ErrBadSave)
}

// SPEC S2: a manager needs a store and a valid session id; an owner id is
// checked when it is opened; nothing touches the store.
func TestSessionManager_RejectsNilStoreAndBadIDs(t *testing.T) {
	_, err := persistence.NewSessionManager(nil, "s")
	assert.Error(t, err)
	for _, id := range []string{"", "a/b", `a\b`, "a\x00b", "bad\xff", "\u0085", string(make([]byte, 256))} {
		_, err := persistence.NewSessionManager(memory.New(), id)
		assert.ErrorIs(t, err, persistence.ErrBadID, "%q", id)
		m := newManager(t, memory.New())
		_, _, err = m.OpenAgent(context.Background(), id)
		assert.ErrorIs(t, err, persistence.ErrBadID, "agent %q", id)
		if id != "" { // agent.New takes "" as the default id
			_, err = agent.New(context.Background(), agent.Config{ID: id, Model: model.Scripted(), Session: m})
			assert.ErrorIs(t, err, persistence.ErrBadID, "agent.New %q", id)
		}
	}
}

// SPEC S4, R4 (the hole of one manager keeping one version per key): two
// agents of one identity built on one SessionManager in two runtimes both
// resume one interrupt: exactly one proceeds, the other gets ErrConflict
// before anything runs, and the approved tool runs once. In one runtime
// the second agent is refused at New.
func TestSessionManager_TwoAgentsResumingOneInterruptRunTheToolOnce(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, memory.New())
	var mu sync.Mutex
	runs := 0
	var buildOn func(*actors.System) (*agent.Agent, error)
	// Each agent lives in an actor system of its own, as in two processes:
	// one system refuses a second live agent of one identity at once.
	build := func() (*agent.Agent, error) {
		sys, err := actors.NewSystem(actors.DefaultConfig())
		require.NoError(t, err)
		t.Cleanup(func() { _ = sys.Close(ctx) })
		return buildOn(sys)
	}
	buildOn = func(sys *actors.System) (*agent.Agent, error) {
		del := tool.New("delete_files", "delete", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			return "deleted", nil
		})
		gate := hook.Func(func(_ context.Context, ev *agent.BeforeToolCallEvent) error {
			ans, err := ev.Interrupt("approval", nil)
			if err != nil {
				return err
			}
			if s, _ := ans.String(); s != "y" {
				ev.CancelTool("denied")
			}
			return nil
		})
		a, err := agent.New(context.Background(), agent.Config{ID: smAgent, Session: m, Tools: []tool.Tool{del}, Hooks: []hook.Provider{gate}, System: sys,
			Model: model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
				if last, _ := req.LastMessage(); len(last.ToolResults()) > 0 {
					return model.TextTurn("done"), nil
				}
				return model.ToolTurn(model.Call("t1", "delete_files", struct{}{})), nil
			})})
		if err == nil {
			t.Cleanup(func() { _ = a.Close(ctx) })
		}
		return a, err
	}
	must := func(a *agent.Agent, err error) *agent.Agent {
		t.Helper()
		require.NoError(t, err)
		return a
	}
	res, err := must(build()).Invoke(ctx, agent.Text("delete"))
	require.NoError(t, err)
	require.Equal(t, agent.StopInterrupt, res.StopReason)
	id := res.Interrupts[0].ID

	shared, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = shared.Close(ctx) })
	must(buildOn(shared))
	_, err = buildOn(shared)
	require.ErrorIs(t, err, actors.ErrBound, "SPEC R4: one live agent per identity in one registry")

	a1, a2 := must(build()), must(build())
	require.True(t, agenttest.Interrupted(t, a1))
	require.True(t, agenttest.Interrupted(t, a2))
	res, err = a1.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.NoError(t, err)
	assert.Equal(t, "done", res.Message.Text())
	_, err = a2.Invoke(ctx, agent.Resume(interrupt.Respond(id, "y")))
	require.ErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, 1, runs, "the approved tool ran once")
}

// SPEC M10: an agent writer with DeferDurable parks its durable saves
// (interrupt, invocation) until they are taken and committed with another
// owner's change in one transaction; a later save commits at once and
// carries the parked change, so nothing parked is ever lost or
// committed twice.
func TestAgentSession_DeferDurableParksUntilCommittedTogether(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	m, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	as, _, err := m.OpenAgent(ctx, "a")
	require.NoError(t, err)
	as.DeferDurable()
	rec := &persistence.AgentRecord{Messages: []model.Message{model.UserText("one")}}
	require.NoError(t, as.Save(ctx, rec, persistence.SaveInvocation))
	_, err = st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"})
	require.ErrorIs(t, err, persistence.ErrNotFound, "parked, not in the store")

	rec.Messages = append(rec.Messages, model.UserText("two"))
	require.NoError(t, as.Save(ctx, rec, persistence.SaveInterrupt))
	parked := as.TakeDeferred()
	require.NotNil(t, parked, "the later durable save supersedes the first")
	assert.Nil(t, as.TakeDeferred())
	orch, _, err := m.Open(ctx, persistence.KindMultiAgent, "g")
	require.NoError(t, err)
	os, err := orch.Stage(json.RawMessage(`{"n":1}`), 0, nil)
	require.NoError(t, err)
	require.NoError(t, m.Commit(ctx, persistence.SaveInvocation, parked, os))
	got, err := st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"})
	require.NoError(t, err)
	assert.Len(t, got.Messages, 2)

	rec.Messages = append(rec.Messages, model.UserText("three"))
	require.NoError(t, as.Save(ctx, rec, persistence.SaveInvocation))
	rec.Messages = append(rec.Messages, model.UserText("four"))
	require.NoError(t, as.Save(ctx, rec, persistence.SaveMessage), "a later save commits at once")
	assert.Nil(t, as.TakeDeferred(), "and carries the parked change")
	got, err = st.Load(ctx, persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"})
	require.NoError(t, err)
	assert.Len(t, got.Messages, 4)
}

// SPEC S4: a writer that loaded a session before it was deleted, and saves
// after another writer created it again and brought it back to the same
// version, gets ErrConflict and changes nothing: the new record is of
// another incarnation. The histories of the two are never mixed.
func TestSessionManager_AWriterOfADeletedSessionConflictsWithItsNewRecord(t *testing.T) {
	ctx := context.Background()
	for name, st := range map[string]persistence.Store{"memory": memory.New(), "sqlite": sqliteStore(t)} {
		t.Run(name, func(t *testing.T) {
			a, _ := openAgent(t, newManager(t, st))
			require.NoError(t, a.Save(ctx, agentRec(1, userMsgs("a1")...), persistence.SaveInvocation))
			n, err := st.DeleteSession(ctx, smSession)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			b, _ := openAgent(t, newManager(t, st))
			require.NoError(t, b.Save(ctx, agentRec(2, userMsgs("b1", "b2")...), persistence.SaveInvocation))
			require.Equal(t, a.Version(), b.Version(), "the new record is back at the stale writer's version")

			err = a.Save(ctx, agentRec(1, userMsgs("a1", "a2")...), persistence.SaveInvocation)
			require.ErrorIs(t, err, persistence.ErrConflict)
			assert.Contains(t, err.Error(), "deleted and created again")
			_, rec := openAgent(t, newManager(t, st))
			assert.Equal(t, []string{"b1", "b2"}, msgTexts(rec.Messages))
			assert.JSONEq(t, "2", string(rec.State["n"]))
		})
	}
}

func sqliteStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// SPEC S4: Behind tells a writer, without a save, whether the record
// moved on since its version: nil while the stored record is the one it
// read or saved (or there is still none), else the *ConflictError its save
// would get: another writer's save, a record created since, or one
// deleted and created again at the same version.
func TestOwner_BehindNamesTheConflictASaveWouldGet(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	key := persistence.Key{SessionID: smSession, Kind: persistence.KindAgent, ID: smAgent}
	fresh := func() *persistence.AgentSession {
		s, _ := openAgent(t, newManager(t, st))
		return s
	}
	none := fresh()
	assert.NoError(t, none.Behind(fresh().Owner), "no record, still none")

	w := fresh()
	require.NoError(t, w.Save(ctx, agentRec(1, userMsgs("a")...), persistence.SaveInvocation))
	var ce *persistence.ConflictError
	require.ErrorAs(t, none.Behind(fresh().Owner), &ce, "a record created since")
	assert.Equal(t, persistence.ConflictError{Key: key, Expected: 0, Actual: 1, Checked: true}, *ce)
	assert.NoError(t, w.Behind(fresh().Owner), "the record it saved")

	other := fresh()
	require.NoError(t, other.Save(ctx, agentRec(2, userMsgs("a", "b")...), persistence.SaveInvocation))
	err := w.Behind(fresh().Owner)
	require.ErrorIs(t, err, persistence.ErrConflict)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, persistence.ConflictError{Key: key, Expected: 1, Actual: 2, Checked: true}, *ce)

	_, err = st.DeleteSession(ctx, smSession)
	require.NoError(t, err)
	again := fresh()
	require.NoError(t, again.Save(ctx, agentRec(3, userMsgs("c")...), persistence.SaveInvocation))
	require.NoError(t, again.Save(ctx, agentRec(4, userMsgs("c", "d")...), persistence.SaveInvocation))
	require.Equal(t, other.Version(), again.Version())
	require.ErrorAs(t, other.Behind(fresh().Owner), &ce, "deleted and created again at its version")
	assert.True(t, ce.Recreated)
	assert.True(t, ce.Checked)
}
