package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// SPEC R4: an activation whose load fails stops at once whatever its
// first message, a Cancel included (answered: nothing ran), not after its
// idle timeout: it holds no registry slot, and once the store is back the
// next call loads again.
func TestCancel_R4_AFailedActivationStopsAtOnce(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	store := persistencetest.NewFailingLoads()
	sm, err := persistence.NewSessionManager(store, "s1")
	require.NoError(t, err)
	a, err := agent.New(deadline(t), agent.Config{ID: "a", System: sys, Session: sm, IdleTimeout: time.Hour,
		Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	defer func() { _ = a.Close(context.Background()) }()
	a.Binding().Send(&actor.PoisonPill{}) // stopped; the next message activates it
	lc.AwaitNoneLive(t)

	store.Failing.Store(true)
	was, err := a.Cancel(deadline(t))
	require.NoError(t, err)
	assert.False(t, was)
	lc.AwaitNoneLive(t) // the idle timeout is an hour away

	store.Failing.Store(false)
	_, err = a.Status(deadline(t))
	require.NoError(t, err, "the next call loads again")
}
