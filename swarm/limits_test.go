package swarm_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/swarm"
)

// A negative limit is refused with the name of the Config field that holds
// it: a swarm's Config has seven.
func TestNegativeLimitErrorNamesTheConfigField(t *testing.T) {
	cases := map[string]swarm.Config{
		"MaxHandoffs":                      {MaxHandoffs: -1},
		"MaxIterations":                    {MaxIterations: -1},
		"ExecutionTimeout":                 {ExecutionTimeout: -time.Second},
		"NodeTimeout":                      {NodeTimeout: -time.Second},
		"RepetitiveHandoffDetectionWindow": {RepetitiveHandoffDetectionWindow: -1},
		"RepetitiveHandoffMinUniqueAgents": {RepetitiveHandoffMinUniqueAgents: -1},
	}
	for field, cfg := range cases {
		t.Run(field, func(t *testing.T) {
			err := cfg.Validate()
			require.ErrorIs(t, err, swarm.ErrBuild)
			assert.Contains(t, err.Error(), field)
		})
	}
}
