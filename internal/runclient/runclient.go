package runclient

import (
	"context"
	"errors"
	"iter"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/proto/braidv1"
)

// Invoke runs o on in and returns the run's result; node results and
// errors that their runners gave in process (actors.SetLocalResult,
// actors.SetLocalError) keep those forms.
func Invoke(ctx context.Context, o *actors.Orchestrator, in agent.Input) (*multiagent.Result, error) {
	w, err := agent.InputToWire(in)
	if err != nil {
		return nil, err
	}
	res, locals, err := o.InvokeLocal(ctx, w)
	if err != nil {
		return nil, err
	}
	return multiagent.ResultFromWireLocal(res, locals)
}

// Stream runs o on in and yields the run's events, the last one a
// *multiagent.ResultEvent whose result keeps the in-process forms, as
// Invoke's does; a FAILED node's NodeStopEvent (a nested run's too) has
// the same Go error as that result; an error ends the sequence. A consumer that
// stops early leaves the run going on to its end, unread.
func Stream(ctx context.Context, o *actors.Orchestrator, in agent.Input) iter.Seq2[multiagent.Event, error] {
	return func(yield func(multiagent.Event, error) bool) {
		w, err := agent.InputToWire(in)
		if err != nil {
			yield(nil, err)
			return
		}
		var convErr error
		res, locals, err := o.StreamLocal(ctx, w, func(ev *braidv1.MultiAgentEvent, l actors.Locals) bool {
			e, err := multiagent.EventFromWireLocal(ev, l)
			if err != nil {
				convErr = err
				return false
			}
			return yield(e, nil)
		})
		switch {
		case convErr != nil:
			yield(nil, convErr)
		case errors.Is(err, actors.ErrStreamStopped):
		case err != nil:
			yield(nil, err)
		default:
			r, err := multiagent.ResultFromWireLocal(res, locals)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(&multiagent.ResultEvent{Result: r}, nil)
		}
	}
}

// Status returns o's run as it stands.
func Status(ctx context.Context, o *actors.Orchestrator) (*multiagent.Result, error) {
	res, err := o.Status(ctx)
	if err != nil {
		return nil, err
	}
	return multiagent.ResultFromWire(res)
}
