package agent_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
)

// stubbornStream is a model that yields one delta, reports on started,
// waits for resume, then yields n more deltas without watching its
// context, and reports on done once it has yielded them all.
type stubbornStream struct {
	started, resume, done chan struct{}
	n                     int
}

func (m *stubbornStream) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.StreamEvent, error] {
	return func(yield func(model.StreamEvent, error) bool) {
		defer close(m.done)
		if !yield(&model.TextDelta{Text: "a"}, nil) {
			return
		}
		close(m.started)
		<-m.resume
		for i := 0; i < m.n; i++ {
			if !yield(&model.TextDelta{Text: "b"}, nil) {
				return
			}
		}
		yield(&model.BlockStop{}, nil)
		yield(&model.MessageStop{StopReason: model.StopEndTurn}, nil)
	}
}

// SPEC R5: a Stream that ends because its System closed does not leave
// the job that still emits events blocked for good once the events'
// buffer is full: the job's goroutine ends (and the System's Close, which
// waits for it, returns).
func TestStream_EndedByTheSystemClosingLeavesNoJobBlocked(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	m := &stubbornStream{started: make(chan struct{}), resume: make(chan struct{}), done: make(chan struct{}), n: 200}
	a, err := agent.New(context.Background(), agent.Config{System: sys, Model: m})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		for _, err := range a.Stream(ctx, agent.Text("hi")) {
			if err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}()
	<-m.started
	closed := make(chan error, 1)
	go func() { closed <- sys.Close(context.Background()) }()
	require.ErrorIs(t, <-ended, actors.ErrClosed)
	close(m.resume)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's goroutine is blocked emitting events nobody reads")
	}
	require.NoError(t, <-closed, "Close returns once the job has")
}

// SPEC R5: a call in flight when its System closes ends with
// actors.ErrClosed, every time (the System's Close also releases the
// agent's identity, which ends the wait too).
func TestAgent_CallsInFlightWhenTheSystemClosesEndWithErrClosed(t *testing.T) {
	for i := 0; i < 20; i++ {
		for _, stream := range []bool{false, true} {
			sys, err := actors.NewSystem(actors.DefaultConfig())
			require.NoError(t, err)
			m := &stubbornStream{started: make(chan struct{}), resume: make(chan struct{}), done: make(chan struct{}), n: 1}
			a, err := agent.New(context.Background(), agent.Config{System: sys, Model: m})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			ended := make(chan error, 1)
			go func() {
				if !stream {
					_, err := a.Invoke(ctx, agent.Text("hi"))
					ended <- err
					return
				}
				for _, err := range a.Stream(ctx, agent.Text("hi")) {
					if err != nil {
						ended <- err
						return
					}
				}
				ended <- nil
			}()
			<-m.started
			closed := make(chan error, 1)
			go func() { closed <- sys.Close(context.Background()) }()
			err = <-ended
			close(m.resume)
			<-m.done
			require.NoError(t, <-closed, "Close returns once the job has")
			cancel()
			require.ErrorIs(t, err, actors.ErrClosed, "iteration %d, stream %v", i, stream)
		}
	}
}

// SPEC R5: an invocation that completes while its agent is being closed
// (its AfterInvocation hook returns after Close's cancellation reached
// it) reports its outcome to its caller, not ErrClosed: the identity is
// released before the job's goroutine hands the outcome over.
func TestInvoke_CompletingWhileItsAgentClosesKeepsItsOutcome(t *testing.T) {
	sys, err := actors.NewSystem(actors.DefaultConfig())
	require.NoError(t, err)
	defer sys.Close(context.Background())
	lost, won := 0, 0
	for i := 0; i < 300; i++ {
		inHook := make(chan struct{})
		after := hook.Func(func(ctx context.Context, ev *agent.AfterInvocationEvent) error {
			close(inHook)
			<-ctx.Done() // Close's cancellation reached the job: AgentClose was processed
			return nil
		})
		a, err := agent.New(context.Background(), agent.Config{System: sys, Model: model.Scripted(model.TextTurn("hi")), Hooks: []hook.Provider{after}})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // not lent: the job runs on the pool
		res := make(chan error, 1)
		go func() { _, err := a.Invoke(ctx, agent.Text("x")); res <- err }()
		<-inHook
		require.NoError(t, a.Close(context.Background()))
		err = <-res
		cancel()
		switch {
		case err == nil:
			won++
		case errors.Is(err, agent.ErrClosed):
			lost++
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	t.Logf("success %d, ErrClosed %d", won, lost)
	require.Zero(t, lost, "the job completed with a success every time")
}

// SPEC R3: an agent's session load runs off the registry's goroutine: a
// slow store does not hold up the other agents of the System.
func TestAgent_SlowSessionLoadDoesNotHoldUpTheSystem(t *testing.T) {
	sys := actorstest.System(t)
	st := persistencetest.NewGatedLoads("")
	release := make(chan struct{})
	st.Gate.Store(&release)
	sm, err := persistence.NewSessionManager(st, "s1")
	require.NoError(t, err)
	built := make(chan error, 1)
	go func() {
		a, err := agent.New(context.Background(), agent.Config{ID: "slow", System: sys, Session: sm, Model: model.Scripted()})
		if err == nil {
			err = a.Close(context.Background())
		}
		built <- err
	}()
	<-st.Loading
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := agent.New(ctx, agent.Config{ID: "other", System: sys, Model: model.Scripted()})
	require.NoError(t, err, "built while the other agent's load waits")
	require.NoError(t, other.Close(ctx))
	close(release)
	require.NoError(t, <-built)
}
