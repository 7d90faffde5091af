package actors_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

func newSerial(t *testing.T) (*actors.System, *actors.Serial) {
	t.Helper()
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	s, err := actors.NewSerial(sys)
	require.NoError(t, err)
	return sys, s
}

// SPEC A12: turns never overlap and all of them run.
func TestSerial_TurnsNeverOverlap(t *testing.T) {
	_, s := newSerial(t)
	var running, maxRunning, done atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, s.Do(context.Background(), func(context.Context) {
				n := running.Add(1)
				for {
					m := maxRunning.Load()
					if n <= m || maxRunning.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(100 * time.Microsecond)
				running.Add(-1)
				done.Add(1)
			}))
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), maxRunning.Load())
	assert.Equal(t, int32(32), done.Load())
}

func TestSerial_TurnsRunInOrderOfAsking(t *testing.T) {
	_, s := newSerial(t)
	release := make(chan struct{})
	started := make(chan struct{})
	var order []int
	var mu sync.Mutex
	go func() {
		_ = s.Do(context.Background(), func(context.Context) { close(started); <-release })
	}()
	<-started
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Do(context.Background(), func(context.Context) { mu.Lock(); order = append(order, i); mu.Unlock() })
		}()
		time.Sleep(5 * time.Millisecond) // let each ask reach the mailbox before the next
	}
	close(release)
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
}

func TestSerial_QueuedTurnAbandonedWhenCtxEnds(t *testing.T) {
	_, s := newSerial(t)
	release := make(chan struct{})
	started := make(chan struct{})
	go func() { _ = s.Do(context.Background(), func(context.Context) { close(started); <-release }) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ran := false
	err := s.Do(ctx, func(context.Context) { ran = true })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	// The next turn still runs: the abandoned one does not block the queue.
	require.NoError(t, s.Do(context.Background(), func(context.Context) {}))
	assert.False(t, ran)
}

func TestSerial_CloseRejectsQueuedAndLaterTurns(t *testing.T) {
	_, s := newSerial(t)
	release := make(chan struct{})
	started := make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.Do(context.Background(), func(context.Context) { close(started); <-release })
	}()
	<-started
	queued := make(chan error, 1)
	go func() {
		queued <- s.Do(context.Background(), func(context.Context) { t.Error("a queued turn ran after Close") })
	}()
	time.Sleep(10 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	assert.ErrorIs(t, <-queued, actors.ErrClosed)
	select {
	case <-closed:
		t.Fatal("Close returned while a turn was running")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-firstDone)
	require.NoError(t, <-closed)
	assert.ErrorIs(t, s.Do(context.Background(), func(context.Context) {}), actors.ErrClosed)
	assert.NoError(t, s.Close(context.Background()), "closing twice is a no-op")
}

func TestSystem_CloseStopsActorsAndRefusesSpawn(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	_, err = actors.NewSerial(sys)
	require.NoError(t, err)
	require.NoError(t, sys.Close(context.Background()))
	_, err = actors.NewSerial(sys)
	assert.ErrorIs(t, err, actors.ErrClosed)
	assert.NoError(t, sys.Close(context.Background()))
}
