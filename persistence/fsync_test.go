package persistence_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/persistence"
)

// The fsyncs of one b4 cycle (the seed's server pattern: request 1 builds an
// agent on a new session and is interrupted, request 2 builds another and
// resumes). Each request has one durable point, and each durable point
// costs two ordered rounds of concurrent fsyncs: what the new head points at,
// then the owner's folder that names the head. SPEC I9 needs the first
// request's interrupt on disk before it is returned, and the second's end
// on disk before it is returned, so two durable points is the least; a
// commit by rename needs its data on disk before the name, so two rounds
// each is the least. Everything in between goes to the journal unsynced.
func TestFileStore_FsyncsOfASessionCycle(t *testing.T) {
	env, err := benchcase.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	dir := t.TempDir()
	var mu sync.Mutex
	var rounds [][]string
	st, err := persistence.NewFileStore(dir, persistence.OnSync(func(_ persistence.Key, paths []string) {
		mu.Lock()
		defer mu.Unlock()
		var rel []string
		for _, p := range paths {
			r, err := filepath.Rel(dir, p)
			require.NoError(t, err)
			rel = append(rel, filepath.ToSlash(r))
		}
		sort.Strings(rel)
		rounds = append(rounds, rel)
	}))
	require.NoError(t, err)
	require.NoError(t, env.SessionCycle(context.Background(), st, "b4"))

	a := "session_b4/agents/agent_default"
	assert.Equal(t, [][]string{
		// Request 1, the interrupt: the first message, the head, session.json,
		// and every folder made for the new session.
		{".", "session_b4", "session_b4/agents", a + "/agent.json.tmp", a + "/messages", a + "/messages/message_0.json", "session_b4/session.json"},
		{a},
		// Request 2, the end of the invocation: the three new messages.
		{a + "/agent.json.tmp", a + "/messages", a + "/messages/message_1.json", a + "/messages/message_2.json", a + "/messages/message_3.json"},
		{a},
	}, rounds)
	n := 0
	for _, r := range rounds {
		n += len(r)
	}
	t.Logf("b4 cycle: %d fsyncs in %d rounds", n, len(rounds))
	for _, r := range rounds {
		for _, p := range r {
			assert.False(t, strings.HasSuffix(p, "journal.jsonl"), "the journal is never fsynced")
		}
	}
}
