package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
)

// SPEC S1: a nil *persistence.SessionManager in Config.Session is no
// session, as it is in graph.Config and swarm.Config: the agent runs in
// memory (a variable left nil when sessions are off does not panic), and
// Validate judges the config as it would with no Session at all.
func TestConfig_ANilSessionManagerIsNoSession(t *testing.T) {
	var sess *persistence.SessionManager
	cfg := agent.Config{Model: model.Scripted(model.TextTurn("ok")), Session: sess}
	require.NoError(t, cfg.Validate())
	a := newAgent(t, cfg)
	res, err := a.Invoke(context.Background(), agent.Text("hi"))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Message.Text())

	cfg.IdleTimeout = time.Minute
	require.ErrorIs(t, cfg.Validate(), agent.ErrConfig, "IdleTimeout needs a session, and a nil manager is none")
}
