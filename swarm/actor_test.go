package swarm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/actors/actorstest"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
	"github.com/braidhq/braid/swarm"
)

// SPEC R2, R5, I7, M5: a plain actor drives a swarm's orchestrator by
// protobuf messages only. While it is idle and while it is interrupted,
// each request with its fields zero (an invoke without input, streamed or
// not, an empty resume, a response without an id, a status request, a
// cancel) and a message of another owner is sent first without a sender
// (dropped, or run without harm) and then with one: that one gets
// exactly one reply, a protobuf message that serializes (an Error decodes
// to the typed error), and the run is as it was. The resume by protobuf,
// streamed, then finishes the run.
func TestSwarmActor_DrivenByProtobufMessagesZeroValuesIncluded(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	r := newRecorder()
	b := swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{to: "b", message: "review"})).AddAgent(teamAgent(r, "b", handoff{}))
	s := build(t, b, swarm.Config{System: sys, Hooks: []hook.Provider{gate(r, "b")}})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	ask := func(msg any) proto.Message {
		t.Helper()
		s.Binding().Request(msg, inbox)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // only turns a hang into a failure
		defer cancel()
		rep, err := inbox.Receive(wctx)
		require.NoError(t, err, "a reply to %T %v", msg, msg)
		pm, ok := rep.(proto.Message)
		require.True(t, ok, "reply %T to %T", rep, msg)
		_, err = proto.Marshal(pm)
		require.NoError(t, err, "reply %T to %T", rep, msg)
		return pm
	}
	status := func() *braidv1.MultiAgentResult {
		t.Helper()
		st, ok := ask(&braidv1.MultiAgentStatusRequest{}).(*braidv1.MultiAgentResult)
		require.True(t, ok)
		return st
	}
	type want struct {
		reply proto.Message
		err   error // for an Error, what it matches
	}
	errReply := &braidv1.Error{}
	check := func(phase string, cases map[proto.Message]want) {
		t.Helper()
		before := status()
		for msg, w := range cases {
			s.Binding().Send(msg)
			rep := ask(msg)
			require.IsType(t, w.reply, rep, "%s: %T %v", phase, msg, msg)
			if w.err != nil {
				assert.ErrorIs(t, agent.ErrorFromWire(rep.(*braidv1.Error)), w.err, "%s: %T %v", phase, msg, msg)
			}
			// Exactly one reply: the next one is the status asked for now.
			assert.True(t, proto.Equal(before, status()), "%s: %T %v: one reply, nothing changed", phase, msg, msg)
		}
	}
	common := map[proto.Message]want{
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{[]byte(`{`)}}, Stream: true}: {errReply, nil},
		&braidv1.MultiAgentStatusRequest{}: {&braidv1.MultiAgentResult{}, nil},
		&braidv1.MultiAgentCancel{}:        {&braidv1.MultiAgentCancelled{}, nil},
		&braidv1.AgentStatusRequest{}:      {errReply, actors.ErrUnknownMessage},
	}
	idle := map[proto.Message]want{
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Resume: true}}:                                {errReply, interrupt.ErrNotInterrupted},
		&braidv1.MultiAgentInvoke{}:                                                                        {errReply, actors.ErrEmptyTask},
		&braidv1.MultiAgentInvoke{Stream: true}:                                                            {errReply, actors.ErrEmptyTask},
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Responses: []*braidv1.InterruptResponse{{}}}}: {errReply, interrupt.ErrNotInterrupted},
	}
	interrupted := map[proto.Message]want{
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Resume: true}}:                                {errReply, interrupt.ErrEmptyResume},
		&braidv1.MultiAgentInvoke{}:                                                                        {errReply, interrupt.ErrResumeRequired},
		&braidv1.MultiAgentInvoke{Stream: true}:                                                            {errReply, interrupt.ErrResumeRequired},
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Responses: []*braidv1.InterruptResponse{{}}}}: {errReply, interrupt.ErrEmptyID},
		&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Responses: []*braidv1.InterruptResponse{
			{InterruptId: interrupt.BeforeNodeCallID("b", "approval")}}}}: {errReply, interrupt.ErrMissingResponse},
	}
	for m, w := range common {
		idle[m], interrupted[m] = w, w
	}

	check("idle", idle)
	task, err := agent.InputToWire(agent.Text("ship it"))
	require.NoError(t, err)
	res, ok := ask(&braidv1.MultiAgentInvoke{Input: task}).(*braidv1.MultiAgentResult)
	require.True(t, ok)
	require.Equal(t, braidv1.NodeStatus_NODE_STATUS_INTERRUPTED, res.GetStatus())
	require.Len(t, res.GetInterrupts(), 1)
	check("interrupted", interrupted)

	resume := &braidv1.AgentInput{Resume: true, Responses: []*braidv1.InterruptResponse{{InterruptId: res.GetInterrupts()[0].GetId(), Response: []byte(`"y"`)}}}
	s.Binding().Request(&braidv1.MultiAgentInvoke{Input: resume, Stream: true}, inbox)
	events := 0
	for {
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err)
		pm, ok := rep.(proto.Message)
		require.True(t, ok, "%T", rep)
		_, err = proto.Marshal(pm)
		require.NoError(t, err)
		if _, ok := pm.(*braidv1.MultiAgentEvent); ok {
			events++
			continue
		}
		res, ok = pm.(*braidv1.MultiAgentResult)
		require.True(t, ok, "%T %v", pm, pm)
		break
	}
	assert.Positive(t, events)
	assert.Equal(t, braidv1.NodeStatus_NODE_STATUS_COMPLETED, res.GetStatus())
	assert.Equal(t, []string{"a", "b"}, res.GetExecutionOrder())
	assert.Len(t, r.prompts("a"), 1, "a is not run again")
}

// SPEC I7, R2: a task whose messages are JSON but not messages (empty,
// null, an empty object, a system role, no content) is refused before
// anything runs (actors.ErrBadTask), as an agent refuses it: a swarm
// used to skip them and run its entry agent with an empty request.
func TestSwarmActor_ATaskWhoseMessagesAreNotMessagesIsRefused(t *testing.T) {
	ctx := context.Background()
	sys := actorstest.System(t)
	r := newRecorder()
	s := build(t, swarm.NewBuilder().AddAgent(teamAgent(r, "a", handoff{})), swarm.Config{System: sys})
	inbox := actors.NewInbox(sys)
	t.Cleanup(inbox.Close)
	for _, bad := range []string{``, `null`, `{}`, `{"role":"system","content":[{"text":"x"}]}`, `{"role":"user","content":[]}`, `{"role":"user"}`} {
		s.Binding().Request(&braidv1.MultiAgentInvoke{Input: &braidv1.AgentInput{Messages: [][]byte{[]byte(bad)}}}, inbox)
		rep, err := inbox.Receive(ctx)
		require.NoError(t, err)
		e, ok := rep.(*braidv1.Error)
		require.True(t, ok, "%q: %T", bad, rep)
		assert.ErrorIs(t, agent.ErrorFromWire(e), actors.ErrBadTask, "%q", bad)
	}
	assert.Zero(t, r.count("model:a"), "nothing ran")
	res, err := s.Invoke(ctx, agent.Text("go"))
	require.NoError(t, err)
	assert.Equal(t, multiagent.StatusCompleted, res.Status)
}
