package actors_test

import (
	"context"
	"testing"
	"time"

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

// SPEC R5: a Close whose context ended stops waiting, not closing: the
// shutdown goes on, and a later Close waits for the job the first could
// not, then reports the System closed (nil), so that a caller who gave
// the first Close too little time can still learn when a store its owners
// used may be closed.
func TestSystemClose_ALaterCloseWaitsForTheJobsAnEarlierOneGaveUpOn(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	release, returned := make(chan struct{}), make(chan struct{})
	sys.Go(func() { <-release; close(returned) }) // a job that does not watch its context

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sys.Close(gone), context.Canceled, "the job still runs: the first Close's wait ends with its context")
	assert.False(t, sys.Run(func() { t.Error("a job began after Close") }))

	later := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		later <- sys.Close(ctx)
	}()
	close(release)
	require.NoError(t, <-later, "the later Close waited for the job and the rest of the shutdown")
	select {
	case <-returned:
	default:
		t.Fatal("Close returned nil while a job of the System still ran")
	}
	assert.NoError(t, sys.Close(context.Background()), "and every Close after it")
}
