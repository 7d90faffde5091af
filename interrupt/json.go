package interrupt

import (
	"fmt"

	"github.com/braidhq/braid/internal/strictjson"
)

// This file is the JSON form of interrupts and interrupt state without
// reflection: the append functions write exactly what encoding/json writes
// for them (HTML escaping off), and ParseState reads that form strictly,
// for stored records (SPEC S5).

// AppendJSON appends the interrupt's wire form (see Interrupt): byte for
// byte what encoding/json writes with HTML escaping off. A reason or answer
// that is not valid JSON is an error, and dst is returned unchanged.
func (i Interrupt) AppendJSON(dst []byte) ([]byte, error) {
	out := append(dst, `{"id":`...)
	out = strictjson.AppendString(out, i.ID)
	out = append(out, `,"name":`...)
	out = strictjson.AppendString(out, i.Name)
	var err error
	if len(i.Reason) > 0 {
		if out, err = strictjson.AppendRaw(append(out, `,"reason":`...), i.Reason); err != nil {
			return dst, fmt.Errorf("interrupt_id=<%s>: reason: %w", i.ID, err)
		}
	}
	if i.Answered && len(i.Response.raw) > 0 {
		if out, err = strictjson.AppendRaw(append(out, `,"response":`...), i.Response.raw); err != nil {
			return dst, fmt.Errorf("interrupt_id=<%s>: response: %w", i.ID, err)
		}
	}
	out = append(out, `,"source":`...)
	out = strictjson.AppendString(out, string(i.Source))
	return append(out, '}'), nil
}

// AppendJSON appends {"activated":..,"interrupts":[..]}, the interrupts in
// raise order, as MarshalJSON writes it.
func (s *State) AppendJSON(dst []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append(dst, `{"activated":`...)
	out = strictjson.AppendBool(out, s.activated)
	out = append(out, `,"interrupts":[`...)
	for k, in := range s.list {
		if k > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = in.AppendJSON(out); err != nil {
			return dst, err
		}
	}
	return append(out, "]}"...), nil
}

// ParseState reads interrupt state from the form AppendJSON writes, and
// nothing else: "activated" (a bool) and "interrupts" (an array) are
// required; every interrupt has "id" (not empty, unique), "name" and
// "source" (a known one), and may have "reason" and "response" (a present
// response, null included, marks it answered); no other key, no key twice,
// no null where a string or bool belongs. An empty, null or missing id is
// an error wrapping ErrEmptyID. Raw values are copied.
func ParseState(data []byte) (*State, error) {
	s := &State{}
	keys := strictjson.NewKeys("interrupt state", stateKeys)
	err := strictjson.Decode(data, func(r *strictjson.Reader) error {
		return r.Fields(&keys, func(i int) (err error) {
			switch {
			case i == 0:
				if err := r.NotNull("activated"); err != nil {
					return err
				}
				s.activated, err = r.Bool()
				return err
			}
			return r.Array(func() error {
				in, err := readInterrupt(r)
				if err != nil {
					return fmt.Errorf("interrupt %d: %w", len(s.list), err)
				}
				s.list = append(s.list, in)
				return nil
			})
		})
	})
	if err == nil {
		err = keys.Require(0, 1)
	}
	if err == nil {
		err = uniqueIDs(s.list)
	}
	if err != nil {
		return nil, fmt.Errorf("interrupt state: %w", err)
	}
	s.reindex()
	s.version++
	return s, nil
}

// The keys of the stored form, in index order.
var (
	stateKeys     = []string{"activated", "interrupts"}
	interruptKeys = []string{"id", "name", "source", "reason", "response"}
)

// uniqueIDs refuses a list with an id twice.
func uniqueIDs(list []Interrupt) error {
	if len(list) <= indexFrom {
		for i := range list {
			for j := range i {
				if list[j].ID == list[i].ID {
					return fmt.Errorf("interrupt_id=<%s> appears twice", list[i].ID)
				}
			}
		}
		return nil
	}
	seen := make(map[string]bool, len(list))
	for _, in := range list {
		if seen[in.ID] {
			return fmt.Errorf("interrupt_id=<%s> appears twice", in.ID)
		}
		seen[in.ID] = true
	}
	return nil
}

func readInterrupt(r *strictjson.Reader) (Interrupt, error) {
	var in Interrupt
	keys := strictjson.NewKeys("interrupt", interruptKeys)
	err := r.Fields(&keys, func(i int) (err error) {
		switch {
		case i == 0 && r.Null():
			// an empty id, refused below
		case i == 0:
			in.ID, err = r.StringNotNull("id")
		case i == 1:
			in.Name, err = r.StringNotNull("name")
		case i == 2:
			var src string
			src, err = r.StringNotNull("source")
			in.Source = Source(src)
		case i == 3:
			in.Reason, err = r.RawCopy()
		default:
			in.Response.raw, err = r.RawCopy()
			in.Answered = true
		}
		return err
	})
	switch {
	case err != nil:
		return in, err
	case !keys.Has(0) || in.ID == "":
		return in, fmt.Errorf("interrupt record: %w", ErrEmptyID)
	}
	if err := keys.Require(1, 2); err != nil {
		return in, fmt.Errorf("interrupt_id=<%s>: %w", in.ID, err)
	}
	if !in.Source.Valid() {
		return in, fmt.Errorf("interrupt_id=<%s>: unknown source %q", in.ID, in.Source)
	}
	return in, nil
}
