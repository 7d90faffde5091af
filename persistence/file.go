package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// FileStore is the embedded default store (SPEC S2): one folder per session
// under a root folder, of JSON files a person can read:
//
//	session_<sid>/session.json
//	session_<sid>/agents/agent_<id>/agent.json
//	session_<sid>/agents/agent_<id>/messages/message_<n>.json
//	session_<sid>/multi_agents/multi_agent_<id>/multi_agent.json
//
// agent.json (multi_agent.json) is the record's head: its version, its data
// and the list of message files that make its history, in order. Every save
// writes new message files first and then replaces the head atomically
// (temp file, rename), so a reader sees the old record or the new one, never
// a mix, even if the writer is killed half way. A save is serialised with
// other processes by a lock file (flock) next to the head, so the version
// check and the write are one step across processes. Durable saves fsync the
// files, the rename and the folders before they return.
//
// FileStore works on Unix systems. It is safe for concurrent use.
type FileStore struct {
	root string
	opts fileOptions

	mu    sync.Mutex
	dirty map[Key][]string // written by non-durable saves, not yet fsynced
	// closed refuses further use.
	closed bool
}

// FileOption tweaks a FileStore.
type FileOption func(*fileOptions)

type fileOptions struct {
	beforeCommit func(key Key, version int64)
}

// BeforeCommit calls fn in every save after the new message files are
// written and before the head is replaced: crash tests kill the process
// there to show that a half-done save leaves the old record.
func BeforeCommit(fn func(key Key, version int64)) FileOption {
	return func(o *fileOptions) { o.beforeCommit = fn }
}

// NewFileStore returns a store rooted at dir, creating it if needed.
func NewFileStore(dir string, opts ...FileOption) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("file store: empty folder name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	st := &FileStore{root: abs, dirty: map[Key][]string{}}
	for _, o := range opts {
		o(&st.opts)
	}
	return st, nil
}

// Root returns the store's folder.
func (s *FileStore) Root() string { return s.root }

// SessionDir returns the folder of a session.
func (s *FileStore) SessionDir(sessionID string) string {
	return filepath.Join(s.root, "session_"+sessionID)
}

func (s *FileStore) ownerDir(k Key) string {
	if k.Kind == KindMultiAgent {
		return filepath.Join(s.SessionDir(k.SessionID), "multi_agents", "multi_agent_"+k.ID)
	}
	return filepath.Join(s.SessionDir(k.SessionID), "agents", "agent_"+k.ID)
}

func headName(k Key) string {
	if k.Kind == KindMultiAgent {
		return "multi_agent.json"
	}
	return "agent.json"
}

func messageName(n int64) string { return "message_" + strconv.FormatInt(n, 10) + ".json" }

// fileHead is the JSON of agent.json / multi_agent.json.
type fileHead struct {
	SchemaVersion int             `json:"schemaVersion"`
	SessionID     string          `json:"sessionId"`
	Kind          Kind            `json:"kind"`
	ID            string          `json:"id"`
	Version       int64           `json:"version"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	Messages      []int64         `json:"messages"`
	NextMessage   int64           `json:"nextMessage"`
	Data          json.RawMessage `json:"data"`
}

// fileMessage is the JSON of one message_<n>.json.
type fileMessage struct {
	SchemaVersion int             `json:"schemaVersion"`
	SessionID     string          `json:"sessionId"`
	OwnerID       string          `json:"ownerId"`
	Message       json.RawMessage `json:"message"`
}

type fileSession struct {
	SchemaVersion int       `json:"schemaVersion"`
	SessionID     string    `json:"sessionId"`
	CreatedAt     time.Time `json:"createdAt"`
}

func (s *FileStore) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Load implements Store.
func (s *FileStore) Load(ctx context.Context, key Key) (*Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	head, err := s.readHead(key)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, ErrNotFound
	}
	rec := &Record{Key: key, SchemaVersion: head.SchemaVersion, Version: head.Version, UpdatedAt: head.UpdatedAt,
		Data: head.Data, Messages: make([]json.RawMessage, 0, len(head.Messages))}
	dir := filepath.Join(s.ownerDir(key), "messages")
	for _, n := range head.Messages {
		m, err := s.readMessage(key, filepath.Join(dir, messageName(n)))
		if err != nil {
			return nil, err
		}
		rec.Messages = append(rec.Messages, m)
	}
	return rec, nil
}

func (s *FileStore) rel(p string) string {
	if r, err := filepath.Rel(s.root, p); err == nil {
		return r
	}
	return p
}

func (s *FileStore) damaged(key Key, file string, format string, args ...any) error {
	return &DamageError{SessionID: key.SessionID, File: s.rel(file), Err: fmt.Errorf("%w: "+format, append([]any{ErrDamaged}, args...)...)}
}

// readHead returns nil, nil when the record does not exist.
func (s *FileStore) readHead(key Key) (*fileHead, error) {
	p := filepath.Join(s.ownerDir(key), headName(key))
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: err}
	}
	var h fileHead
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, s.damaged(key, p, "not valid JSON (truncated or corrupt): %v", err)
	}
	if h.SchemaVersion != SchemaVersion {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: errSchema(h.SchemaVersion)}
	}
	switch {
	case h.SessionID != key.SessionID:
		return nil, s.damaged(key, p, "belongs to session %q", h.SessionID)
	case h.Kind != key.Kind || h.ID != key.ID:
		return nil, s.damaged(key, p, "belongs to %s %q, not %s %q", h.Kind, h.ID, key.Kind, key.ID)
	case h.Version < 1:
		return nil, s.damaged(key, p, "version %d", h.Version)
	case !validObject(h.Data):
		return nil, s.damaged(key, p, "data is not a JSON object")
	}
	seen := map[int64]bool{}
	for _, n := range h.Messages {
		if n < 0 || n >= h.NextMessage || seen[n] {
			return nil, s.damaged(key, p, "message list names file %d (next is %d)", n, h.NextMessage)
		}
		seen[n] = true
	}
	return &h, nil
}

func (s *FileStore) readMessage(key Key, p string) (json.RawMessage, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, s.damaged(key, p, "missing (listed in the head)")
	}
	if err != nil {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: err}
	}
	var m fileMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, s.damaged(key, p, "not valid JSON (truncated or corrupt): %v", err)
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: errSchema(m.SchemaVersion)}
	}
	if m.SessionID != key.SessionID || m.OwnerID != key.ID {
		return nil, s.damaged(key, p, "belongs to session %q, owner %q", m.SessionID, m.OwnerID)
	}
	if !validObject(m.Message) {
		return nil, s.damaged(key, p, "message is not a JSON object")
	}
	return m.Message, nil
}

// Save implements Store.
func (s *FileStore) Save(ctx context.Context, rec *Record, opts SaveOptions) (int64, error) {
	if err := CheckSave(rec, opts); err != nil {
		return 0, err
	}
	if err := s.check(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	key := rec.Key
	dir := s.ownerDir(key)
	msgDir := filepath.Join(dir, "messages")
	var created []string // folders made by this save, to fsync their parents
	if err := s.ensureSession(key.SessionID, &created); err != nil {
		return 0, err
	}
	if err := mkdirs(msgDir, &created); err != nil {
		return 0, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return 0, fmt.Errorf("session %q: lock: %w", key.SessionID, err)
	}
	defer unlock()

	old, err := s.readHead(key)
	if err != nil {
		return 0, err // damaged: nothing is overwritten
	}
	var cur int64
	head := fileHead{SchemaVersion: SchemaVersion, SessionID: key.SessionID, Kind: key.Kind, ID: key.ID}
	if old != nil {
		cur = old.Version
		head.NextMessage = old.NextMessage
	}
	if cur != opts.Base {
		return 0, &ConflictError{Key: key, Expected: opts.Base, Actual: cur}
	}
	keep := opts.Unchanged
	if old == nil || keep > len(old.Messages) {
		keep = 0
	}
	if old != nil {
		head.Messages = append(head.Messages, old.Messages[:keep]...)
	}
	var toSync []string
	for _, m := range rec.Messages[keep:] {
		n := head.NextMessage
		head.NextMessage++
		p := filepath.Join(msgDir, messageName(n))
		b, err := marshal(fileMessage{SchemaVersion: SchemaVersion, SessionID: key.SessionID, OwnerID: key.ID, Message: m})
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return 0, fmt.Errorf("session %q: %w", key.SessionID, err)
		}
		head.Messages = append(head.Messages, n)
		toSync = append(toSync, p)
	}
	if len(toSync) > 0 {
		toSync = append(toSync, msgDir)
	}
	if head.Messages == nil {
		head.Messages = []int64{}
	}
	head.Version = cur + 1
	head.UpdatedAt = time.Now().UTC()
	head.Data = rec.Data
	b, err := marshal(head)
	if err != nil {
		return 0, err
	}
	headPath := filepath.Join(dir, headName(key))
	tmp := headPath + ".tmp-" + strconv.Itoa(os.Getpid())

	s.mu.Lock()
	pending := append([]string(nil), s.dirty[key]...)
	s.mu.Unlock()
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return 0, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	if opts.Durable {
		if err := syncAll(append(append(pending, toSync...), tmp)); err != nil {
			_ = os.Remove(tmp)
			return 0, fmt.Errorf("session %q: fsync: %w", key.SessionID, err)
		}
	}
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit(key, head.Version)
	}
	if err := os.Rename(tmp, headPath); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	if opts.Durable {
		dirs := append([]string{dir}, parentsOf(created)...)
		if err := syncAll(dirs); err != nil {
			return 0, fmt.Errorf("session %q: fsync: %w", key.SessionID, err)
		}
	}
	s.mu.Lock()
	if opts.Durable {
		delete(s.dirty, key)
	} else {
		s.dirty[key] = append(s.dirty[key], append(toSync, headPath)...)
		for _, c := range created {
			s.dirty[key] = append(s.dirty[key], filepath.Dir(c))
		}
	}
	s.mu.Unlock()

	// Message files no longer listed are garbage once the head is replaced.
	if old != nil {
		listed := make(map[int64]bool, len(head.Messages))
		for _, n := range head.Messages {
			listed[n] = true
		}
		for _, n := range old.Messages {
			if !listed[n] {
				_ = os.Remove(filepath.Join(msgDir, messageName(n)))
			}
		}
	}
	return head.Version, nil
}

// Sync makes every non-durable save of key made through this store durable.
func (s *FileStore) Sync(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	files := s.dirty[key]
	delete(s.dirty, key)
	s.mu.Unlock()
	if len(files) == 0 {
		return nil
	}
	if err := syncAll(files); err != nil {
		s.mu.Lock()
		s.dirty[key] = append(s.dirty[key], files...)
		s.mu.Unlock()
		return fmt.Errorf("session %q: fsync: %w", key.SessionID, err)
	}
	return nil
}

// Delete implements Store.
func (s *FileStore) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	dir := s.ownerDir(key)
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Remove the head first: without it the record does not exist.
	err = os.Remove(filepath.Join(dir, headName(key)))
	unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.mu.Lock()
	delete(s.dirty, key)
	s.mu.Unlock()
	return os.RemoveAll(dir)
}

// Close implements Store.
func (s *FileStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

func (s *FileStore) ensureSession(sessionID string, created *[]string) error {
	dir := s.SessionDir(sessionID)
	p := filepath.Join(dir, "session.json")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := mkdirs(dir, created); err != nil {
		return fmt.Errorf("session %q: %w", sessionID, err)
	}
	b, err := marshal(fileSession{SchemaVersion: SchemaVersion, SessionID: sessionID, CreatedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	tmp := p + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("session %q: %w", sessionID, err)
	}
	if err := syncAll([]string{tmp}); err != nil {
		return err
	}
	// Link, not rename: a session.json written by a concurrent creator wins.
	if err := os.Link(tmp, p); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp)
		return fmt.Errorf("session %q: %w", sessionID, err)
	}
	_ = os.Remove(tmp)
	return syncAll([]string{dir})
}

// mkdirs creates dir and its missing parents, recording those it created.
func mkdirs(dir string, created *[]string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	*created = append(*created, missing...)
	return nil
}

func parentsOf(dirs []string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, filepath.Dir(d))
	}
	return out
}

func lockFile(p string) (func(), error) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// syncAll fsyncs files and folders, concurrently: the file system commits
// concurrent fsyncs together, so n of them cost about one.
func syncAll(paths []string) error {
	paths = dedupe(paths)
	if len(paths) == 1 {
		return syncPath(paths[0])
	}
	errs := make(chan error, len(paths))
	for _, p := range paths {
		go func() { errs <- syncPath(p) }()
	}
	var first error
	for range paths {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func dedupe(ps []string) []string {
	seen := make(map[string]bool, len(ps))
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
