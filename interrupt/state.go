package interrupt

import (
	"encoding/json"
	"fmt"
	"sync"
)

// State is the interrupt state of one owner (an agent or an orchestrator):
// the interrupts raised, in raise order, and whether the owner is stopped
// waiting for answers (activated).
//
// The zero State is empty and ready to use. All methods are safe for
// concurrent use; concurrent tools of one cycle raise into one State.
type State struct {
	mu sync.Mutex
	// byID indexes list by id once it holds more than indexFrom
	// interrupts (nil before: a scan is cheaper, and a map costs most of
	// a small state's memory).
	byID      map[string]int
	list      []Interrupt
	activated bool
	version   uint64
}

// NewState returns an empty State.
func NewState() *State { return &State{} }

// indexFrom is the number of interrupts above which a State keeps byID.
const indexFrom = 8

// find returns the index of id in list. The caller holds mu.
func (s *State) find(id string) (int, bool) {
	if s.byID != nil {
		i, ok := s.byID[id]
		return i, ok
	}
	for i := range s.list {
		if s.list[i].ID == id {
			return i, true
		}
	}
	return 0, false
}

// reindex builds byID if list has grown past indexFrom. The caller holds mu.
func (s *State) reindex() {
	if len(s.list) <= indexFrom {
		s.byID = nil
		return
	}
	s.byID = make(map[string]int, len(s.list))
	for i := range s.list {
		s.byID[s.list[i].ID] = i
	}
}

// Register records an interrupt unless one with that id exists; an existing
// record wins and its name and reason never change (SPEC I3). It returns the
// stored record and whether it was created.
func (s *State) Register(in Interrupt) (Interrupt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.find(in.ID); ok {
		return s.list[i].Clone(), false
	}
	s.list = append(s.list, in.Clone())
	if s.byID != nil {
		s.byID[in.ID] = len(s.list) - 1
	} else if len(s.list) > indexFrom {
		s.reindex()
	}
	s.version++
	return in, true
}

// Get returns a copy of the interrupt with the given id.
func (s *State) Get(id string) (Interrupt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.find(id)
	if !ok {
		return Interrupt{}, false
	}
	return s.list[i].Clone(), true
}

// Len returns the number of interrupts recorded.
func (s *State) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.list)
}

// All returns copies of every interrupt, in raise order.
func (s *State) All() []Interrupt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Interrupt, len(s.list))
	for i, in := range s.list {
		out[i] = in.Clone()
	}
	return out
}

// Unanswered returns copies of the interrupts without an answer, in raise
// order (SPEC I8).
func (s *State) Unanswered() []Interrupt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Interrupt
	for _, in := range s.list {
		if !in.Answered {
			out = append(out, in.Clone())
		}
	}
	return out
}

// DropUnanswered removes the unanswered interrupts whose id moot reports,
// keeping the others in raise order, and returns how many it removed: an
// owner drops those whose work ended without them (a tool use that got its
// result), which nobody should be asked to answer any more.
func (s *State) DropUnanswered(moot func(id string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.list[:0]
	for _, in := range s.list {
		if !in.Answered && moot(in.ID) {
			continue
		}
		kept = append(kept, in)
	}
	n := len(s.list) - len(kept)
	if n == 0 {
		return 0
	}
	clear(s.list[len(kept):])
	s.list = kept
	s.reindex()
	s.version++
	return n
}

// Activate marks the owner as stopped, waiting for answers.
func (s *State) Activate() {
	s.mu.Lock()
	s.activated = true
	s.version++
	s.mu.Unlock()
}

// Activated reports whether the owner waits for answers.
func (s *State) Activated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activated
}

// Clear drops every interrupt and deactivates the state. Owners call it when
// the interrupted work has finished, so a later interrupt with an equal id is
// a fresh one (SPEC A7).
func (s *State) Clear() {
	s.mu.Lock()
	s.byID = nil
	s.list = nil
	s.activated = false
	s.version++
	s.mu.Unlock()
}

// Version counts changes; it lets a saver skip writes when nothing changed.
func (s *State) Version() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// CheckResume validates a resume without changing anything: the state must
// be activated, and every response must name a known interrupt once and
// carry an answer (SPEC I7).
func (s *State) CheckResume(responses []Response) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked(responses)
}

func (s *State) checkLocked(responses []Response) error {
	return CheckResponses(responses, s.activated, func(id string) bool { _, ok := s.find(id); return ok })
}

// CheckResponses runs the checks of a resume (SPEC I7) for an owner that
// keeps its interrupts in a table of its own (an orchestrator): the owner
// is interrupted (activated), the list is not empty, and every response
// has an id that known reports, a response field, and an id of its own.
// It changes nothing.
func CheckResponses(responses []Response, activated bool, known func(id string) bool) error {
	if len(responses) == 0 {
		if !activated {
			return ErrNotInterrupted // Resume() with nothing to answer
		}
		return &EmptyResumeError{}
	}
	if !activated {
		return &IDError{ID: responses[0].ID, Err: ErrNotInterrupted}
	}
	seen := make(map[string]struct{}, len(responses))
	for _, r := range responses {
		if r.ID == "" {
			return &IDError{ID: r.ID, Err: ErrEmptyID}
		}
		if r.err != nil {
			return &IDError{ID: r.ID, Err: r.err}
		}
		if _, dup := seen[r.ID]; dup {
			return &IDError{ID: r.ID, Err: ErrDuplicateResponse}
		}
		seen[r.ID] = struct{}{}
		if !known(r.ID) {
			return &IDError{ID: r.ID, Err: ErrUnknownID}
		}
		if !r.Value.Valid() {
			return &IDError{ID: r.ID, Err: ErrMissingResponse}
		}
	}
	return nil
}

// Resume validates the responses (see CheckResume) and, only if all pass,
// stores each answer on its interrupt. On error nothing has changed.
// Answering an already answered interrupt replaces the answer.
func (s *State) Resume(responses []Response) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(responses); err != nil {
		return err
	}
	for _, r := range responses {
		i, _ := s.find(r.ID)
		s.list[i].Response = Value{raw: cloneRaw(r.Value.raw)}
		s.list[i].Answered = true
	}
	s.version++
	return nil
}

// answer looks up an id and returns its answer, if any.
func (s *State) answer(id string) (Value, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.find(id)
	if !ok || !s.list[i].Answered {
		return Value{}, false
	}
	return s.list[i].Response, true
}

// Clone returns an independent copy.
func (s *State) Clone() *State {
	c := &State{}
	s.CloneInto(c)
	return c
}

// CloneInto makes dst, a State not used so far (its zero value, say), a
// deep copy of s: Clone into memory the caller provides.
func (s *State) CloneInto(dst *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst.mu.Lock()
	defer dst.mu.Unlock()
	dst.activated, dst.version, dst.byID, dst.list = s.activated, s.version, nil, nil
	if len(s.list) > 0 {
		dst.list = make([]Interrupt, len(s.list))
		for i, in := range s.list {
			dst.list[i] = in.Clone()
		}
		dst.reindex()
	}
}

// Restore replaces the contents of s with those of other.
func (s *State) Restore(other *State) {
	c := other.Clone()
	s.mu.Lock()
	s.byID, s.list, s.activated = c.byID, c.list, c.activated
	s.version++
	s.mu.Unlock()
}

type wireState struct {
	Activated  bool        `json:"activated"`
	Interrupts []Interrupt `json:"interrupts"`
}

// MarshalJSON writes {"activated":..,"interrupts":[..]} with the interrupts
// in raise order (AppendJSON).
func (s *State) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil) }

// UnmarshalJSON reads the form MarshalJSON writes. Duplicate ids are an error.
func (s *State) UnmarshalJSON(data []byte) error {
	var w wireState
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("interrupt state: %w", err)
	}
	byID := make(map[string]int, len(w.Interrupts))
	for i, in := range w.Interrupts {
		if _, dup := byID[in.ID]; dup {
			return fmt.Errorf("interrupt state: interrupt_id=<%s> appears twice", in.ID)
		}
		byID[in.ID] = i
	}
	s.mu.Lock()
	s.list, s.activated = w.Interrupts, w.Activated
	if len(s.list) == 0 {
		s.list = nil
	}
	s.reindex()
	s.version++
	s.mu.Unlock()
	return nil
}
