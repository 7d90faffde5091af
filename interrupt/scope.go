package interrupt

import (
	"fmt"
	"sync"
)

// Scope raises interrupts for one event dispatch (all the callbacks of one
// hook event) or one tool call, into the owner's State (SPEC I3–I5).
//
// The runtime creates a Scope, runs the callbacks (calling BeginCallback
// before each), then reads Raised: every unanswered interrupt recorded through
// the Scope stops the work, whether or not the callback returned the error.
// A Scope is safe for concurrent use.
type Scope struct {
	state  *State
	source Source
	idFor  func(name string) string

	mu        sync.Mutex
	callback  int
	names     map[string]int      // name → callback that first raised it
	raised    []Interrupt         // unanswered, in call order (SPEC I8)
	raisedIDs map[string]struct{} // ids in raised, so each is listed once in O(1)
	dupErr    error
}

// NewScope returns a Scope that records into state, with ids made by idFor
// from the interrupt name and the given source. A nil state makes every
// Interrupt call fail with ErrNotInterruptible (direct tool calls).
func NewScope(state *State, source Source, idFor func(name string) string) *Scope {
	return &Scope{state: state, source: source, idFor: idFor}
}

// RaiseOption tweaks one Interrupt call.
type RaiseOption func(*raiseOptions)

type raiseOptions struct {
	preemptive    any
	hasPreemptive bool
}

// Preemptive gives an answer at the first call: it is stored with the
// interrupt and returned at once, so the work does not stop. An interrupt
// that already exists keeps its stored answer.
func Preemptive(answer any) RaiseOption {
	return func(o *raiseOptions) { o.preemptive, o.hasPreemptive = answer, true }
}

// BeginCallback tells the Scope that the next calls come from callback i of
// the event; names are checked for clashes between callbacks (SPEC I4).
func (s *Scope) BeginCallback(i int) {
	s.mu.Lock()
	s.callback = i
	s.mu.Unlock()
}

// Interrupt raises the interrupt called name (SPEC I3). If the owner already
// holds an answer for it, or a preemptive answer is given, the answer is
// returned with a nil error. Otherwise the interrupt is recorded and a
// *RaisedError matching ErrInterrupted is returned: return it from the hook
// or tool. reason may be nil (no reason) or any JSON-encodable value; one
// that cannot be encoded is an error here, not at save time.
func (s *Scope) Interrupt(name string, reason any, opts ...RaiseOption) (Value, error) {
	if s == nil || s.state == nil {
		return Value{}, ErrNotInterruptible
	}
	if name == "" {
		return Value{}, ErrEmptyName
	}
	var o raiseOptions
	for _, opt := range opts {
		opt(&o)
	}
	var rawReason []byte
	if reason != nil {
		r, err := encodeJSON(reason)
		if err != nil {
			return Value{}, fmt.Errorf("interrupt_name=<%s> | %w: %v", name, ErrReason, err)
		}
		rawReason = r
	}
	s.mu.Lock()
	if cb, ok := s.names[name]; ok && cb != s.callback {
		err := &DuplicateNameError{Name: name}
		if s.dupErr == nil {
			s.dupErr = err
		}
		s.mu.Unlock()
		return Value{}, err
	}
	if s.names == nil {
		s.names = make(map[string]int, 1)
	}
	s.names[name] = s.callback
	s.mu.Unlock()

	id := s.idFor(name)
	if v, ok := s.state.answer(id); ok {
		return v, nil
	}
	rec := Interrupt{ID: id, Name: name, Reason: rawReason, Source: s.source}
	if o.hasPreemptive {
		v, err := ValueOf(o.preemptive)
		if err != nil {
			return Value{}, fmt.Errorf("interrupt_name=<%s> | %w", name, err)
		}
		rec.Response, rec.Answered = v, true
	}
	stored, _ := s.state.Register(rec)
	if stored.Answered {
		return stored.Response, nil
	}
	s.mu.Lock()
	if _, listed := s.raisedIDs[stored.ID]; !listed {
		if s.raisedIDs == nil {
			s.raisedIDs = make(map[string]struct{}, 1)
		}
		s.raisedIDs[stored.ID] = struct{}{}
		s.raised = append(s.raised, stored)
	}
	s.mu.Unlock()
	return Value{}, &RaisedError{Interrupt: stored}
}

// Raised returns the unanswered interrupts recorded through this Scope, in
// call order.
func (s *Scope) Raised() []Interrupt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Interrupt(nil), s.raised...)
}

// Interrupted reports whether any unanswered interrupt was recorded.
func (s *Scope) Interrupted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.raised) > 0
}

// Err returns the first name clash seen (a *DuplicateNameError), or nil.
func (s *Scope) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dupErr
}
