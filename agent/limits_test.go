package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
)

// A negative limit is refused with the name of the Config field that holds
// it, so that a config of many fields can be fixed from the message alone.
func TestNegativeLimitErrorNamesTheConfigField(t *testing.T) {
	cases := map[string]func(*agent.Config){
		"MaxAutoResumes":  func(c *agent.Config) { c.MaxAutoResumes = -1 },
		"MaxModelRetries": func(c *agent.Config) { c.MaxModelRetries = -1 },
		"MaxToolRetries":  func(c *agent.Config) { c.MaxToolRetries = -1 },
		"IdleTimeout":     func(c *agent.Config) { c.IdleTimeout = -time.Second },
		"LoadTimeout":     func(c *agent.Config) { c.LoadTimeout = -time.Second },
	}
	for field, set := range cases {
		t.Run(field, func(t *testing.T) {
			cfg := agent.Config{Model: model.Scripted()}
			set(&cfg)
			_, err := agent.New(context.Background(), cfg)
			require.ErrorIs(t, err, agent.ErrConfig)
			assert.Contains(t, err.Error(), field)
		})
	}
}
