package agent_test

import (
	"context"
	"iter"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/model"
)

// lingeringModel is a model that, once its call's context ends, goes on
// until release is closed (a model call that takes time to give up), and
// reports on returned when it has.
type lingeringModel struct {
	started, release, returned chan struct{}
}

func newLingeringModel() *lingeringModel {
	return &lingeringModel{started: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
}

func (m *lingeringModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		defer close(m.returned)
		close(m.started)
		<-ctx.Done()
		<-m.release
		yield(nil, ctx.Err())
	}
}

// SPEC R3, R4: a System's Close returns nil only once no job of its
// owners runs any more: an invocation it cuts off has returned (its
// model call too), whether the job ran on the System's pool (a caller
// whose context can end) or on the caller's own goroutine (one whose
// context cannot end). Until then Close waits, or returns its context's
// error once that ends; the shutdown goes on, and a later Close reports
// its end.
func TestSystemClose_WaitsForTheOwnersJobsToReturn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canEnd bool // the caller's context can end: the job runs on the pool
	}{
		{"pool", true},
		{"lent", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys, err := actors.NewSystem(actors.DefaultConfig())
				require.NoError(t, err)
				m := newLingeringModel()
				a, err := agent.New(context.Background(), agent.Config{System: sys, Model: m})
				require.NoError(t, err)
				ctx := context.Background()
				if tc.canEnd {
					var stop context.CancelFunc
					ctx, stop = context.WithCancel(ctx)
					defer stop()
				}
				invoked := make(chan error, 1)
				go func() { _, err := a.Invoke(ctx, agent.Text("hi")); invoked <- err }()
				<-m.started

				closeCtx, cancel := context.WithCancel(context.Background())
				defer cancel()
				closed := make(chan error, 1)
				go func() { closed <- sys.Close(closeCtx) }()
				synctest.Wait() // everything that can run has run: the model waits for release
				select {
				case err := <-closed:
					t.Errorf("Close returned %v while the invocation's model call still ran", err)
					close(m.release)
					<-invoked
					drainBubble()
					return
				default:
				}
				cancel()
				assert.ErrorIs(t, <-closed, context.Canceled, "Close whose context ended first")
				close(m.release)
				<-m.returned
				<-invoked
				assert.NoError(t, sys.Close(context.Background()), "a later Close waits for the rest of the shutdown, which the first's context did not stop")
				drainBubble()
			})
		})
	}
}

// drainBubble lets the fake clock of a synctest bubble run a minute on,
// once everything else in it waits: Proto.Actor's dead-letter throttle
// (a message to a stopped actor) waits on a ticker of its own, and a
// bubble must end with no goroutine left.
func drainBubble() { time.Sleep(time.Minute) }
