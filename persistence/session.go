package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
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
	// the resume, so of two processes resuming one run, one fails with
	// ErrConflict before it runs anything (SPEC S4).
	SaveResume SavePoint = "resume"
	// SaveToolResult: a tool of the running cycle finished; saving its
	// result means it is not run again after a crash.
	SaveToolResult SavePoint = "tool_result"
	// SaveInterrupt: the owner stopped for interrupts.
	SaveInterrupt SavePoint = "interrupt"
	// SaveInvocation: an invocation ended.
	SaveInvocation SavePoint = "invocation"
)

// Durable reports whether saves at p are durable.
func (p SavePoint) Durable() bool { return p == SaveInterrupt || p == SaveInvocation }

// AgentRecord is what a session keeps for one agent.
type AgentRecord struct {
	Messages   []model.Message
	State      map[string]json.RawMessage
	Interrupts *interrupt.State
	// Pending is the agent's interrupted work, in the agent's own JSON form
	// (null when none).
	Pending json.RawMessage
}

type agentData struct {
	State      map[string]json.RawMessage `json:"state"`
	Interrupts *interrupt.State           `json:"interrupts"`
	Pending    json.RawMessage            `json:"pending,omitempty"`
}

// SessionManager binds a Store to one session and tracks, per owner, the
// version it last loaded or saved, so every save is checked against it
// (SPEC S4). Build a new one (or a new agent) after ErrConflict: the session
// changed under it. Safe for concurrent use by several owners of the session.
type SessionManager struct {
	store     Store
	sessionID string
	opts      managerOptions

	mu     sync.Mutex
	owners map[Key]*ownerState
}

type ownerState struct {
	version  int64
	data     []byte
	messages [][]byte
	// durable: this manager's last write of the record was at a durable
	// point, so a durable point with nothing new has nothing to make durable.
	durable bool
}

// ManagerOption tweaks a SessionManager.
type ManagerOption func(*managerOptions)

type managerOptions struct {
	afterSave func(key Key, point SavePoint, version int64)
	noDurable bool
}

// AfterSave calls fn after every successful save, with the new version:
// tests use it to stop a process at each save point.
func AfterSave(fn func(key Key, point SavePoint, version int64)) ManagerOption {
	return func(o *managerOptions) { o.afterSave = fn }
}

// NoFsync makes every save skip what makes it survive a machine crash
// (SaveOptions.NoSync): saves stay atomic, and safe when the process is
// killed. For tests and benchmarks that want to measure without the disk.
func NoFsync() ManagerOption { return func(o *managerOptions) { o.noDurable = true } }

// NewSessionManager returns a manager for session sessionID in store.
func NewSessionManager(store Store, sessionID string, opts ...ManagerOption) (*SessionManager, error) {
	if store == nil {
		return nil, errors.New("session manager: nil store")
	}
	if err := ValidateID("session", sessionID); err != nil {
		return nil, err
	}
	m := &SessionManager{store: store, sessionID: sessionID, owners: map[Key]*ownerState{}}
	for _, o := range opts {
		o(&m.opts)
	}
	return m, nil
}

// FileSession is the seed's FileSessionManager(session_id, storage_dir): a
// session manager over a FileStore rooted at dir.
func FileSession(sessionID, dir string, opts ...ManagerOption) (*SessionManager, error) {
	st, err := NewFileStore(dir)
	if err != nil {
		return nil, err
	}
	return NewSessionManager(st, sessionID, opts...)
}

// SessionID returns the session id.
func (m *SessionManager) SessionID() string { return m.sessionID }

// Store returns the store.
func (m *SessionManager) Store() Store { return m.store }

func (m *SessionManager) key(kind Kind, id string) Key {
	return Key{SessionID: m.sessionID, Kind: kind, ID: id}
}

// LoadAgent returns the agent's record, or nil (and no error) when the
// session has none for it yet.
func (m *SessionManager) LoadAgent(ctx context.Context, agentID string) (*AgentRecord, error) {
	key := m.key(KindAgent, agentID)
	rec, err := m.store.Load(ctx, key)
	if errors.Is(err, ErrNotFound) {
		m.track(key, &ownerState{})
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d agentData
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, &DamageError{SessionID: m.sessionID, File: "agent " + agentID + " data", Err: fmt.Errorf("%w: %v", ErrDamaged, err)}
	}
	out := &AgentRecord{State: d.State, Interrupts: d.Interrupts, Pending: d.Pending}
	if out.Interrupts == nil {
		out.Interrupts = interrupt.NewState()
	}
	if bytes.Equal(bytes.TrimSpace(out.Pending), []byte("null")) {
		out.Pending = nil
	}
	st := &ownerState{version: rec.Version}
	for i, raw := range rec.Messages {
		var msg model.Message
		if err := json.Unmarshal(raw, &msg); err != nil {
			return nil, &DamageError{SessionID: m.sessionID, File: fmt.Sprintf("agent %s message %d", agentID, i), Err: fmt.Errorf("%w: %v", ErrDamaged, err)}
		}
		out.Messages = append(out.Messages, msg)
	}
	// Track the bytes as this build writes them, to spot unchanged saves.
	st.data, st.messages, err = encodeAgent(out)
	if err != nil {
		return nil, err
	}
	m.track(key, st)
	return out, nil
}

func (m *SessionManager) track(key Key, st *ownerState) {
	m.mu.Lock()
	m.owners[key] = st
	m.mu.Unlock()
}

func encodeAgent(rec *AgentRecord) ([]byte, [][]byte, error) {
	d := agentData{State: rec.State, Interrupts: rec.Interrupts, Pending: rec.Pending}
	if d.State == nil {
		d.State = map[string]json.RawMessage{}
	}
	if d.Interrupts == nil {
		d.Interrupts = interrupt.NewState()
	}
	data, err := marshalCompact(d)
	if err != nil {
		return nil, nil, fmt.Errorf("session: agent data is not JSON-encodable: %w", err)
	}
	msgs := make([][]byte, len(rec.Messages))
	for i, msg := range rec.Messages {
		if msgs[i], err = marshalCompact(msg); err != nil {
			return nil, nil, fmt.Errorf("session: message %d is not JSON-encodable: %w", i, err)
		}
	}
	return data, msgs, nil
}

// SaveAgent saves the agent's record at a save point. It is skipped when
// nothing changed since the last save; a durable point then only makes the
// earlier saves durable (Checkpointer), unless the last save was durable. A save against a session changed by someone else
// fails with a *ConflictError and changes nothing.
func (m *SessionManager) SaveAgent(ctx context.Context, agentID string, rec *AgentRecord, point SavePoint) error {
	key := m.key(KindAgent, agentID)
	if err := key.Validate(); err != nil {
		return err
	}
	data, msgs, err := encodeAgent(rec)
	if err != nil {
		return err
	}
	durable := point.Durable()

	m.mu.Lock()
	st, ok := m.owners[key]
	if !ok {
		st = &ownerState{}
		m.owners[key] = st
	}
	base := *st
	m.mu.Unlock()

	unchanged := 0
	for unchanged < len(msgs) && unchanged < len(base.messages) && bytes.Equal(msgs[unchanged], base.messages[unchanged]) {
		unchanged++
	}
	if base.version > 0 && unchanged == len(msgs) && len(msgs) == len(base.messages) && bytes.Equal(data, base.data) {
		if c, ok := m.store.(Checkpointer); ok && durable && !base.durable {
			if err := c.Checkpoint(ctx, key, !m.opts.noDurable); err != nil {
				return err
			}
			m.mu.Lock()
			st.durable = true
			m.mu.Unlock()
		}
		return nil
	}
	raw := make([]json.RawMessage, len(msgs))
	for i, b := range msgs {
		raw[i] = b
	}
	v, err := m.store.Save(ctx, &Record{Key: key, SchemaVersion: SchemaVersion, Data: data, Messages: raw},
		SaveOptions{Base: base.version, Unchanged: unchanged, Durable: durable, NoSync: m.opts.noDurable})
	if err != nil {
		return err
	}
	m.mu.Lock()
	st.version, st.data, st.messages, st.durable = v, data, msgs, durable
	m.mu.Unlock()
	if m.opts.afterSave != nil {
		m.opts.afterSave(key, point, v)
	}
	return nil
}

// Version returns the version of an owner's record as last loaded or saved
// by this manager (0: none).
func (m *SessionManager) Version(kind Kind, id string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := m.owners[m.key(kind, id)]; ok {
		return st.version
	}
	return 0
}

func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
