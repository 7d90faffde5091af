package agent

import (
	"fmt"

	"github.com/braidhq/braid/internal/strictjson"
	"github.com/braidhq/braid/model"
)

// The stored JSON form of pending work without reflection: appendJSON
// writes exactly what encoding/json writes for a Pending (HTML escaping
// off), parsePending reads that form strictly (SPEC S5).

// appendJSON appends p's JSON form.
func (p *Pending) appendJSON(dst []byte) ([]byte, error) {
	out := append(dst, `{"kind":`...)
	out = strictjson.AppendString(out, string(p.Kind))
	var err error
	if p.Message != nil {
		if out, err = p.Message.AppendJSON(append(out, `,"assistantMessage":`...)); err != nil {
			return dst, err
		}
	}
	out = append(out, `,"completedToolResults":`...)
	if p.Completed == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		for i, r := range p.Completed {
			if i > 0 {
				out = append(out, ',')
			}
			if out, err = r.AppendJSON(out); err != nil {
				return dst, err
			}
		}
		out = append(out, ']')
	}
	if len(p.Started) > 0 {
		out = append(out, `,"startedTools":[`...)
		for i, st := range p.Started {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"toolUseId":`...)
			out = strictjson.AppendString(out, st.ToolUseID)
			at, err := st.StartedAt.MarshalJSON()
			if err != nil {
				return dst, fmt.Errorf("started tool %s: %w", st.ToolUseID, err)
			}
			out = append(append(out, `,"startedAt":`...), at...)
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	if p.Cycle != "" {
		out = strictjson.AppendString(append(out, `,"cycleId":`...), p.Cycle)
	}
	return append(out, '}'), nil
}

// The keys of the stored form, in index order.
var (
	pendingKeys   = []string{"kind", "assistantMessage", "completedToolResults", "startedTools", "cycleId"}
	toolStartKeys = []string{"toolUseId", "startedAt"}
)

// parsePending reads pending work from the form appendJSON writes, and
// nothing else: "kind" and "completedToolResults" (an array, or null for
// none) are required; "assistantMessage" is a message, "startedTools" a
// non-empty array and "cycleId" a non-empty string when present
// (appendJSON leaves them out otherwise); a
// start mark is exactly {"toolUseId":..,"startedAt":..} with the time as
// encoding/json writes it; no other key, no key twice.
func parsePending(data []byte) (*Pending, error) {
	p := &Pending{}
	keys := strictjson.NewKeys("pending work", pendingKeys)
	err := strictjson.Decode(data, func(r *strictjson.Reader) error {
		return r.Fields(&keys, func(i int) (err error) {
			switch {
			case i == 0:
				k, err := r.StringNotNull("kind")
				p.Kind = PendingKind(k)
				return err
			case i == 1:
				if err := r.NotNull("assistantMessage (absent when there is none)"); err != nil {
					return err
				}
				raw, err := r.Raw()
				if err != nil {
					return err
				}
				m, err := model.ParseMessage(raw)
				if err != nil {
					return fmt.Errorf("assistantMessage: %w", err)
				}
				p.Message = &m
				return nil
			case i == 2:
				if r.Null() {
					return nil
				}
				p.Completed = []model.ToolResult{}
				return r.Array(func() error {
					raw, err := r.Raw()
					if err != nil {
						return err
					}
					tr, err := model.ParseToolResult(raw)
					if err != nil {
						return fmt.Errorf("completedToolResults %d: %w", len(p.Completed), err)
					}
					p.Completed = append(p.Completed, tr)
					return nil
				})
			case i == 4:
				if p.Cycle, err = r.StringNotNull("cycleId"); err == nil && p.Cycle == "" {
					err = fmt.Errorf("%w: cycleId is empty (absent when there is none)", strictjson.ErrStrict)
				}
				return err
			}
			err = r.Array(func() error {
				st, err := readToolStart(r)
				if err != nil {
					return fmt.Errorf("startedTools %d: %w", len(p.Started), err)
				}
				p.Started = append(p.Started, st)
				return nil
			})
			if err == nil && len(p.Started) == 0 {
				err = fmt.Errorf("%w: startedTools is empty (absent when there is none)", strictjson.ErrStrict)
			}
			return err
		})
	})
	if err == nil {
		err = keys.Require(0, 2)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func readToolStart(r *strictjson.Reader) (ToolStart, error) {
	var st ToolStart
	keys := strictjson.NewKeys("start mark", toolStartKeys)
	err := r.Fields(&keys, func(i int) error {
		if err := r.NotNull(toolStartKeys[i]); err != nil {
			return err
		}
		if i == 0 {
			var err error
			st.ToolUseID, err = r.String()
			return err
		}
		// The time as time.Time reads and writes it: its JSON text as
		// stored, escapes not undone (time.Time refuses them).
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		if err := st.StartedAt.UnmarshalJSON(raw); err != nil || raw[0] != '"' {
			return fmt.Errorf("%w: startedAt %s is not a time (%v)", strictjson.ErrStrict, raw, err)
		}
		if again, err := st.StartedAt.MarshalJSON(); err != nil || string(again) != string(raw) {
			return fmt.Errorf("%w: startedAt %s is not written as %s", strictjson.ErrStrict, raw, again)
		}
		return nil
	})
	if err == nil {
		err = keys.Require(0, 1)
	}
	return st, err
}
