package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// gatedStore holds every Save until open is closed.
type gatedStore struct {
	persistence.Store
	open chan struct{}
}

func (s *gatedStore) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	<-s.open
	return s.Store.Save(ctx, opts, changes...)
}

type startSave struct{}

// SPEC R4, R3: an orchestrator's save reports back to the actor (saveDone)
// from the goroutine that ran its commit, and with the inline dispatcher
// that goroutine runs the actor's mailbox when it finds it idle: the
// actor's stop (Close) may come in first, and its stopSave waits for the
// commit to have ended. So the commit must count as ended by the time
// the report reaches the actor, or stopSave waits on the very goroutine
// that runs it, and the Close never returns.
func TestOrchestratorSave_ItsCommitHasEndedWhenItsReportReachesTheActor(t *testing.T) {
	ctx := context.Background()
	sys, err := NewSystem(DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(ctx) })
	st := &gatedStore{Store: memory.New(), open: make(chan struct{})}
	sm, err := persistence.NewSessionManager(st, "s")
	require.NoError(t, err)
	owner, _, err := sm.Open(ctx, persistence.KindMultiAgent, "o")
	require.NoError(t, err)
	x := &orchActor{cfg: &OrchestratorConfig{Kind: "graph", ID: "o", Session: sm, LoadTimeout: time.Minute}, sys: sys, owner: owner}

	var commitEnded chan struct{}
	endedAtReport := make(chan bool, 1)
	pid, err := sys.Spawn(func() actor.Actor {
		return actor.ReceiveFunc(func(c actor.Context) {
			switch c.Message().(type) {
			case startSave:
				x.save(c, persistence.SaveMessage, func(error) {})
				commitEnded = x.commitEnded
			case *saveDone:
				select {
				case <-commitEnded:
					endedAtReport <- true
				default:
					endedAtReport <- false
				}
			}
		})
	})
	require.NoError(t, err)
	sys.Root().Send(pid, startSave{})
	// The actor is idle again (the inline dispatcher ran startSave on this
	// goroutine): the commit's goroutine runs its report.
	close(st.open)
	assert.True(t, <-endedAtReport, "the commit's end is signalled before its report is handled")
}
