package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence/internal/agentjson"
)

// SavePoint says why an owner saves (SPEC S1, I9).
type SavePoint string

// Save points. Interrupt and Invocation saves are durable: they come right
// before someone is told (a result returned, an interrupt streamed). The
// others are atomic, and made durable by the next durable save.
const (
	// SaveMessage: messages were appended (or the history replaced).
	SaveMessage SavePoint = "message"
	// SaveResume: interrupt answers were accepted; saving them first claims
	// the resume, so of two writers resuming one run, one fails with
	// ErrConflict before it runs anything (SPEC S4).
	SaveResume SavePoint = "resume"
	// SaveToolStart: an at-most-once tool is about to run (SPEC S6); the
	// save is durable, so a crash cannot hide that it started.
	SaveToolStart SavePoint = "tool_start"
	// SaveToolResult: a tool of the running cycle finished; saving its
	// result means it is not run again after a crash.
	SaveToolResult SavePoint = "tool_result"
	// SaveInterrupt: the owner stopped for interrupts.
	SaveInterrupt SavePoint = "interrupt"
	// SaveInvocation: an invocation ended.
	SaveInvocation SavePoint = "invocation"
)

// Durable reports whether saves at p are durable.
func (p SavePoint) Durable() bool {
	return p == SaveInterrupt || p == SaveInvocation || p == SaveToolStart
}

// SessionManager binds a Store to one session id. It holds no state of the
// owners: each OpenAgent returns a writer of its own, so two agents built
// on one manager are two writers, and of two that resume one interrupted
// run exactly one proceeds (SPEC S4). Safe for concurrent use; it does not
// own the store (close the store when every manager on it is done).
type SessionManager struct {
	store     Store
	sessionID string
	opts      managerOptions
}

// ManagerOption tweaks a SessionManager.
type ManagerOption func(*managerOptions)

type managerOptions struct {
	afterSave func(key Key, point SavePoint, version int64) // tests: export_test.go
	takenWait func(key Key)                                 // tests: export_test.go
}

// NewSessionManager returns a manager for session sessionID in store. It
// opens nothing: a server builds one per request over a store it opened
// once.
func NewSessionManager(store Store, sessionID string, opts ...ManagerOption) (*SessionManager, error) {
	if store == nil {
		return nil, errors.New("session manager: nil store")
	}
	if err := ValidateID("session", sessionID); err != nil {
		return nil, err
	}
	m := &SessionManager{store: store, sessionID: sessionID}
	for _, o := range opts {
		o(&m.opts)
	}
	return m, nil
}

// SessionID returns the session id.
func (m *SessionManager) SessionID() string { return m.sessionID }

// Store returns the store.
func (m *SessionManager) Store() Store { return m.store }

// Owner is one writer of one owner's record: it knows the version it last
// loaded or saved and how many messages are stored, so a save sends only
// what changed (SPEC S1) and is checked against that version (SPEC S4).
// It belongs to one owner, which calls it one call at a time.
type Owner struct {
	m       *SessionManager
	key     Key
	version int64
	// incarnation is the record's (Record.Incarnation), or the one its
	// first save creates it with: a record deleted and created again by
	// another writer is of another, and this writer stale (SPEC S4).
	incarnation int64
	data        []byte // the data last loaded or saved
	count       int    // messages stored
	// durable: the last write was at a durable point, so a durable point
	// with nothing new has nothing to make durable.
	durable bool
}

// Open loads the record of owner (kind, id) and returns its writer, and
// the record (nil when the session has none for it yet).
func (m *SessionManager) Open(ctx context.Context, kind Kind, id string) (*Owner, *Record, error) {
	key := Key{SessionID: m.sessionID, Kind: kind, ID: id}
	if err := key.Validate(); err != nil {
		return nil, nil, err
	}
	rec, err := m.store.Load(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return &Owner{m: m, key: key, incarnation: NewIncarnation(), durable: true}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	// The loaded record's last save may not have been durable (its writer
	// killed before its next durable point): the first durable point with
	// nothing new syncs.
	return &Owner{m: m, key: key, version: rec.Version, incarnation: rec.Incarnation, data: rec.Data, count: len(rec.Messages)}, rec, nil
}

// Key returns the owner's key.
func (o *Owner) Key() Key { return o.key }

// Version returns the version last loaded or saved (0: none).
func (o *Owner) Version() int64 { return o.version }

// Messages returns how many messages are stored.
func (o *Owner) Messages() int { return o.count }

// Behind compares o with fresh, a writer of the same key opened just now
// (Open, OpenAgent): nil when the stored record is still the one o's
// version names (or there is still none), else the *ConflictError that a
// save of o would fail with, naming o's key, o's version and the stored
// one (SPEC S4), marked Checked. It lets an owner that refuses a call on the strength of
// its state find out, without saving anything, that another writer saved
// since it read that state. Like every other call, it reads o between
// o's saves.
func (o *Owner) Behind(fresh *Owner) error {
	switch {
	case fresh.version != o.version:
		return &ConflictError{Key: o.key, Expected: o.version, Actual: fresh.version, Checked: true}
	case o.version != 0 && fresh.incarnation != o.incarnation:
		return &ConflictError{Key: o.key, Expected: o.version, Actual: fresh.version, Recreated: true, Checked: true}
	}
	return nil
}

// Stage prepares a change: data replaces the record's data, and appended
// follows the first keep stored messages (keep = Messages() to append).
// A change that would change nothing is staged as empty: Commit skips it,
// unless the owner has saved since (then it is stale: a *ConflictError).
func (o *Owner) Stage(data json.RawMessage, keep int, appended []json.RawMessage) (*Staged, error) {
	if keep < 0 || keep > o.count {
		return nil, fmt.Errorf("%w: %s: keep %d of %d stored messages", ErrBadSave, o.key, keep, o.count)
	}
	empty := o.version > 0 && keep == o.count && len(appended) == 0 && bytes.Equal(data, o.data)
	return &Staged{owner: o, empty: empty, change: Change{Key: o.key, Base: o.version, Data: data, From: keep, Messages: appended,
		Incarnation: o.incarnation}}, nil
}

// Staged is one owner's prepared change; Commit saves several at once.
type Staged struct {
	owner  *Owner
	empty  bool
	change Change
	// parker is the agent writer that parked it (DeferDurable): a Commit
	// that fails parks it there again, so that it is not lost.
	parker *AgentSession
	// slot is the parker's slot that holds it since TakeDeferred took
	// it (nil: never taken), for the Commit that carries it to settle.
	slot *parkedSlot
}

// parkedSlot is what an agent's writer holds for its orchestrator: a
// parked change, and, once TakeDeferred has taken it, a channel closed
// when the Commit that carries it has ended.
type parkedSlot struct {
	st    *Staged
	taken chan struct{} // nil: parked, not taken
}

// settle ends the flight of a change taken from its agent, once its
// Commit has ended: committed or stale (done), or parked again for the
// agent's next save; the agent's saves that waited for it go on.
func (st *Staged) settle(done bool) {
	s, cur := st.parker, st.slot
	if s == nil || cur == nil {
		return
	}
	var next *parkedSlot
	if !done {
		next = &parkedSlot{st: st}
	}
	if s.slot.CompareAndSwap(cur, next) {
		close(cur.taken)
	}
}

// Commit saves the staged changes in one transaction, durably if point is
// durable (SPEC S4, M10): all or nothing. Empty changes are skipped; at a
// durable point with nothing to save it makes the earlier saves durable
// (Store.Sync), unless the owners' last writes already were. A failed
// Commit leaves the owners at the versions they had: an agent's parked
// change (TakeDeferred) is parked again, and the agent's next save
// carries it, unless the Commit failed with a *ConflictError naming the
// agent: its writer is stale, and a change based on its version can never
// commit, so it is dropped (the agent opens its record again and goes on
// from the store). If the store committed it but could not say so (a server's
// connection that died after the commit, see Store.Save), the owners'
// next saves are stale and fail with a *ConflictError, which changes
// nothing: what was committed is never written twice, and the owners
// open their records again to go on from it. A nil staged change, or one
// of another manager's owner, is ErrBadSave before any I/O.
func (m *SessionManager) Commit(ctx context.Context, point SavePoint, staged ...*Staged) (err error) {
	defer func() {
		for _, s := range staged {
			switch {
			case s == nil:
			case s.slot != nil:
				s.settle(err == nil || conflictsOn(err, s.owner.key)) // the agent's saves wait for this
			case err != nil && s.parker != nil && !conflictsOn(err, s.owner.key):
				s.parker.slot.CompareAndSwap(nil, &parkedSlot{st: s})
			}
		}
	}()
	var changes []Change
	var owners []*Owner
	stale := false // an owner whose last write was not durable
	for i, s := range staged {
		if s == nil {
			return fmt.Errorf("%w: staged change %d is nil", ErrBadSave, i)
		}
	}
	for _, s := range staged {
		if s.owner.m != m {
			return fmt.Errorf("%w: %s was opened by another session manager", ErrBadSave, s.owner.key)
		}
		stale = stale || !s.owner.durable
		if s.empty {
			if o := s.owner; s.change.Base != o.version || s.change.Incarnation != o.incarnation {
				// Empty against a version its owner has saved over since:
				// stale like any other change (SPEC S4).
				return &ConflictError{Key: o.key, Expected: s.change.Base, Actual: o.version}
			}
			continue
		}
		changes = append(changes, s.change)
		owners = append(owners, s.owner)
	}
	if len(changes) == 0 {
		if !point.Durable() || !stale {
			return nil
		}
		if err := m.store.Sync(ctx); err != nil {
			return err
		}
		for _, s := range staged {
			s.owner.durable = true
		}
		return nil
	}
	durable := point.Durable()
	versions, err := m.store.Save(ctx, SaveOptions{Durable: durable}, changes...)
	if err != nil {
		return err
	}
	for i, o := range owners {
		c := changes[i]
		o.version, o.data, o.count, o.durable = versions[i], c.Data, c.From+len(c.Messages), durable
		if m.opts.afterSave != nil {
			m.opts.afterSave(o.key, point, o.version)
		}
	}
	return nil
}

// AgentRecord is what a session keeps for one agent.
type AgentRecord struct {
	Messages   []model.Message
	State      map[string]json.RawMessage
	Interrupts *interrupt.State
	// Pending is the agent's interrupted work, in the agent's own JSON form
	// (nil when none).
	Pending json.RawMessage
	// Usage is the model usage of the agent's latest invocation so far
	// (zero when none is stored): saved with the turns it counts, so that
	// an invocation a crash cut off and that is carried on counts the
	// model calls made before the crash once (SPEC A9, M7).
	Usage model.Usage
}

// AgentSession is one agent's writer (an Owner that speaks AgentRecords).
// Its agent calls it one call at a time, as an Owner; DeferDurable,
// EndDeferral, TakeDeferred and Parked are safe to call from any
// goroutine meanwhile (an orchestrator takes the parked change on its
// own). The Commit of a taken change updates the writer's Version and
// Messages on the committer's goroutine: read them only in between the
// agent's own saves, with no such Commit in flight.
type AgentSession struct {
	*Owner
	// defer_ parks the durable saves for TakeDeferred (DeferDurable).
	// defer_ and slot are atomics because the orchestrator takes the
	// parked change on its own goroutine (TakeDeferred) while the agent's
	// job saves on another. slot holds the parked change, and, once the
	// orchestrator has taken it, until the Commit that carries it has
	// ended: the agent's saves wait for that, so that they are based on
	// the version it commits and not on the one before (SPEC S4: else
	// one of the two saves conflicts). A save of the agent's claims the
	// slot (empties it) while it stages and commits: the orchestrator then
	// finds nothing to take, and commits nothing of this owner meanwhile.
	defer_ atomic.Bool
	slot   atomic.Pointer[parkedSlot]
}

// DeferDurable makes the agent's saves at durable points (interrupt,
// invocation) wait, staged, for TakeDeferred instead of committing: an
// orchestrator commits them with its own record in one transaction
// (SPEC M10), so that a crash never leaves a node's agent ahead of its
// orchestrator. It lasts until EndDeferral or TakeDeferred: a node calls
// it at the start of each run of its agent whose orchestrator takes the
// saves (actors.DeferCommit), and when its agent is activated during
// such a run. Nothing parked is lost: a later save of the agent, durable
// or not, is merged with the parked change into one change based on the
// last commit (parked again, or committed at once, carrying it). A
// *ConflictError naming the agent (its Commit's or a save's) drops it: its
// writer is stale, and the change could never commit.
func (s *AgentSession) DeferDurable() { s.defer_.Store(true) }

// EndDeferral ends the deferral without taking the parked change: a
// durable save after it (an agent cut off by a node timeout or a Cancel
// that stops later) commits at once, carrying what is parked, as no one
// would take it; what is still parked when the orchestrator saves is
// taken then (TakeDeferred).
func (s *AgentSession) EndDeferral() { s.defer_.Store(false) }

// TakeDeferred returns the change parked since the last commit (nil:
// none) and ends the deferral, like EndDeferral. The caller must commit
// the change with SessionManager.Commit, which parks it again if it
// fails; until that Commit has ended the agent's saves wait for it, so
// that none is based on the version before it. Until then the agent's
// last durable save is not in the store.
func (s *AgentSession) TakeDeferred() *Staged {
	s.defer_.Store(false)
	for {
		cur := s.slot.Load()
		if cur == nil || cur.taken != nil {
			return nil // nothing parked, or a save of the agent's holds it
		}
		next := &parkedSlot{st: cur.st, taken: make(chan struct{})}
		if s.slot.CompareAndSwap(cur, next) {
			cur.st.slot = next
			return cur.st
		}
	}
}

// Parked reports whether a change is parked for TakeDeferred, or taken
// and not yet committed: until then it is in no store, so the agent must
// not be passivated, nor its writer replaced.
func (s *AgentSession) Parked() bool { return s.slot.Load() != nil }

// waitTaken waits until the Commit of the change TakeDeferred took (cur)
// has ended, so that a save is based on what that commit leaves; ctx
// ends the wait.
func (s *AgentSession) waitTaken(ctx context.Context, cur *parkedSlot) error {
	if s.m.opts.takenWait != nil {
		s.m.opts.takenWait(s.key)
	}
	select {
	case <-cur.taken:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: waiting for the commit of the change its orchestrator took: %w", s.key, ctx.Err())
	}
}

// OpenAgent loads the agent's record and returns its writer, and the record
// (nil when the session has none for it yet). Every call is a writer of
// its own. The record is decoded strictly (SPEC S5): data or a message that
// does not read back exactly as stored is a *DamageError naming the part.
func (m *SessionManager) OpenAgent(ctx context.Context, agentID string) (*AgentSession, *AgentRecord, error) {
	o, rec, err := m.Open(ctx, KindAgent, agentID)
	if err != nil || rec == nil {
		if err != nil {
			return nil, nil, err
		}
		return &AgentSession{Owner: o}, nil, nil
	}
	out, err := readAgentRecord(o.key, rec.Data, rec.Messages)
	if err != nil {
		return nil, nil, err
	}
	return &AgentSession{Owner: o}, out, nil
}

// readAgentRecord decodes an agent's stored record strictly (SPEC S5): a
// *DamageError names key and the part that does not read back exactly as
// stored.
func readAgentRecord(key Key, data json.RawMessage, messages []json.RawMessage) (*AgentRecord, error) {
	d, err := agentjson.Parse(data)
	if err != nil {
		return nil, Damaged(key, "data", "%v", err)
	}
	if d.State == nil || d.Interrupts == nil {
		return nil, Damaged(key, "data", `"state" and "interrupts" are required`)
	}
	if err := key.CheckOwner(d.Session, d.Owner); err != nil {
		return nil, Damaged(key, "data", "%v", err)
	}
	out := &AgentRecord{State: d.State, Interrupts: d.Interrupts, Pending: d.Pending, Messages: make([]model.Message, len(messages))}
	if d.Usage != nil {
		out.Usage = *d.Usage
	}
	for i, raw := range messages {
		if out.Messages[i], err = model.ParseMessage(raw); err != nil {
			return nil, Damaged(key, fmt.Sprintf("message %d", i), "%v", err)
		}
		if err := out.Messages[i].Validate(); err != nil {
			return nil, Damaged(key, fmt.Sprintf("message %d", i), "%v", err)
		}
	}
	return out, nil
}

// Save saves the agent at a save point. The history is append-only: the
// first saved messages of rec.Messages are the stored ones (or the parked
// ones, see DeferDurable), and only the rest are encoded and sent (SPEC
// S1); use Rewrite to change earlier ones. Nothing new to save is no save;
// at a durable point that makes the earlier saves durable. A save against
// a record changed by another writer fails with a *ConflictError and
// changes nothing: this writer is stale, and its owner opens the record
// again (an agent does, see agent.Session). Bad input (a nil rec, a
// shorter history) is ErrBadSave before any I/O, and changes nothing.
func (s *AgentSession) Save(ctx context.Context, rec *AgentRecord, point SavePoint) error {
	if rec == nil {
		return fmt.Errorf("%w: %s: nil record", ErrBadSave, s.key)
	}
	return s.save(ctx, rec, -1, point)
}

// Rewrite saves the agent like Save, but with a history whose first keep
// messages are the saved ones and the rest replace what is saved after
// them: SetMessages (keep 0), or an invocation that takes its prompt back.
// A parked change is merged in: the change staged keeps only what both
// keep of the stored history, so it carries the parked rewrite too.
func (s *AgentSession) Rewrite(ctx context.Context, rec *AgentRecord, keep int, point SavePoint) error {
	switch {
	case rec == nil:
		return fmt.Errorf("%w: %s: nil record", ErrBadSave, s.key)
	case keep < 0:
		return fmt.Errorf("%w: %s: keep %d of the saved messages", ErrBadSave, s.key, keep)
	}
	return s.save(ctx, rec, keep, point)
}

// save is Save (keep < 0) and Rewrite. The orchestrator may take the
// parked change on its own goroutine at any time (TakeDeferred): a save
// that finds it taken waits for its commit; else it claims the slot
// while it stages and commits, and gives the parked change back if it
// fails (a failed save leaves the writer as it was), unless it failed
// with a *ConflictError naming this writer's key.
func (s *AgentSession) save(ctx context.Context, rec *AgentRecord, keep int, point SavePoint) error {
	var cur *parkedSlot
	for {
		cur = s.slot.Load()
		if cur != nil && cur.taken != nil {
			if err := s.waitTaken(ctx, cur); err != nil {
				return err
			}
			continue
		}
		if cur == nil || s.slot.CompareAndSwap(cur, nil) {
			break
		}
	}
	var p *Staged
	if cur != nil {
		p = cur.st
	}
	// giveBack parks p again when the save fails, unless err says this
	// writer is stale: p, based on its version too, could never commit.
	var err error
	giveBack := func() {
		if p != nil && !conflictsOn(err, s.key) {
			s.slot.CompareAndSwap(nil, &parkedSlot{st: p})
		}
	}
	n := s.saved(p)
	switch {
	case keep < 0 && len(rec.Messages) < n:
		giveBack()
		return fmt.Errorf("%w: %s: the history has %d messages, %d are saved: a shorter history is a Rewrite",
			ErrBadSave, s.key, len(rec.Messages), n)
	case keep < 0:
		keep = n
	case keep > n:
		giveBack()
		return fmt.Errorf("%w: %s: keep %d of %d saved messages", ErrBadSave, s.key, keep, n)
	}
	if p != nil && p.change.From < keep {
		keep = p.change.From // the parked change replaced the stored messages from there on
	}
	st, err := s.StageAgent(rec, keep)
	if err != nil {
		giveBack()
		return err
	}
	if s.defer_.Load() && (point == SaveInterrupt || point == SaveInvocation) {
		// Parked in p's place (st carries it), for TakeDeferred.
		st.parker = s
		parked := &parkedSlot{st: st}
		s.slot.Store(parked) // the slot is this save's: empty since its claim
		if s.defer_.Load() {
			return nil
		}
		// The deferral ended meanwhile: unless TakeDeferred took st after
		// all, no one will; commit it here.
		if !s.slot.CompareAndSwap(parked, nil) {
			return nil
		}
		return s.m.Commit(ctx, point, st) // failed, it parks st again
	}
	if err = s.m.Commit(ctx, point, st); err != nil {
		giveBack()
		return err
	}
	return nil
}

// conflictsOn reports whether err is a *ConflictError naming key: a
// writer of key based on the version it had is stale for good.
func conflictsOn(err error, key Key) bool {
	var ce *ConflictError
	return errors.As(err, &ce) && ce.Key == key
}

// saved is how many messages the agent's last save left: the parked
// change's, else the stored ones.
func (s *AgentSession) saved(p *Staged) int {
	if p != nil {
		return p.change.From + len(p.change.Messages)
	}
	return s.count
}

// StageAgent prepares the agent's change for Commit; keep as in Rewrite.
// Only the data and the messages after keep are encoded, and checked: a
// message model.Message.Validate refuses (which OpenAgent would refuse
// as damage), or data or a message that does not encode, is ErrBadSave.
func (s *AgentSession) StageAgent(rec *AgentRecord, keep int) (*Staged, error) {
	if rec == nil {
		return nil, fmt.Errorf("%w: %s: nil record", ErrBadSave, s.key)
	}
	if keep < 0 || keep > len(rec.Messages) {
		return nil, fmt.Errorf("%w: %s: keep %d of a %d-message history", ErrBadSave, s.key, keep, len(rec.Messages))
	}
	d := agentjson.Data{Session: s.key.SessionID, Owner: s.key.ID, State: rec.State, Interrupts: rec.Interrupts, Pending: rec.Pending}
	if rec.Usage != (model.Usage{}) {
		u := rec.Usage // not &rec.Usage, which would move every rec to the heap
		d.Usage = &u
	}
	if d.State == nil {
		d.State = map[string]json.RawMessage{}
	}
	if d.Interrupts == nil {
		d.Interrupts = interrupt.NewState()
	}
	data, err := agentjson.Append(nil, d)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: agent data is not JSON-encodable: %w", ErrBadSave, s.key, err)
	}
	appended := make([]json.RawMessage, 0, len(rec.Messages)-keep)
	for i, msg := range rec.Messages[keep:] {
		// OpenAgent refuses a message Validate refuses: saved, it would
		// leave a record no writer can open (SPEC S5).
		if err := msg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: message %d would not load back: %w", ErrBadSave, s.key, keep+i, err)
		}
		b, err := msg.AppendJSON(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: message %d is not JSON-encodable: %w", ErrBadSave, s.key, keep+i, err)
		}
		appended = append(appended, b)
	}
	return s.Stage(data, keep, appended)
}
