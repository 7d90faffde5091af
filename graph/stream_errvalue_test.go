package graph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
)

// streamFailed streams g on a prompt, calling onStop (if set) with each
// NodeStop event as it comes, and returns the NodeStop events by node
// path and the run's result, which must have failed.
func streamFailed(t *testing.T, g *graph.Graph, onStop func(*multiagent.NodeStopEvent)) (map[string]*multiagent.NodeStopEvent, *multiagent.Result) {
	t.Helper()
	stops := map[string]*multiagent.NodeStopEvent{}
	var final *multiagent.Result
	for ev, err := range g.Stream(context.Background(), agent.Text("go")) {
		require.NoError(t, err)
		switch e := ev.(type) {
		case *multiagent.NodeStopEvent:
			stops[e.Node] = e
			if onStop != nil {
				onStop(e)
			}
		case *multiagent.ResultEvent:
			final = e.Result
		}
	}
	require.NotNil(t, final)
	require.Equal(t, multiagent.StatusFailed, final.Status)
	return stops, final
}

// stopErr is the error of the NodeStop event of the node at path.
func stopErr(t *testing.T, stops map[string]*multiagent.NodeStopEvent, path string) error {
	t.Helper()
	ev := stops[path]
	require.NotNil(t, ev, "no NodeStop for %s among %v", path, stops)
	require.Equal(t, multiagent.StatusFailed, ev.Result.Status)
	require.Error(t, ev.Result.Err)
	return ev.Result.Err
}

// assertSameError checks that the event's error is the very value the
// final result holds for the node, not a decoded copy.
func assertSameError(t *testing.T, final, got error) {
	t.Helper()
	assert.NotErrorIs(t, got, actors.ErrRemote, "no process was crossed")
	assert.True(t, final == got, "the NodeStop event's error %#v is not the result's %#v", got, final)
	assert.Equal(t, final.Error(), got.Error())
}

// SPEC M12, R2: a streamed FAILED node's NodeStop event carries the Go
// error the node failed with, as the final result does: a user's
// sentinel matches errors.Is, and it is the same value.
func TestGraphStream_NodeStopKeepsTheNodesErrorValue(t *testing.T) {
	b := graph.NewBuilder().AddNode("a", failingModelAgent(fmt.Errorf("upstream: %w", errUserDenied)))
	stops, final := streamFailed(t, build(t, b, graph.Config{ID: "g"}), nil)
	err := stopErr(t, stops, "g/a")
	assert.ErrorIs(t, err, errUserDenied)
	assertSameError(t, final.Node("a").Err, err)
}

// SPEC M3, M12, R2: a node failed by a BeforeNodeCall hook's error has a
// NodeStop event whose error matches the hook's sentinel.
func TestGraphStream_NodeStopOfAHookFailureKeepsTheHooksError(t *testing.T) {
	b := graph.NewBuilder().AddNode("a", textAgent(newRecorder(), "a"))
	g := build(t, b, graph.Config{ID: "g", Hooks: []hook.Provider{
		hook.Func(func(context.Context, *multiagent.BeforeNodeCallEvent) error { return errUserDenied }),
	}})
	stops, final := streamFailed(t, g, nil)
	err := stopErr(t, stops, "g/a")
	assert.ErrorIs(t, err, errUserDenied)
	assert.Equal(t, `BeforeNodeCall hook of node "a": denied by policy`, err.Error())
	assertSameError(t, final.Node("a").Err, err)
}

// SPEC M8, M12, R2: a node that outlasts NodeTimeout has a NodeStop event
// whose error is the timeout's own Go error (ErrNodeTimeout), the value
// the final result holds.
func TestGraphStream_NodeStopOfATimeoutKeepsTheTimeoutsError(t *testing.T) {
	slow := agentnode.Func(func(ctx context.Context, _ agent.Input) ([]model.ContentBlock, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	b := graph.NewBuilder().AddNode("slow", slow)
	stops, final := streamFailed(t, build(t, b, graph.Config{ID: "g", NodeTimeout: 50 * time.Millisecond}), nil)
	err := stopErr(t, stops, "g/slow")
	assert.ErrorIs(t, err, actors.ErrNodeTimeout)
	assertSameError(t, final.Node("slow").Err, err)
}

// SPEC M11, M12, R2: in a nested graph, the NodeStop event of the inner
// node (forwarded with its path) and that of the node that runs the
// nested graph carry the Go errors: the user's typed error is found with
// errors.As at both, and at the nested node's inner result.
func TestGraphStream_NestedNodeStopsKeepTheInnerErrorValue(t *testing.T) {
	qe := &quotaError{Left: 2}
	inner := graph.NewBuilder().AddNode("a", failingModelAgent(qe))
	b := graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{}))
	stops, final := streamFailed(t, build(t, b, graph.Config{ID: "g"}), nil)

	var got *quotaError
	innerErr := stopErr(t, stops, "g/inner/a")
	require.ErrorAs(t, innerErr, &got)
	assert.Same(t, qe, got)
	assertSameError(t, final.Node("inner").Multi.Node("a").Err, innerErr)

	nodeErr := stopErr(t, stops, "g/inner")
	assert.ErrorIs(t, nodeErr, actors.ErrNodeFailed)
	require.ErrorAs(t, nodeErr, &got)
	assert.Same(t, qe, got)
	assertSameError(t, final.Node("inner").Err, nodeErr)
	multi := stops["g/inner"].Result.Multi
	require.NotNil(t, multi)
	require.ErrorAs(t, multi.Node("a").Err, &got)
	assert.Same(t, qe, got)
}

// SPEC R2, M12: a run streamed by protobuf messages (MultiAgentInvoke with
// stream set, as another process sends it) gets only protobuf messages,
// FAILED NodeStops of a nested graph included, whose errors are the
// codec's wire forms: decoded, they match ErrRemote and the codes the
// codec knows, not the user's values.
func TestGraphActor_StreamedFailuresStayProtobuf(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	inner := graph.NewBuilder().AddNode("a", failingModelAgent(fmt.Errorf("%w: %w", model.ErrRateLimited, errUserDenied)))
	b := graph.NewBuilder().AddNode("inner", inner.AsNode(graph.Config{}))
	g := build(t, b, graph.Config{ID: "g", System: sys})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	g.Binding().Request(&braidv1.MultiAgentInvoke{Input: task, Stream: true}, inbox)
	var stops []string
	for done := false; !done; {
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err)
		pm, ok := rep.(proto.Message)
		require.True(t, ok, "%T", rep)
		_, err = proto.Marshal(pm)
		require.NoError(t, err)
		switch m := pm.(type) {
		case *braidv1.MultiAgentEvent:
			if s := m.GetNodeStop(); s != nil {
				stops = append(stops, m.GetNodePath())
				require.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, s.GetStatus())
				werr := agent.ErrorFromWire(s.GetError())
				assert.ErrorIs(t, werr, actors.ErrRemote)
				assert.ErrorIs(t, werr, model.ErrRateLimited)
				assert.NotErrorIs(t, werr, errUserDenied)
				assert.Contains(t, werr.Error(), "denied by policy")
			}
		case *braidv1.MultiAgentResult:
			done = true
		default:
			t.Fatalf("unexpected %T: %v", pm, pm)
		}
	}
	assert.Equal(t, []string{"g/inner/a", "g/inner"}, stops)
}
