package swarm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence/memory"
	"github.com/braidhq/braid/swarm"
)

// SPEC M10: once a run has ended, a swarm of another team starts a new
// one on the session, one without an agent of the ended run included
// (before, building it failed with ErrTopology, or with a damaged record
// for the node history that names the agent it lacks).
func TestSwarmSession_ATeamWithoutAnAgentOfAnEndedRunStartsANewOne_M10(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := newRecorder()
	cfg := func() swarm.Config {
		return swarm.Config{ID: "s", Session: manager(t, st, "x"), System: actorstest.System(t)}
	}
	s1 := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "go on"})).AddAgent(teamAgent(r, "b", handoff{})), cfg())
	res, err := s1.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	require.NoError(t, s1.Close(ctx))

	s2 := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{})), cfg())
	res, err = s2.Invoke(ctx, agent.Text("again"))
	require.NoError(t, err)
	require.Equal(t, multiagent.StatusCompleted, res.Status)
	assert.Equal(t, []string{"a"}, res.ExecutionOrder)
}
