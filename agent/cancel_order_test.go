package agent_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/persistence/memory"
	braidv1 "github.com/braidhq/braid/proto/braidv1"
)

// SPEC R2, R3: an AgentCancel naming a queued invocation is answered
// (AgentCancelled, was_running) before that invocation's own end (its
// Error), as for a running one: a caller that sent both to one actor reads
// the answer to its cancel first.
func TestAgentActor_R2_ACancelOfAQueuedInvocationIsAnsweredBeforeItsEnd(t *testing.T) {
	r := &closeCutRig{st: memory.New(), started: make(chan struct{}, 1)}
	a := r.agent(t)
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	d := newDriver(t, actorstest.System(t))
	in, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	d.send(t, a, &braidv1.AgentInvoke{Input: in, InvocationId: "i1"})
	<-r.started // i1 runs: i2 queues behind it
	d.send(t, a, &braidv1.AgentInvoke{Input: in, InvocationId: "i2"})
	d.send(t, a, &braidv1.AgentCancel{InvocationId: "i2"})

	c, ok := d.next(t).(*braidv1.AgentCancelled)
	require.True(t, ok, "the cancel's answer comes first")
	assert.True(t, c.GetWasRunning())
	e, ok := d.next(t).(*braidv1.Error)
	require.True(t, ok, "then the queued invocation's end")
	assert.ErrorIs(t, agent.ErrorFromWire(e), agent.ErrCancelled)
	d.none(t)
}
