package agentjson

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/braidhq/braid/internal/strictjson"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
)

// Data is an agent's record data. Its stored form is
// {"session":..,"owner":..,"state":{..},"interrupts":{..},"pending":..,"usage":{..}}
// (session and owner left out when empty, pending when there is none,
// usage when it is zero; state keys sorted; HTML escaping off).
type Data struct {
	// Session and Owner name the record's key, so that a record found
	// under another key is damage (SPEC S5); records of earlier builds
	// have neither.
	Session    string                     `json:"session,omitempty"`
	Owner      string                     `json:"owner,omitempty"`
	State      map[string]json.RawMessage `json:"state"`
	Interrupts *interrupt.State           `json:"interrupts"`
	Pending    json.RawMessage            `json:"pending,omitempty"`
	// Usage is left out when zero (a record of an earlier build has none).
	Usage *model.Usage `json:"usage,omitempty"`
}

// Append appends d in its stored form to dst: exactly what encoding/json
// writes for d with HTML escaping off.
func Append(dst []byte, d Data) ([]byte, error) {
	out := append(dst, '{')
	if d.Session != "" {
		out = append(strictjson.AppendString(append(out, `"session":`...), d.Session), ',')
	}
	if d.Owner != "" {
		out = append(strictjson.AppendString(append(out, `"owner":`...), d.Owner), ',')
	}
	out = append(out, `"state":{`...)
	keys := make([]string, 0, len(d.State))
	for k := range d.State {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(strictjson.AppendString(out, k), ':')
		if out, err = strictjson.AppendRaw(out, d.State[k]); err != nil {
			return dst, fmt.Errorf("state key %q: %w", k, err)
		}
	}
	if out, err = d.Interrupts.AppendJSON(append(out, `},"interrupts":`...)); err != nil {
		return dst, err
	}
	if len(d.Pending) > 0 {
		if out, err = strictjson.AppendRaw(append(out, `,"pending":`...), d.Pending); err != nil {
			return dst, fmt.Errorf("pending: %w", err)
		}
	}
	if u := d.Usage; u != nil {
		out = strconv.AppendInt(append(out, `,"usage":{"inputTokens":`...), int64(u.InputTokens), 10)
		out = strconv.AppendInt(append(out, `,"outputTokens":`...), int64(u.OutputTokens), 10)
		out = strconv.AppendInt(append(out, `,"totalTokens":`...), int64(u.TotalTokens), 10)
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// DataKeys are the keys of the stored form, in index order.
var (
	DataKeys  = []string{"state", "interrupts", "pending", "session", "owner", "usage"}
	usageKeys = []string{"inputTokens", "outputTokens", "totalTokens"}
)

// Parse reads an agent's data strictly: "state" (an object) and
// "interrupts" (interrupt.ParseState's form) are required (null reads as
// nil, which OpenAgent refuses), "pending" is any JSON value (the agent
// reads it), "session" and "owner" are optional non-empty strings,
// "usage" is optional and exactly {"inputTokens":n,"outputTokens":n,
// "totalTokens":n} with integers as encoding/json writes them, no other
// key, no key twice.
func Parse(data []byte) (Data, error) {
	var d Data
	keys := strictjson.NewKeys("agent data", DataKeys)
	err := strictjson.Decode(data, func(r *strictjson.Reader) error {
		return r.Fields(&keys, func(i int) (err error) {
			switch {
			case i == 2:
				d.Pending, err = r.RawCopy()
				return err
			case i == 5:
				d.Usage, err = readUsage(r)
				return err
			case i >= 3:
				s, err := r.StringNotNull(DataKeys[i])
				if err == nil && s == "" {
					err = fmt.Errorf("%w: %s is empty", strictjson.ErrStrict, DataKeys[i])
				}
				if i == 3 {
					d.Session = s
				} else {
					d.Owner = s
				}
				return err
			case r.Null():
				return nil // refused by OpenAgent as missing
			case i == 0:
				d.State = map[string]json.RawMessage{}
				return r.Object(func(k []byte) error {
					key := string(k) // k is the Reader's until its next read
					if _, dup := d.State[key]; dup {
						return fmt.Errorf("%w: state key %q twice", strictjson.ErrStrict, key)
					}
					v, err := r.RawCopy()
					d.State[key] = v
					return err
				})
			}
			raw, err := r.Raw()
			if err != nil {
				return err
			}
			d.Interrupts, err = interrupt.ParseState(raw)
			return err
		})
	})
	if err == nil {
		err = keys.Require(0, 1)
	}
	return d, err
}

// readUsage reads a stored usage: an object of exactly the three token
// counts, each an integer written as strconv.Itoa writes it.
func readUsage(r *strictjson.Reader) (*model.Usage, error) {
	if err := r.NotNull("usage (absent when zero)"); err != nil {
		return nil, err
	}
	u := &model.Usage{}
	keys := strictjson.NewKeys("usage", usageKeys)
	err := r.Fields(&keys, func(i int) error {
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(raw))
		if err != nil || strconv.Itoa(n) != string(raw) {
			return fmt.Errorf("%w: usage %s %s is not an integer", strictjson.ErrStrict, usageKeys[i], raw)
		}
		switch i {
		case 0:
			u.InputTokens = n
		case 1:
			u.OutputTokens = n
		default:
			u.TotalTokens = n
		}
		return nil
	})
	if err == nil {
		err = keys.Require(0, 1, 2)
	}
	return u, err
}
