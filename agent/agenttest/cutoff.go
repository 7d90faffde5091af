package agenttest

import (
	"context"
	"sync/atomic"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/tool"
)

// BlockingFetch returns the tool "fetch", for runs cut off in the middle
// of a tool (SPEC S6): its first run sends on started, blocks until its
// context ends, closes cut (unless nil) and returns the context's error;
// later runs return "fetched". runs counts the runs.
func BlockingFetch(runs *atomic.Int32, started, cut chan<- struct{}, opts ...tool.Option) tool.Tool {
	return tool.New("fetch", "fetches", func(ctx context.Context, tc *tool.Context, in struct{}) (string, error) {
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done()
			if cut != nil {
				close(cut)
			}
			return "", ctx.Err()
		}
		return "fetched", nil
	}, opts...)
}

// FetchOnce returns a model that calls fetch (tool use "t1") while the
// last message holds no tool result, then answers "saw: " and the
// result's text.
func FetchOnce() *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, _ := req.LastMessage()
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn("saw: " + rs[0].Text()), nil
		}
		return model.ToolTurn(model.Call("t1", "fetch", map[string]any{})), nil
	})
}
