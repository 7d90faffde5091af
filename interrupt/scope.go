package interrupt

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// Scope raises interrupts for one event dispatch (all the callbacks of one
// hook event) or one tool call, into the owner's State (SPEC I3–I5).
//
// The runtime creates a Scope, runs the callbacks (calling BeginCallback
// before each), calls End, then reads Raised: every unanswered interrupt
// recorded through the Scope stops the work, whether or not the callback
// returned the error. After End, Interrupt fails with ErrScopeEnded and
// records nothing, so a callback or tool that keeps its event or context and
// raises later is told so, rather than recording an interrupt nothing stops
// for. A Scope is safe for concurrent use.
type Scope struct {
	state  *State
	source Source
	idFor  func(name string) string

	mu       sync.Mutex
	ended    bool
	callback int
	names    []raisedName // in first-raise order
	raised   []Interrupt  // unanswered, in call order (SPEC I8)
	// Indexes of names and raised, made once they pass scopeScan entries,
	// so that many interrupts in one event stay linear: most events raise
	// one or two, which a scan finds without a map's allocations.
	nameIdx   map[string]int      // name → index in names
	raisedIDs map[string]struct{} // ids in raised
	dupErr    error
}

// raisedName is a name raised in the scope and the callback that first
// raised it.
type raisedName struct {
	name     string
	callback int
}

const scopeScan = 8

// nameCallback returns the callback that first raised name. The caller
// holds mu.
func (s *Scope) nameCallback(name string) (int, bool) {
	if s.nameIdx != nil {
		i, ok := s.nameIdx[name]
		if !ok {
			return 0, false
		}
		return s.names[i].callback, true
	}
	for _, n := range s.names {
		if n.name == name {
			return n.callback, true
		}
	}
	return 0, false
}

// addName records name for the current callback. The caller holds mu and
// checked that name is not recorded.
func (s *Scope) addName(name string) {
	s.names = append(s.names, raisedName{name: name, callback: s.callback})
	switch {
	case s.nameIdx != nil:
		s.nameIdx[name] = len(s.names) - 1
	case len(s.names) > scopeScan:
		s.nameIdx = make(map[string]int, 2*len(s.names))
		for i, n := range s.names {
			s.nameIdx[n.name] = i
		}
	}
}

// listed reports whether id is in raised. The caller holds mu.
func (s *Scope) listed(id string) bool {
	if s.raisedIDs != nil {
		_, ok := s.raisedIDs[id]
		return ok
	}
	for i := range s.raised {
		if s.raised[i].ID == id {
			return true
		}
	}
	return false
}

// addRaised lists it in raised. The caller holds mu.
func (s *Scope) addRaised(it Interrupt) {
	s.raised = append(s.raised, it)
	switch {
	case s.raisedIDs != nil:
		s.raisedIDs[it.ID] = struct{}{}
	case len(s.raised) > scopeScan:
		s.raisedIDs = make(map[string]struct{}, 2*len(s.raised))
		for i := range s.raised {
			s.raisedIDs[s.raised[i].ID] = struct{}{}
		}
	}
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

// End marks the end of the event dispatch or tool call: later Interrupt
// calls fail with ErrScopeEnded. It waits for Interrupt calls under way, so
// that Raised, read after End, lists every interrupt recorded through the
// Scope. Raised, Interrupted and Err keep working.
func (s *Scope) End() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// Interrupt raises the interrupt called name (SPEC I3). If the owner already
// holds an answer for it, or a preemptive answer is given, the answer is
// returned with a nil error. Otherwise the interrupt is recorded and a
// *RaisedError matching ErrInterrupted is returned: return it from the hook
// or tool. reason may be nil (no reason) or any JSON-encodable value; one
// that cannot be encoded is an error here, not at save time (a string in
// it that is not valid UTF-8 is stored, and returned in the *RaisedError,
// with U+FFFD for each stray byte, as JSON writers do, so the caller and a
// fresh runtime read the same reason). A name, or the id made from it, that
// is not valid UTF-8 fails with ErrNotUTF8 and records nothing: JSON could
// not keep it as given. After End it fails with ErrScopeEnded and records
// nothing.
func (s *Scope) Interrupt(name string, reason any, opts ...RaiseOption) (Value, error) {
	if s == nil || s.state == nil {
		return Value{}, ErrNotInterruptible
	}
	if name == "" {
		return Value{}, ErrEmptyName
	}
	if !utf8.ValidString(name) {
		return Value{}, fmt.Errorf("interrupt_name=%q | %w", name, ErrNotUTF8)
	}
	id := s.idFor(name)
	if !utf8.ValidString(id) {
		return Value{}, fmt.Errorf("interrupt_name=%q interrupt_id=%q | %w", name, id, ErrNotUTF8)
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
	var (
		preemptive    Value
		preemptiveErr error
	)
	if o.hasPreemptive {
		// Encoded outside the lock; an error counts only where the
		// answer would be stored.
		preemptive, preemptiveErr = ValueOf(o.preemptive)
	}
	// Held to the end (the State's lock is taken inside it, never the
	// other way round), so that End waits for a raise under way.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return Value{}, fmt.Errorf("interrupt_name=<%s> | %w", name, ErrScopeEnded)
	}
	cb, known := s.nameCallback(name)
	if known && cb != s.callback {
		err := &DuplicateNameError{Name: name}
		if s.dupErr == nil {
			s.dupErr = err
		}
		return Value{}, err
	}
	if !known {
		s.addName(name)
	}

	if v, ok := s.state.answer(id); ok {
		return v, nil
	}
	rec := Interrupt{ID: id, Name: name, Reason: rawReason, Source: s.source}
	if o.hasPreemptive {
		if preemptiveErr != nil {
			return Value{}, fmt.Errorf("interrupt_name=<%s> | %w", name, preemptiveErr)
		}
		rec.Response, rec.Answered = preemptive, true
	}
	stored, _ := s.state.Register(rec)
	if stored.Answered {
		return stored.Response, nil
	}
	if !s.listed(stored.ID) {
		s.addRaised(stored)
	}
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
