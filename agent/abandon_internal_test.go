package agent

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// SPEC R4: the notice that a caller stopped waiting (an abandon) sent to
// a passivated agent activates nothing (no store load for a call that is
// not there): it is dropped, and the agent stays passivated.
func TestAbandon_R4_DoesNotActivateAPassivatedAgent(t *testing.T) {
	lc := actorstest.NewLifecycles()
	sys, err := actors.NewSystem(actors.Config{Observer: lc.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	sm, err := persistence.NewSessionManager(memory.New(), "s1")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := New(ctx, Config{ID: "a", System: sys, Session: sm, IdleTimeout: time.Hour, Model: model.Scripted(model.TextTurn("hi"))})
	require.NoError(t, err)
	defer func() { _ = a.Close(context.Background()) }()
	a.binding.Send(&actor.PoisonPill{}) // stopped; the next message activates it
	lc.AwaitNoneLive(t)

	a.binding.Send(&localAbandon{req: &request{}, cause: context.Canceled})
	live, err := a.binding.Live(ctx) // routed after the abandon
	require.NoError(t, err)
	assert.False(t, live, "the abandon activated the agent")
}
