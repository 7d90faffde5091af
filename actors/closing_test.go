package actors_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// A close runs once and to its end: a caller whose context ends stops
// waiting at once, the close goes on, and every later caller waits for
// it and gets its outcome.
func TestClosing_RunsOnceToItsEndWhateverTheCallersContexts(t *testing.T) {
	var c actors.Closing
	var calls atomic.Int32
	started, finish := make(chan struct{}), make(chan struct{})
	failed := errors.New("close failed")
	fn := func() error {
		calls.Add(1)
		close(started)
		<-finish
		return failed
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Do(ended, fn), context.Canceled)
	<-started // fn goes on without its caller

	ctx, stop := context.WithTimeout(context.Background(), limit)
	defer stop()
	later := make(chan error, 1)
	go func() { later <- c.Do(ctx, func() error { calls.Add(1); return nil }) }()
	close(finish)
	assert.ErrorIs(t, <-later, failed, "a later caller waits for the first close and gets its outcome")
	assert.ErrorIs(t, c.Do(ended, fn), failed, "a close that is over answers even an ended context")
	assert.Equal(t, int32(1), calls.Load())
}

// A close that panics fails with an error carrying the panic, and later
// calls get that error instead of waiting forever.
func TestClosing_APanickingCloseFailsEveryCall(t *testing.T) {
	var c actors.Closing
	boom := func() error { panic("boom") }
	err := c.Do(context.Background(), boom)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")
	ctx, stop := context.WithTimeout(context.Background(), limit)
	defer stop()
	assert.Equal(t, err, c.Do(ctx, boom))
}
