package actors_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
)

// newObservedSerial returns a Serial and a channel that receives the number
// of queued turns each time the actor queues one behind the running turn, so
// a test knows a turn waits instead of sleeping and hoping. The channel holds
// 64 values; a test that queues more must read them.
func newObservedSerial(t *testing.T) (*actors.Serial, <-chan int) {
	t.Helper()
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sys.Close(context.Background()) })
	queued := make(chan int, 64)
	s, err := actors.NewSerialObserved(sys, func(n int) { queued <- n })
	require.NoError(t, err)
	return s, queued
}

// waitQueued returns once n turns wait in the queue. The time limit only
// turns a deadlock into a failure; no outcome depends on it.
func waitQueued(t *testing.T, queued <-chan int, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-queued:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("%d turns never queued", n)
		}
	}
}

// block starts a turn that runs until release is closed, and returns once it
// runs. The turn's Do result goes to the returned channel.
func block(s *actors.Serial, release <-chan struct{}) <-chan error {
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Do(context.Background(), func(context.Context) { close(started); <-release })
	}()
	<-started
	return done
}

// SPEC A12: turns never overlap and all of them run.
func TestSerial_TurnsNeverOverlap(t *testing.T) {
	const turns = 32
	s, queued := newObservedSerial(t)
	release := make(chan struct{})
	first := block(s, release)
	var running, maxRunning, done atomic.Int32
	var wg sync.WaitGroup
	for range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, s.Do(context.Background(), func(context.Context) {
				n := running.Add(1)
				for {
					m := maxRunning.Load()
					if n <= m || maxRunning.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched() // let any turn wrongly granted now run beside this one
				running.Add(-1)
				done.Add(1)
			}))
		}()
	}
	// Every turn waits before any runs, so an actor that granted two at once
	// would have them to grant.
	waitQueued(t, queued, turns)
	close(release)
	wg.Wait()
	require.NoError(t, <-first)
	assert.Equal(t, int32(1), maxRunning.Load())
	assert.Equal(t, int32(turns), done.Load())
}

func TestSerial_TurnsRunInOrderOfAsking(t *testing.T) {
	s, queued := newObservedSerial(t)
	release := make(chan struct{})
	first := block(s, release)
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, s.Do(context.Background(), func(context.Context) { mu.Lock(); order = append(order, i); mu.Unlock() }))
		}()
		waitQueued(t, queued, i+1) // turn i is asked for before turn i+1
	}
	close(release)
	wg.Wait()
	require.NoError(t, <-first)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
}

func TestSerial_QueuedTurnAbandonedWhenCtxEnds(t *testing.T) {
	s, queued := newObservedSerial(t)
	release := make(chan struct{})
	first := block(s, release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Bool
	abandoned := make(chan error, 1)
	go func() { abandoned <- s.Do(ctx, func(context.Context) { ran.Store(true) }) }()
	waitQueued(t, queued, 1)
	cancel() // the turn waits in the queue when its ctx ends
	require.ErrorIs(t, <-abandoned, context.Canceled)
	close(release)
	require.NoError(t, <-first)
	// The next turn still runs: the abandoned one does not block the queue.
	require.NoError(t, s.Do(context.Background(), func(context.Context) {}))
	assert.False(t, ran.Load())
}

func TestSerial_CloseRejectsQueuedAndLaterTurns(t *testing.T) {
	s, queuedTurns := newObservedSerial(t)
	release := make(chan struct{})
	first := block(s, release)
	queued := make(chan error, 1)
	go func() {
		queued <- s.Do(context.Background(), func(context.Context) { t.Error("a queued turn ran after Close") })
	}()
	waitQueued(t, queuedTurns, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	// The rejection shows the actor has handled Close while the first turn
	// still runs; Close must wait for that turn.
	assert.ErrorIs(t, <-queued, actors.ErrClosed)
	select {
	case <-closed:
		t.Fatal("Close returned while a turn was running")
	default:
	}
	close(release)
	require.NoError(t, <-first)
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
