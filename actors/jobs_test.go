package actors_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// SPEC R3: a job handed to a System is counted from Go or Run until it
// returns, and once Close has begun no job begins: Run runs nothing and
// says so, so an owner's job handed to a caller's goroutine before the
// Close cannot start after it.
func TestSystemRun_BeginsNoJobOnceCloseHasBegun(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	ran := false
	assert.True(t, sys.Run(func() { ran = true }))
	assert.True(t, ran, "Run runs fn on the caller's goroutine before Close")

	release, returned := make(chan struct{}), make(chan struct{})
	sys.Go(func() { <-release; close(returned) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sys.Close(ctx), context.Canceled, "a job still runs: Close whose context has ended")
	assert.False(t, sys.Run(func() { t.Error("a job began after Close") }))
	close(release)
	<-returned
}
