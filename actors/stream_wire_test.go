package actors_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/agentnode"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/proto/braidv1"
)

// startAll starts every node of the run at once, and nothing after.
type startAll struct{}

func (startAll) Begin(v *actors.RunView) ([]actors.NodeStart, error) {
	var out []actors.NodeStart
	for _, id := range v.Nodes() {
		out = append(out, actors.NodeStart{Node: id, Input: v.Task()})
	}
	return out, nil
}
func (startAll) Next(*actors.RunView, string) ([]actors.NodeStart, string) { return nil, "" }

// errOwnSentinel is a user's sentinel, unknown to Braid's codecs.
var errOwnSentinel = errors.New("own sentinel")

// SPEC R2, M12: the protobuf API of a stream (Orchestrator.Stream) yields
// the run's events as protobuf messages only, in process too: a FAILED
// node's NodeStop, and a nested run's forwarded with its path, carry the
// codec's wire form of the error, which decodes to ErrRemote and the codes
// the codec knows, never the user's value; the events are those of the
// run, none left out.
func TestOrchestrator_StreamYieldsFailuresInTheirWireForm(t *testing.T) {
	sys := newSystem(t)
	ctx := ctxT(t)
	cause := fmt.Errorf("%w: %w", model.ErrRateLimited, errOwnSentinel)
	fail := agentnode.Func(func(context.Context, agent.Input) ([]model.ContentBlock, error) { return nil, cause })
	inner := graph.NewBuilder().AddNode("x", fail)
	o, err := actors.NewOrchestrator(ctx, sys, actors.OrchestratorConfig{Kind: "test", ID: "o",
		Nodes: []actors.NodeSpec{{ID: "a", Node: fail}, {ID: "inner", Node: inner.AsNode(graph.Config{})}}, Policy: startAll{}})
	require.NoError(t, err)
	defer o.Close(ctx)
	task, err := agent.InputToWire(agent.Text("go"))
	require.NoError(t, err)
	stops := map[string]*braidv1.NodeResult{}
	var starts []string
	res, err := o.Stream(ctx, task, func(ev *braidv1.MultiAgentEvent) bool {
		var m proto.Message = ev
		_, err := proto.Marshal(m)
		require.NoError(t, err)
		switch e := ev.GetEvent().(type) {
		case *braidv1.MultiAgentEvent_NodeStart:
			starts = append(starts, ev.GetNodePath())
		case *braidv1.MultiAgentEvent_NodeStop:
			require.NotContains(t, stops, ev.GetNodePath(), "one NodeStop a node")
			stops[ev.GetNodePath()] = e.NodeStop
		default:
			t.Errorf("unexpected event %v", ev)
		}
		return true
	})
	require.NoError(t, err)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, res.GetStatus())
	assert.ElementsMatch(t, []string{"o/a", "o/inner", "o/inner/x"}, starts)
	require.Len(t, stops, 3, "%v", stops)
	for path, s := range stops {
		require.Equal(t, braidv1.NodeStatus_NODE_STATUS_FAILED, s.GetStatus(), path)
		werr := agent.ErrorFromWire(s.GetError())
		assert.ErrorIs(t, werr, actors.ErrRemote, path)
		assert.ErrorIs(t, werr, model.ErrRateLimited, path)
		assert.NotErrorIs(t, werr, errOwnSentinel, path)
	}
	assert.True(t, proto.Equal(agent.ErrorToWire(cause), stops["o/a"].GetError()), "%v", stops["o/a"].GetError())
	assert.True(t, proto.Equal(agent.ErrorToWire(cause), stops["o/inner/x"].GetError()), "%v", stops["o/inner/x"].GetError())
	assert.Equal(t, `node failed: node "x": rate limited: own sentinel`, stops["o/inner"].GetError().GetMessage())
	for _, r := range res.GetResults() {
		assert.True(t, proto.Equal(r.GetError(), stops["o/"+r.GetNodeId()].GetError()), "%s: the event's error is the result's", r.GetNodeId())
	}
}
