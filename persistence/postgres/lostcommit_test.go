package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// msgs returns n messages numbered from first, as a store keeps them.
func msgs(first, n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"role":"user","content":[{"text":"m%d"}]}`, first+i))
	}
	return out
}

// SPEC S4: a save that the server commits but whose reply the client
// never gets (the connection dies right after the server sent it) is
// stored exactly once: a fresh store loads the committed version with each
// message once, and the same change sent again (same Base) is a
// *ConflictError that changes nothing, never a second write. The general
// path's transaction (a batch, a rewrite) then asks the server, on another
// connection, whether it committed, and reports the save done; the
// one-round-trip append, whose transaction's id comes back only with its
// reply, fails and is not run again. The reply is lost with no word, or
// after the results of the save's statements (before the word that the
// commit is done), or a FATAL error comes in its place that is not the
// server's word that it ended the session (a connection pooler's, whose
// link to the server broke: SQLSTATE 08P01), so the save may have
// committed: the error then matches persistence.ErrOutcomeUnknown, and a
// stale save's *ConflictError (the server's answer) does not.
func TestSave_CommitWhoseReplyIsLostIsStoredOnce(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	fresh := newStore(t) // on the server itself
	proxy := newCutProxy(t, dsn)
	s, err := postgres.New(bg, postgres.Config{DSN: proxy.dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	type stored struct {
		id   string
		msgs int // messages stored before the save
	}
	for _, tc := range []struct {
		name   string
		before []stored // records saved first, at version 1
		change func(session string) []persistence.Change
		reply  func(reply) bool
		asked  bool // the save asks whether it committed, and succeeds
	}{
		{name: "append path/create", reply: appendReply, change: func(session string) []persistence.Change {
			return []persistence.Change{{Key: agentKey(session, "a"), Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 2),
				Incarnation: 7}}
		}},
		{name: "append path/append", reply: appendReply, before: []stored{{"a", 2}}, change: func(session string) []persistence.Change {
			return []persistence.Change{{Key: agentKey(session, "a"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 2,
				Messages: msgs(2, 2), Incarnation: 7}}
		}},
		{name: "transaction/batch", reply: commitReply, asked: true, before: []stored{{"a", 1}, {"b", 1}}, change: func(session string) []persistence.Change {
			return []persistence.Change{
				{Key: agentKey(session, "a"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 1, Messages: msgs(1, 1), Incarnation: 7},
				{Key: agentKey(session, "b"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 1, Messages: msgs(1, 2), Incarnation: 7},
			}
		}},
		{name: "transaction/rewrite", reply: commitReply, asked: true, before: []stored{{"a", 3}}, change: func(session string) []persistence.Change {
			return []persistence.Change{{Key: agentKey(session, "a"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 1,
				Messages: msgs(10, 1), Incarnation: 7}}
		}},
	} {
		for _, way := range []struct {
			name string
			arm  func(match func(reply) bool) <-chan struct{}
		}{
			{"no word", func(match func(reply) bool) <-chan struct{} { return proxy.arm(0, match) }},
			{"a pooler's FATAL", func(match func(reply) bool) <-chan struct{} { return proxy.armFatal("08P01", match) }},
			{"no word after the results", proxy.armResults},
		} {
			t.Run(tc.name+"/"+way.name, func(t *testing.T) {
				session := "lost-" + uuid.NewString()
				for _, b := range tc.before {
					_, err := fresh.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: agentKey(session, b.id),
						Data: json.RawMessage(`{"n":0}`), Messages: msgs(0, b.msgs), Incarnation: 7})
					require.NoError(t, err)
				}
				changes := tc.change(session)
				cut := way.arm(tc.reply)
				versions, err := s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
				requireClosed(t, cut, "the proxy lost the save's reply")
				if tc.asked {
					require.NoError(t, err, "the server says the save committed")
					var want []int64
					for _, c := range changes {
						want = append(want, c.Base+1)
					}
					assert.Equal(t, want, versions)
				} else {
					require.Error(t, err, "the reply was lost")
					assert.Nil(t, versions, "a failed save gives no versions")
					assert.NotErrorIs(t, err, persistence.ErrConflict)
					assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown, "the save was sent and may have committed")
				}

				committed := func(what string) {
					t.Helper()
					for _, c := range changes {
						r, err := fresh.Load(bg, c.Key)
						require.NoError(t, err, what)
						assert.Equal(t, c.Base+1, r.Version, "%s: %s: committed once", what, c.Key)
						assert.JSONEq(t, string(c.Data), string(r.Data), what)
						var want []json.RawMessage
						if c.Base > 0 {
							want = msgs(0, c.From)
						}
						want = append(want, c.Messages...)
						assert.Equal(t, rawStrings(want), rawStrings(r.Messages), "%s: %s: each message once", what, c.Key)
					}
				}
				committed("after the lost reply")

				_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
				var ce *persistence.ConflictError
				require.ErrorAs(t, err, &ce, "the same change again")
				assert.NotErrorIs(t, err, persistence.ErrOutcomeUnknown, "the server answered")
				assert.Equal(t, changes[0].Key, ce.Key)
				assert.Equal(t, changes[0].Base, ce.Expected)
				assert.Equal(t, changes[0].Base+1, ce.Actual)
				committed("after the retry")
			})
		}
	}
}

// SPEC S4: a save by the general path's transaction whose COMMIT is lost
// on its way to the server (the connection dies once the client sent it;
// the server, its client gone mid-transaction, rolls it back) asks the
// server, on another connection, what became of it, hears it rolled back,
// and runs again: the save succeeds, and a fresh store finds it stored
// once, at the versions the save reported.
func TestSave_TransactionWhoseCommitNeverArrivedRunsAgainAndIsStoredOnce(t *testing.T) {
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	changes := storedPair(t, fresh) // a batch: the general path's transaction
	cut := proxy.armCommit()
	versions, err := s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
	requireClosed(t, cut, "the proxy lost the save's COMMIT")
	require.NoError(t, err, "the server says the first try rolled back: the save runs again")
	assert.Equal(t, []int64{2, 2}, versions)
	for _, c := range changes {
		r, err := fresh.Load(bg, c.Key)
		require.NoError(t, err)
		assert.Equal(t, int64(2), r.Version, "%s: committed once", c.Key)
		assert.Equal(t, rawStrings(append(msgs(0, 1), c.Messages...)), rawStrings(r.Messages), "%s: each message once", c.Key)
	}
}

// SPEC S4: the server's word on a lost transaction's id is taken only
// from the run of the server that gave the id out: a crash recovery hands
// out again the ids of transactions whose log never reached the disk, so
// after one, the id's status may be another transaction's. Every crash
// recovery ends with a checkpoint, and the store takes a checkpoint since
// the transaction's lock (or a server started since) as a sign that the
// server may have restarted; the test, which may not crash the shared
// server, runs a CHECKPOINT between the commit and the question. The
// save then fails as any save whose reply is lost unanswered (it may be
// stored: persistence.ErrOutcomeUnknown), stored once, and the same change
// again conflicts.
func TestSave_LostCommitIsNotReportedDoneFromAServerThatMayHaveRestarted(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	admin, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(bg) })
	changes := storedPair(t, fresh) // a batch: the general path's transaction
	var checkpointErr error
	cut := proxy.armThen(commitReply, func() { _, checkpointErr = admin.Exec(bg, "CHECKPOINT") })
	versions, err := s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
	requireClosed(t, cut, "the proxy lost the save's reply")
	require.NoError(t, checkpointErr)
	require.Error(t, err, "the server's answer may be of another run than the transaction's")
	assert.Nil(t, versions)
	assert.NotErrorIs(t, err, persistence.ErrConflict)
	assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown)

	for _, c := range changes {
		r, err := fresh.Load(bg, c.Key)
		require.NoError(t, err)
		assert.Equal(t, int64(2), r.Version, "%s: committed once", c.Key)
		assert.Equal(t, rawStrings(append(msgs(0, 1), c.Messages...)), rawStrings(r.Messages), "%s: each message once", c.Key)
	}
	_, err = s.Save(bg, persistence.SaveOptions{Durable: true}, changes...)
	var ce *persistence.ConflictError
	require.ErrorAs(t, err, &ce, "the same change again")
}

// SPEC S3, S4: the question after a lost commit does not wait for the
// pool slot of the connection that died: a store of one connection asks
// on a new one, and the save is reported done at once. (The context's
// deadline only bounds the test: the save must not need it.)
func TestSave_LostCommitIsAskedAboutOnAPoolOfOneConnection(t *testing.T) {
	proxy := newCutProxy(t, persistencetest.PostgresDSN(t))
	s, err := postgres.New(bg, postgres.Config{DSN: proxy.dsn, MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	fresh := newStore(t)
	changes := storedPair(t, fresh) // a batch: the general path's transaction
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	cut := proxy.arm(0, commitReply)
	versions, err := s.Save(ctx, persistence.SaveOptions{Durable: true}, changes...)
	requireClosed(t, cut, "the proxy lost the save's reply")
	require.NoError(t, err, "the server says the save committed")
	assert.Equal(t, []int64{2, 2}, versions)
}

// SPEC S4: a save whose context ends while it asks whether its lost
// commit happened (another transaction holds the session's lock) fails
// with an error that matches the context's, as any call whose context
// ends while a statement runs, and persistence.ErrOutcomeUnknown: it may
// have committed.
func TestSave_LostCommitWhoseQuestionOutlivesTheContextFailsWithTheContextsError(t *testing.T) {
	dsn := persistencetest.PostgresDSN(t)
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	holder, err := pgx.Connect(bg, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(bg) })
	changes := storedPair(t, fresh) // a batch: the general path's transaction
	var held pgx.Tx
	var holdErr error
	cut := proxy.armThen(commitReply, func() {
		// The save's transaction has ended; another takes its session's lock.
		if held, holdErr = holder.Begin(bg); holdErr == nil {
			_, holdErr = held.Exec(bg, `SELECT pg_advisory_xact_lock(1651663209, hashtext($1))`, changes[0].Key.SessionID)
		}
	})
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err = s.Save(ctx, persistence.SaveOptions{Durable: true}, changes...)
	requireClosed(t, cut, "the proxy lost the save's reply")
	require.NoError(t, holdErr)
	require.NoError(t, held.Rollback(bg))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown)
}

func agentKey(session, id string) persistence.Key {
	return persistence.Key{SessionID: session, Kind: persistence.KindAgent, ID: id}
}

func rawStrings(ms []json.RawMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// requireClosed fails the test unless ch is closed.
func requireClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	default:
		require.FailNow(t, what)
	}
}

// proxiedStore returns a store whose connections go through a cutProxy to
// the tests' server, and the proxy.
func proxiedStore(t *testing.T) (*postgres.Store, *cutProxy) {
	t.Helper()
	proxy := newCutProxy(t, persistencetest.PostgresDSN(t))
	s, err := postgres.New(bg, postgres.Config{DSN: proxy.dsn})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, proxy
}

func history(texts ...string) []model.Message {
	out := make([]model.Message, len(texts))
	for i, s := range texts {
		if i%2 == 0 {
			out[i] = model.UserText(s)
		} else {
			out[i] = model.AssistantText(s)
		}
	}
	return out
}

// SPEC S1, S4: an agent's writer whose save commits but loses its reply
// does not count the save as done, and does not write it again: its next
// save (the same history, or more) is a *ConflictError that changes
// nothing, and a writer opened again on the store finds each message once
// and carries on from there.
func TestAgentSession_SaveWhoseReplyIsLostConflictsAfterwardsAndIsStoredOnce(t *testing.T) {
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	m, err := persistence.NewSessionManager(s, "lost-"+uuid.NewString())
	require.NoError(t, err)
	as, _, err := m.OpenAgent(bg, "a")
	require.NoError(t, err)
	require.NoError(t, as.Save(bg, &persistence.AgentRecord{Messages: history("u1")}, persistence.SaveMessage))

	cut := proxy.arm(0, appendReply)
	err = as.Save(bg, &persistence.AgentRecord{Messages: history("u1", "a1", "u2")}, persistence.SaveMessage)
	require.Error(t, err)
	requireClosed(t, cut, "the proxy lost the save's reply")
	assert.NotErrorIs(t, err, persistence.ErrConflict)
	assert.Equal(t, int64(1), as.Version(), "the writer does not count the save as done")

	for _, h := range [][]string{{"u1", "a1", "u2"}, {"u1", "a1", "u2", "a2"}} {
		err = as.Save(bg, &persistence.AgentRecord{Messages: history(h...)}, persistence.SaveInvocation)
		var ce *persistence.ConflictError
		require.ErrorAs(t, err, &ce, "saving %v after the lost reply", h)
		assert.Equal(t, int64(1), ce.Expected)
		assert.Equal(t, int64(2), ce.Actual)
	}

	fm, err := persistence.NewSessionManager(fresh, m.SessionID())
	require.NoError(t, err)
	again, rec, err := fm.OpenAgent(bg, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"user:u1", "assistant:a1", "user:u2"}, texts(rec.Messages), "each message once")
	assert.Equal(t, int64(2), again.Version())
	require.NoError(t, again.Save(bg, &persistence.AgentRecord{Messages: append(rec.Messages, model.AssistantText("a2"))}, persistence.SaveInvocation))
	_, rec, err = fm.OpenAgent(bg, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"user:u1", "assistant:a1", "user:u2", "assistant:a2"}, texts(rec.Messages))
}

// SPEC M10, S4: an orchestrator's commit of its record and a node's
// parked change (the general path's transaction) whose reply is lost asks
// the server whether it committed, and is reported done: the node's change
// is not parked again, each is stored once, and the next saves of both
// go on from the committed versions.
func TestCommit_TakenChangeWhoseReplyIsLostIsReportedDoneAndStoredOnce(t *testing.T) {
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	m, err := persistence.NewSessionManager(s, "lost-"+uuid.NewString())
	require.NoError(t, err)
	as, _, err := m.OpenAgent(bg, "a")
	require.NoError(t, err)
	require.NoError(t, as.Save(bg, &persistence.AgentRecord{Messages: history("u1")}, persistence.SaveInvocation))
	orch, _, err := m.Open(bg, persistence.KindMultiAgent, "o")
	require.NoError(t, err)
	as.DeferDurable()
	require.NoError(t, as.Save(bg, &persistence.AgentRecord{Messages: history("u1", "a1")}, persistence.SaveInvocation))
	require.True(t, as.Parked())

	own, err := orch.Stage(json.RawMessage(`{"step":1}`), 0, nil)
	require.NoError(t, err)
	taken := as.TakeDeferred()
	require.NotNil(t, taken, "the node's change is parked")
	cut := proxy.arm(0, commitReply)
	require.NoError(t, m.Commit(bg, persistence.SaveInvocation, own, taken))
	requireClosed(t, cut, "the proxy lost the commit's reply")
	assert.False(t, as.Parked(), "a commit reported done leaves nothing parked")

	r, err := fresh.Load(bg, agentKey(m.SessionID(), "a"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Version)
	assert.Equal(t, []string{`{"role":"user","content":[{"text":"u1"}]}`, `{"role":"assistant","content":[{"text":"a1"}]}`},
		rawStrings(r.Messages), "each message once")
	o, err := fresh.Load(bg, persistence.Key{SessionID: m.SessionID(), Kind: persistence.KindMultiAgent, ID: "o"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), o.Version)
	assert.JSONEq(t, `{"step":1}`, string(o.Data))

	as.EndDeferral()
	require.NoError(t, as.Save(bg, &persistence.AgentRecord{Messages: history("u1", "a1", "u2")}, persistence.SaveInvocation),
		"the agent's writer goes on from the committed version")
	next, err := orch.Stage(json.RawMessage(`{"step":2}`), 0, nil)
	require.NoError(t, err)
	require.NoError(t, m.Commit(bg, persistence.SaveInvocation, next), "so does the orchestrator's")
}

// SPEC S4: a one-round-trip save whose commit fails with the server's
// error is not run again, and is stored once. A DSN that picks the simple
// protocol runs the save as one simple query, whose implicit transaction
// commits before its last statement is reported complete, so an error
// raised at or after the commit comes in place of that report: a PANIC
// (the commit's WAL flush failed, and recovery may find the commit), or
// even the server's word that it ended the session, were it ever raised
// there: the error matches persistence.ErrOutcomeUnknown.
func TestSave_CommitThatFailsIsNotRunAgain(t *testing.T) {
	fresh := newStore(t) // on the server itself
	proxy := newCutProxy(t, persistencetest.PostgresDSN(t))
	u, err := url.Parse(proxy.dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	s, err := postgres.New(bg, postgres.Config{DSN: u.String()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	for _, e := range []struct{ severity, code string }{{"PANIC", "58030"}, {"FATAL", "57P01"}} {
		t.Run(e.severity+" "+e.code, func(t *testing.T) {
			session := "failed-" + uuid.NewString()
			change := persistence.Change{Key: agentKey(session, "a"), Data: json.RawMessage(`{"n":1}`), Messages: msgs(0, 2), Incarnation: 7}
			cut := proxy.armFailedCommit(e.severity, e.code, appendReply)
			_, err := s.Save(bg, persistence.SaveOptions{Durable: true}, change)
			require.Error(t, err)
			requireClosed(t, cut, "the proxy failed the save's commit")
			assert.NotErrorIs(t, err, persistence.ErrConflict, "the save is not run again")
			assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown, "the commit may have happened")
			r, err := fresh.Load(bg, change.Key)
			require.NoError(t, err)
			assert.Equal(t, int64(1), r.Version)
			assert.Equal(t, rawStrings(change.Messages), rawStrings(r.Messages), "each message once")
		})
	}
}

// storedPair stores agents a and b of a new session through fresh, at
// version 1 with one message each, and returns a batch that saves both
// again (version 2, one more message each): a save the general path's
// transaction makes.
func storedPair(t *testing.T, fresh persistence.Store) []persistence.Change {
	t.Helper()
	session := "lost-" + uuid.NewString()
	for _, id := range []string{"a", "b"} {
		_, err := fresh.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: agentKey(session, id),
			Data: json.RawMessage(`{"n":0}`), Messages: msgs(0, 1), Incarnation: 7})
		require.NoError(t, err)
	}
	return []persistence.Change{
		{Key: agentKey(session, "a"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 1, Messages: msgs(1, 1), Incarnation: 7},
		{Key: agentKey(session, "b"), Base: 1, Data: json.RawMessage(`{"n":1}`), From: 1, Messages: msgs(1, 2), Incarnation: 7},
	}
}
