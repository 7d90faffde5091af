package postgres_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agent/agenttest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

func texts(ms []model.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Role) + ":" + m.Text()
	}
	return out
}

var errModel = errors.New("model down")

// echoModel answers "re <prompt>", and fails on the prompt "fail".
func echoModel() *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if last.Text() == "fail" {
			return model.Turn{}, errModel
		}
		return model.TextTurn("re " + last.Text()), nil
	})
}

// SPEC S1, S4, A3: an agent whose save commits but loses its reply never
// writes what that save wrote a second time. A one-round-trip append cut
// so fails its invocation: the writer is stale by the lost save, so its
// invocation's error matches persistence.ErrOutcomeUnknown, its next work
// fails with ErrConflict (whether the store holds the save cannot be told
// from a save of another writer), and the agent then goes
// on from the stored session, in which each message is once, as a fresh
// agent on the server finds it. A save by the general path's transaction
// asks the server whether it committed, and nothing conflicts afterwards.
// Four saves are cut: a prompt's and an invocation's (the append), the
// rewrite that takes back the prompt of a failed invocation and that
// invocation's durable point (transactions).
func TestAgent_SaveWhoseReplyIsLostIsStoredOnceAndTheAgentGoesOnFromTheStore(t *testing.T) {
	s, proxy := proxiedStore(t)
	fresh := newStore(t)
	for _, tc := range []struct {
		name   string
		prompt string           // the second invocation's
		skip   int              // matching replies before the one lost
		reply  func(reply) bool // the reply lost
		// stored is the history after the lost save; carryOn: it ends
		// with a prompt, whose run is carried on like one cut off by a
		// crash.
		stored  []string
		carryOn bool
		// noConflict: the lost save asked whether it committed (a
		// transaction), so the writer's version is the stored one.
		noConflict bool
	}{
		{name: "append path/the prompt's save", prompt: "two", skip: 0, reply: appendReply,
			stored: []string{"user:one", "assistant:re one", "user:two"}, carryOn: true},
		{name: "append path/the invocation's save", prompt: "two", skip: 1, reply: appendReply,
			stored: []string{"user:one", "assistant:re one", "user:two", "assistant:re two"}},
		{name: "transaction/the take-back's rewrite", prompt: "fail", skip: 1, reply: commitReply,
			stored: []string{"user:one", "assistant:re one"}, noConflict: true},
		// The failed invocation's durable point, with nothing new, syncs
		// first (a transaction too).
		{name: "transaction/the failed invocation's sync", prompt: "fail", skip: 0, reply: commitReply,
			stored: []string{"user:one", "assistant:re one"}, noConflict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := persistence.NewSessionManager(s, "lost-"+uuid.NewString())
			require.NoError(t, err)
			a, err := agent.New(bg, agent.Config{ID: "a", Session: sm, System: actorstest.System(t), Model: echoModel()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close(bg) })
			_, err = a.Invoke(bg, agent.Text("one"))
			require.NoError(t, err)

			cut := proxy.arm(tc.skip, tc.reply)
			_, err = a.Invoke(bg, agent.Text(tc.prompt))
			require.Error(t, err)
			requireClosed(t, cut, "the proxy lost the save's reply")
			assert.NotErrorIs(t, err, persistence.ErrConflict)
			if !tc.noConflict {
				assert.ErrorIs(t, err, persistence.ErrOutcomeUnknown, "the invocation fails with the lost save's error")
			}
			storedHistory := func(what string) {
				t.Helper()
				fm, err := persistence.NewSessionManager(fresh, sm.SessionID())
				require.NoError(t, err)
				_, rec, err := fm.OpenAgent(bg, "a")
				require.NoError(t, err)
				assert.Equal(t, tc.stored, texts(rec.Messages), "%s: the store holds the lost save once", what)
			}
			storedHistory("after the lost reply")

			want := tc.stored
			if !tc.noConflict {
				_, err = a.Invoke(bg, agent.Text("three"))
				require.ErrorIs(t, err, persistence.ErrConflict, "the writer is stale by the lost save")
				storedHistory("after the conflict")
				assert.Equal(t, tc.stored, texts(agenttest.Messages(t, a)), "the agent goes on from the stored session")
			}
			if tc.carryOn {
				_, err = a.Invoke(bg, agent.Text("three"))
				require.Error(t, err, "a prompt after an unanswered one is refused")
				_, err = a.Invoke(bg, agent.Input{})
				require.NoError(t, err, "the cut run is carried on")
				want = append(want, "assistant:re two")
			}
			_, err = a.Invoke(bg, agent.Text("three"))
			require.NoError(t, err)
			want = append(want, "user:three", "assistant:re three")
			assert.Equal(t, want, texts(agenttest.Messages(t, a)))

			b, err := agent.New(bg, agent.Config{ID: "a", Session: mustManager(t, fresh, sm.SessionID()),
				System: actorstest.System(t), Model: echoModel()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close(bg) })
			assert.Equal(t, want, texts(agenttest.Messages(t, b)), "a fresh agent loads each message once")
		})
	}
}

func mustManager(t *testing.T, st persistence.Store, session string) *persistence.SessionManager {
	t.Helper()
	m, err := persistence.NewSessionManager(st, session)
	require.NoError(t, err)
	return m
}
