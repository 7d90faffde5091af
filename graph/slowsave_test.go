package graph_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/memory"
)

// heldSave is a memory store whose first save that hold picks waits, after
// signalling entered, until release is closed: a save stuck on a slow
// disk, a database, or another process's lock.
type heldSave struct {
	*memory.Store
	hold     func(opts persistence.SaveOptions, changes []persistence.Change) bool
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

func newHeldSave(hold func(persistence.SaveOptions, []persistence.Change) bool) *heldSave {
	return &heldSave{Store: memory.New(), hold: hold,
		entered: make(chan struct{}), release: make(chan struct{})}
}

func (s *heldSave) Save(ctx context.Context, opts persistence.SaveOptions, changes ...persistence.Change) ([]int64, error) {
	if s.hold(opts, changes) {
		held := false
		s.once.Do(func() { held = true })
		if held {
			close(s.entered)
			<-s.release
		}
	}
	return s.Store.Save(ctx, opts, changes...)
}

func (s *heldSave) let() { s.released.Do(func() { close(s.release) }) }

// soon is a context for a call that must be answered at once: it fails
// the test, rather than hanging it, if the call waits for the held save.
func soon(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func orchestratorSave(_ persistence.SaveOptions, changes []persistence.Change) bool {
	for _, c := range changes {
		if c.Key.Kind == persistence.KindMultiAgent {
			return true
		}
	}
	return false
}

// SPEC R3: while the save that launches a node waits for the store, the
// graph answers Status (EXECUTING) and Cancel at once; the
// node, whose run is sent once the save ends, gets the Cancel too: it
// ends CANCELLED, nothing downstream runs, and the run is CANCELLED.
func TestGraphActor_R3_StatusAndCancelAreAnsweredWhileALaunchSaveWaits(t *testing.T) {
	st := newHeldSave(orchestratorSave)
	r := newRecorder()
	started := make(chan struct{}, 1)
	b := graph.NewBuilder().AddNode("slow", blockingAgent(started)).AddNode("next", textAgent(r, "next")).
		AddEdge("slow", "next")
	g := build(t, b, graph.Config{ID: "g", Session: manager(t, st, "s")})
	t.Cleanup(st.let) // before the graph's Close, which waits for its save
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(context.Background(), agent.Text("go"))
		assert.NoError(t, err)
		done <- res
	}()
	<-st.entered
	status, err := g.Status(soon(t))
	require.NoError(t, err, "Status waited for the save")
	assert.Equal(t, multiagent.StatusExecuting, status.Status)
	ok, err := g.Cancel(soon(t))
	require.NoError(t, err, "Cancel waited for the save")
	assert.True(t, ok)
	st.let()

	var res *multiagent.Result
	select {
	case res = <-done:
	case <-soon(t).Done():
		t.Fatal("the cancelled node's run never ended")
	}
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusCancelled, res.Status)
	assert.Equal(t, multiagent.StatusCancelled, res.Node("slow").Status)
	assert.Nil(t, res.Node("next"))
	assert.Equal(t, 0, r.count("model:next"))
}

// SPEC R3, I9: while the invocation's last (durable) save waits for the
// store, Status is answered at once with the run's outcome, and the
// invocation is answered only once the save ended.
func TestGraphActor_R3_StatusIsAnsweredWhileTheLastSaveWaits(t *testing.T) {
	st := newHeldSave(func(opts persistence.SaveOptions, changes []persistence.Change) bool {
		return opts.Durable && orchestratorSave(opts, changes)
	})
	r := newRecorder()
	g := build(t, graph.NewBuilder().AddNode("a", textAgent(r, "a")), graph.Config{ID: "g", Session: manager(t, st, "s")})
	t.Cleanup(st.let) // before the graph's Close, which waits for its save
	done := make(chan *multiagent.Result, 1)
	go func() {
		res, err := g.Invoke(context.Background(), agent.Text("go"))
		assert.NoError(t, err)
		done <- res
	}()
	<-st.entered
	status, err := g.Status(soon(t))
	require.NoError(t, err, "Status waited for the save")
	assert.Equal(t, multiagent.StatusCompleted, status.Status)
	select {
	case <-done:
		t.Fatal("the invocation was answered before its save ended (SPEC I9)")
	default:
	}
	st.let()
	res := <-done
	require.NotNil(t, res)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}

// SPEC I9, M12, R3: a node's interrupts are shown only once the
// orchestrator's save that holds them has committed: while that save
// waits for the store, Status (answered at once) lists none and does not
// show the node INTERRUPTED, and the stream has not yielded the node's
// NodeStop (which carries them); once the save commits, the NodeStop comes,
// then the InterruptEvent, and Status lists the interrupt. A caller that
// answers what it sees can never answer an interrupt the store lacks.
func TestGraphActor_InterruptsAreShownOnlyOnceSaved(t *testing.T) {
	asked := make(chan struct{})
	st := newHeldSave(func(opts persistence.SaveOptions, changes []persistence.Change) bool {
		select {
		case <-asked: // the first save after x asked: its report's
			return orchestratorSave(opts, changes)
		default:
			return false
		}
	})
	r := newRecorder()
	x := askingAgent(r, "x", map[int]bool{1: true}, asked, nil)
	p, letP := heldAnswer("p done")
	g := build(t, graph.NewBuilder().AddNode("x", x).AddNode("p", p), graph.Config{ID: "g", Session: manager(t, st, "s")})
	t.Cleanup(st.let) // before the graph's Close, which waits for its save
	t.Cleanup(letP)
	events, done := streamInBackground(t, g, "go")

	<-st.entered // x's report is being saved; p still runs
	status, err := g.Status(soon(t))
	require.NoError(t, err, "Status waited for the save")
	assert.Empty(t, status.Interrupts, "Status lists an interrupt the store does not have")
	if n := status.Node("x"); n != nil {
		assert.NotEqual(t, multiagent.StatusInterrupted, n.Status, "Status shows x INTERRUPTED before it is saved")
	}
	// p answers now: its agent's events are streamed after anything the
	// orchestrator sent at x's report.
	letP()
	before := eventsUntil(events, "message g/p assistant")
	assert.NotContains(t, before, "stop g/x INTERRUPTED", "x's NodeStop, with its interrupts, came before its save")

	st.let()
	res := <-done
	require.NotNil(t, res)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	after := eventsUntil(events, "")
	stop, intr := slices.Index(after, "stop g/x INTERRUPTED"), slices.Index(after, "interrupt g/x")
	assert.True(t, stop >= 0 && intr > stop, "x's NodeStop, then its InterruptEvent: %v", after)
	status, err = g.Status(soon(t))
	require.NoError(t, err)
	require.Len(t, status.Interrupts, 1)
	assert.Equal(t, interruptNamed(t, res, "x-ask").ID, status.Interrupts[0].ID)
	assert.Equal(t, multiagent.StatusInterrupted, status.Node("x").Status)
}

// SPEC I9, M12: a nested graph's node that stops for an interrupt is
// streamed (its NodeStop, which lists the interrupt) once the outer
// graph's save holds it, as the outer node's NodeStop and InterruptEvent
// are: the nested graph's own save is not enough, since until the outer
// one commits, the outer run (the one a caller answers) does not know of
// the interrupt, and a crash or a failed save there leaves a resume that
// answers it refused.
func TestGraphActor_NestedInterruptsAreStreamedOnlyOnceTheOuterSaveHoldsThem(t *testing.T) {
	asked := make(chan struct{})
	st := newHeldSave(func(opts persistence.SaveOptions, changes []persistence.Change) bool {
		select {
		case <-asked: // the outer graph's first save after x asked: n's report's
		default:
			return false
		}
		for _, c := range changes {
			if c.Key.Kind == persistence.KindMultiAgent && c.Key.ID == "g" {
				return true
			}
		}
		return false
	})
	r := newRecorder()
	inner := graph.NewBuilder().AddNode("x", askingAgent(r, "x", map[int]bool{1: true}, asked, nil))
	p, letP := heldAnswer("p done")
	g := build(t, graph.NewBuilder().AddNode("n", inner.AsNode(graph.Config{})).AddNode("p", p),
		graph.Config{ID: "g", Session: manager(t, st, "s")})
	t.Cleanup(st.let) // before the graph's Close, which waits for its save
	t.Cleanup(letP)
	events, done := streamInBackground(t, g, "go")

	<-st.entered // n's report is being saved; p still runs
	status, err := g.Status(soon(t))
	require.NoError(t, err)
	assert.Empty(t, status.Interrupts)
	// p answers now: its agent's events are streamed after anything
	// n's node sent before its report.
	letP()
	before := eventsUntil(events, "message g/p assistant")
	assert.NotContains(t, before, "stop g/n/x INTERRUPTED", "the nested node's NodeStop, with its interrupt, came before the outer save")

	st.let()
	res := <-done
	require.NotNil(t, res)
	require.Equal(t, multiagent.StatusInterrupted, res.Status)
	after := eventsUntil(events, "")
	nested, outer, intr := slices.Index(after, "stop g/n/x INTERRUPTED"), slices.Index(after, "stop g/n INTERRUPTED"), slices.Index(after, "interrupt g/n")
	assert.True(t, nested >= 0 && outer > nested && intr > outer, "the nested NodeStop, the outer one, then the InterruptEvent: %v", after)
}

// streamInBackground streams g's run of prompt on a goroutine of its own:
// events gets each event (describe), then is closed; done gets the run's
// result once the stream has ended.
func streamInBackground(t *testing.T, g *graph.Graph, prompt string) (<-chan string, <-chan *multiagent.Result) {
	events := make(chan string, 64)
	done := make(chan *multiagent.Result, 1)
	go func() {
		defer close(events)
		var res *multiagent.Result
		for ev, err := range g.Stream(context.Background(), agent.Text(prompt)) {
			if !assert.NoError(t, err) {
				break
			}
			events <- describe(ev)
			if e, ok := ev.(*multiagent.ResultEvent); ok {
				res = e.Result
			}
		}
		done <- res
	}()
	return events, done
}

// heldAnswer is an agent node that answers text once let is called (let
// may be called more than once).
func heldAnswer(text string) (node actors.Node, let func()) {
	gate := make(chan struct{})
	var once sync.Once
	node = agentnode.Agent(agent.Config{Model: model.ScriptedFunc(func(*model.Request) (model.Turn, error) {
		<-gate
		return model.TextTurn(text), nil
	})})
	return node, func() { once.Do(func() { close(gate) }) }
}

// eventsUntil reads events up to stop (not included), or to their end
// ("" reads them all).
func eventsUntil(events <-chan string, stop string) []string {
	var out []string
	for e := range events {
		if stop != "" && e == stop {
			break
		}
		out = append(out, e)
	}
	return out
}
