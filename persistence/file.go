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
//	session_<sid>/agents/agent_<id>/journal.jsonl
//	session_<sid>/multi_agents/multi_agent_<id>/multi_agent.json (and the same)
//
// agent.json (multi_agent.json) is the record's head: its version, its data
// and the list of message files that make its history, in order. The head
// and message files are written at checkpoints: every durable save, and a
// save that finds the journal past 64 lines or 1 MiB. A checkpoint writes
// new message files and a temp head and swaps the temp head in, so a reader
// sees the old record or the new one, never a mix, even if the writer is
// killed half way.
//
// Every other save appends one line to journal.jsonl: the version it was
// based on and the one it makes, the messages it keeps and adds, and the
// data, closed by a CRC-32C. A load applies the chain of lines that starts
// at the head's version; a torn line (a writer killed mid-append) or a line
// from before the last checkpoint ends the chain. Appends are not fsynced:
// they survive the process being killed, and a machine crash loses at most
// the saves since the last durable one.
//
// A durable save survives a machine crash through the store's redo log
// (redo/<uuid>.log under the root, see redo.go): the whole record is
// appended to it and fdatasynced before the checkpoint's files are written,
// without fsync. One fdatasync per durable save, of a file allocated ahead,
// is one device flush: the least SPEC I9 allows. The files become durable
// all at once (syncfs) when the log fills and starts over, and at Close,
// which removes the log. A store that was not closed (its process killed,
// or the machine crashed) leaves its log, and the next FileStore opened on
// the folder recovers from it: every record it holds is written back,
// durably, unless the files hold an intact state at least as new. A store
// makes its log at its second durable save; its first (all that a store
// made for one request does) fsyncs the checkpoint's files instead, in two
// ordered rounds: what the new head points at, then the folder that names
// it.
//
// A save locks the journal file (flock), so the version check and the write
// are one step across processes.
//
// FileStore works on Unix systems. It is safe for concurrent use.
type FileStore struct {
	root string
	opts fileOptions

	mu       sync.Mutex
	dirty    map[Key]*dirtySet // written by non-durable saves, not yet fsynced
	ready    map[Key]bool      // owners whose folders and session.json exist
	sessions map[string]bool   // sessions whose session.json was checked
	redo     *redoLog          // made on the second durable save (redo.go)
	redoGate sync.RWMutex      // read: a durable save between its record and its files; write: a reset
	durables int               // durable saves before the log was made
	// closed refuses further use.
	closed bool
}

// FileOption tweaks a FileStore.
type FileOption func(*fileOptions)

type fileOptions struct {
	beforeCommit func(key Key, version int64)
	onSync       func(key Key, paths []string)
	redoSize     int64
}

// RedoLogSize sets the size of the store's redo log (default 8 MiB): how
// much of durable saves' records it holds before it makes every file
// durable at once and starts over. A record larger than the log is made
// durable the slow way (two rounds of fsyncs). Tests make it small.
func RedoLogSize(n int64) FileOption {
	return func(o *fileOptions) { o.redoSize = n }
}

// OnSync calls fn before every round of fsyncs with the files and folders
// of the round (one round fsyncs them concurrently; an fdatasync of the redo
// log is a round of one; a syncfs of the whole file system is reported as
// the path SyncFSName under the root). Tests and the bench command count
// fsyncs with it.
func OnSync(fn func(key Key, paths []string)) FileOption {
	return func(o *fileOptions) { o.onSync = fn }
}

// SyncFSName stands for a syncfs in what OnSync reports.
const SyncFSName = "<syncfs>"

// syncRound fsyncs paths concurrently, as one round.
func (s *FileStore) syncRound(key Key, paths []string) error {
	paths = dedupe(paths)
	if len(paths) == 0 {
		return nil
	}
	if s.opts.onSync != nil {
		s.opts.onSync(key, paths)
	}
	return syncAll(paths)
}

// BeforeCommit calls fn in every save after the new message files are
// written and before the head is replaced (before the journal line, for a
// save that appends one): crash tests kill the process there to show that
// a half-done save leaves the old record, or, for a durable save already
// in the redo log, the new one.
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
	st := &FileStore{root: abs, dirty: map[Key]*dirtySet{}, ready: map[Key]bool{}, sessions: map[string]bool{}}
	st.opts.redoSize = defaultRedoSize
	for _, o := range opts {
		o(&st.opts)
	}
	if st.opts.redoSize < redoHeaderSize+4096 {
		return nil, fmt.Errorf("file store: redo log size %d is below %d", st.opts.redoSize, redoHeaderSize+4096)
	}
	if err := st.recoverRedo(); err != nil {
		return nil, fmt.Errorf("file store: recovering from the redo log: %w", err)
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

// Load implements Store. It reads the head, the message files the record
// still starts with, and the journal. A save that replaces the head between
// those reads (and removes message files) makes it read again.
func (s *FileStore) Load(ctx context.Context, key Key) (*Record, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, headVersion, err := s.load(key)
		if err == nil || attempt == 2 || !errors.Is(err, ErrDamaged) {
			return rec, err
		}
		if h, herr := s.readHead(key); herr != nil || (h != nil && h.Version == headVersion) {
			return nil, err // the damage is real
		}
	}
}

func (s *FileStore) load(key Key) (*Record, int64, error) {
	if _, err := s.checkSession(key); err != nil {
		return nil, 0, err
	}
	head, err := s.readHead(key)
	if err != nil {
		return nil, 0, err
	}
	var hv int64
	var files []int64
	if head != nil {
		hv, files = head.Version, head.Messages
	}
	j, err := s.readJournal(key, hv)
	if err != nil {
		return nil, hv, err
	}
	if head == nil && len(j.lines) == 0 {
		return nil, 0, ErrNotFound
	}
	msgs, err := s.journalMessages(key, j, files)
	if err != nil {
		return nil, hv, err
	}
	rec := &Record{Key: key, SchemaVersion: SchemaVersion, Version: j.version(hv), Messages: msgs}
	if n := len(j.lines); n > 0 {
		rec.Data, rec.UpdatedAt = j.lines[n-1].Data, j.lines[n-1].UpdatedAt
	} else {
		rec.Data, rec.UpdatedAt = head.Data, head.UpdatedAt
	}
	return rec, hv, nil
}

// journalMessages returns the record's messages: the head's files that the
// journal keeps, read, then the journal's own.
func (s *FileStore) journalMessages(key Key, j *journal, files []int64) ([]json.RawMessage, error) {
	n, tail, err := s.applyJournal(key, j, len(files))
	if err != nil {
		return nil, err
	}
	msgs, err := s.readMessages(key, files[:n])
	if err != nil {
		return nil, err
	}
	return append(msgs, tail...), nil
}

func (s *FileStore) readMessages(key Key, files []int64) ([]json.RawMessage, error) {
	dir := filepath.Join(s.ownerDir(key), "messages")
	out := make([]json.RawMessage, 0, len(files))
	for _, n := range files {
		m, err := s.readMessage(key, filepath.Join(dir, messageName(n)))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
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
//
// A save locks the owner's journal and checks the stored version (the
// head's, carried on by the journal) against opts.Base. A save that is not
// Durable appends one line to the journal. A Durable save, or one that finds
// the journal past its limits, is a checkpoint: it writes the new message
// files and the head (see checkpoint), and empties the journal.
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
	lock, err := s.lockOwner(key)
	if err != nil {
		return 0, err
	}
	defer lock.unlock()

	head, j, err := s.readOwner(key, lock)
	if err != nil {
		return 0, err // damaged: nothing is overwritten
	}
	var hv int64
	var files int
	if head != nil {
		hv, files = head.Version, len(head.Messages)
	}
	if _, _, err := s.applyJournal(key, j, files); err != nil {
		return 0, err // damaged: nothing is overwritten
	}
	cur := j.version(hv)
	if cur != opts.Base {
		return 0, &ConflictError{Key: key, Expected: opts.Base, Actual: cur}
	}
	keep := max(0, min(opts.Unchanged, j.messageCount(files), len(rec.Messages)))
	if !opts.Durable && len(j.lines) < journalMaxLines && j.end < journalMaxBytes {
		line, err := encodeJournalLine(&journalLine{SchemaVersion: SchemaVersion, SessionID: key.SessionID, Kind: key.Kind, ID: key.ID,
			Base: cur, Version: cur + 1, UpdatedAt: time.Now().UTC(), Keep: keep, Messages: nonNil(rec.Messages[keep:]), Data: rec.Data})
		if err != nil {
			return 0, err
		}
		if s.opts.beforeCommit != nil {
			s.opts.beforeCommit(key, cur+1)
		}
		if err := appendJournal(j, line); err != nil {
			return 0, fmt.Errorf("session %q: %w", key.SessionID, err)
		}
		return cur + 1, nil
	}
	kept := min(keep, j.keptFiles(files))
	if err := s.durableCheckpoint(key, head, j, cur+1, kept, rec.Messages, rec.Data, !opts.NoSync); err != nil {
		return 0, err
	}
	return cur + 1, nil
}

// durableCheckpoint writes a checkpoint (see checkpoint) that, with sync,
// survives a machine crash: the record is logged first (redo.go), one
// fdatasync, and the files are written without fsync. A record too large
// for the log is written with checkpoint's own fsyncs.
func (s *FileStore) durableCheckpoint(key Key, head *fileHead, j *journal, version int64, kept int, msgs []json.RawMessage, data json.RawMessage, sync bool) error {
	if sync && s.useRedo() {
		// The gate is held from the record's append to the end of the
		// files' writing: a reset (which makes the files durable and then
		// drops the records) waits for it, so it never drops a record
		// whose files are not written yet.
		s.redoGate.RLock()
		defer s.redoGate.RUnlock()
		err := s.logRecord(&redoRecord{Op: "save", SessionID: key.SessionID, Kind: key.Kind, ID: key.ID,
			Version: version, UpdatedAt: time.Now().UTC(), Data: data, Messages: nonNil(msgs)}, true)
		switch {
		case err == nil:
			sync = false
		case !errors.Is(err, errRedoTooLarge):
			return fmt.Errorf("session %q: %w", key.SessionID, err)
		}
	}
	return s.checkpoint(key, head, j, version, kept, msgs, data, sync)
}

func nonNil(ms []json.RawMessage) []json.RawMessage {
	if ms == nil {
		return []json.RawMessage{}
	}
	return ms
}

func (s *FileStore) readOwner(key Key, lock *ownerLock) (*fileHead, *journal, error) {
	head, err := s.readHead(key)
	if err != nil {
		return nil, nil, err
	}
	var hv int64
	if head != nil {
		hv = head.Version
	}
	j, err := s.readLockedJournal(key, lock, hv)
	if err != nil {
		return nil, nil, err
	}
	return head, j, nil
}

// checkpoint writes the record at version as head and message files: the
// first kept message files of the old head stay, msgs[kept:] get new files.
// The owner's lock is held.
//
// With sync it fsyncs in two ordered rounds: first, concurrently, every file
// and folder entry the new head depends on (the new message files, the temp
// head, and whatever earlier saves of this store made without fsync:
// folders, session.json); then, after the swap, the owner's folder, which
// holds the head's name. Then it empties the journal, whose lines the new
// head has made stale.
func (s *FileStore) checkpoint(key Key, old *fileHead, j *journal, version int64, kept int, msgs []json.RawMessage, data json.RawMessage, sync bool) error {
	dir := s.ownerDir(key)
	msgDir := filepath.Join(dir, "messages")
	head := fileHead{SchemaVersion: SchemaVersion, SessionID: key.SessionID, Kind: key.Kind, ID: key.ID,
		Version: version, UpdatedAt: time.Now().UTC(), Data: data, Messages: make([]int64, 0, len(msgs))}
	if old != nil {
		head.NextMessage = old.NextMessage
		head.Messages = append(head.Messages, old.Messages[:kept]...)
	}
	var written []string
	for _, m := range msgs[kept:] {
		n := head.NextMessage
		head.NextMessage++
		p := filepath.Join(msgDir, messageName(n))
		b, err := marshal(fileMessage{SchemaVersion: SchemaVersion, SessionID: key.SessionID, OwnerID: key.ID, Message: m})
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			removeAll(written)
			return fmt.Errorf("session %q: %w", key.SessionID, err)
		}
		head.Messages = append(head.Messages, n)
		written = append(written, p)
	}
	b, err := marshal(head)
	if err != nil {
		removeAll(written)
		return err
	}
	headPath := filepath.Join(dir, headName(key))
	// The owner's lock is held, so one temp name per owner is enough, and a
	// temp file left by a killed writer is reused rather than piling up.
	tmp := headPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		removeAll(written)
		return fmt.Errorf("session %q: %w", key.SessionID, err)
	}

	s.mu.Lock()
	d := s.dirtyOf(key)
	if len(written) > 0 {
		d.add(written, []string{msgDir})
	}
	var files, dirs []string
	if sync {
		files, dirs = d.take()
		// Whatever this or another store wrote without fsync that the new
		// head depends on: session.json, the folders on the way, and the
		// message files it keeps (another store may have written them, and
		// only its redo log would hold them).
		sdir := s.SessionDir(key.SessionID)
		files = append(files, filepath.Join(sdir, "session.json"))
		for _, n := range head.Messages[:kept] {
			files = append(files, filepath.Join(msgDir, messageName(n)))
		}
		dirs = append(dirs, s.root, sdir, filepath.Dir(dir), msgDir)
		// Round 2 covers the owner's folder, and the head is replaced.
		files, dirs = dedupe(without(files, headPath)), dedupe(without(dirs, dir))
	}
	s.mu.Unlock()

	fail := func(err error) error {
		_ = os.Remove(tmp)
		removeAll(written)
		s.redirty(key, files, dirs)
		return fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	if sync {
		// Round 1: the data and the folder entries the new head will point
		// at, before the head can point at them.
		if err := s.syncRound(key, append(append(files, tmp), dirs...)); err != nil {
			return fail(fmt.Errorf("fsync: %w", err))
		}
	}
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit(key, version)
	}
	if err := replaceFile(tmp, headPath); err != nil {
		return fail(err)
	}
	if sync {
		// Round 2: the head's new name.
		if err := s.syncRound(key, []string{dir}); err != nil {
			s.redirty(key, []string{headPath}, []string{dir})
			return fmt.Errorf("session %q: fsync: %w", key.SessionID, err)
		}
	} else {
		s.mu.Lock()
		s.dirtyOf(key).add([]string{headPath}, []string{dir})
		s.mu.Unlock()
	}
	resetJournal(j)

	// Message files no longer listed are garbage once the head is replaced.
	if old != nil {
		for _, n := range old.Messages[kept:] {
			_ = os.Remove(filepath.Join(msgDir, messageName(n)))
		}
	}
	return nil
}

// Checkpoint brings key's record to its full form (head and message files)
// if its journal holds saves, without changing its version, and with sync
// makes it and every earlier save of this store durable. The session manager
// calls it at a durable point with nothing new to save.
func (s *FileStore) Checkpoint(ctx context.Context, key Key, sync bool) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	lock, err := s.lockOwner(key)
	if err != nil {
		return err
	}
	defer lock.unlock()
	head, j, err := s.readOwner(key, lock)
	if err != nil {
		return err
	}
	var hv int64
	var files []int64
	if head != nil {
		hv, files = head.Version, head.Messages
	}
	if len(j.lines) == 0 {
		if !sync || head == nil || s.loggedAt(key, hv) {
			return nil // nothing new, or logged already
		}
		if !s.useRedo() {
			return s.flush(key)
		}
		// Written by another store, or before this one's log started
		// over: log it as it is.
		msgs, err := s.readMessages(key, files)
		if err != nil {
			return err
		}
		err = s.logRecord(&redoRecord{Op: "save", SessionID: key.SessionID, Kind: key.Kind, ID: key.ID,
			Version: hv, UpdatedAt: head.UpdatedAt, Data: head.Data, Messages: nonNil(msgs)}, false)
		if errors.Is(err, errRedoTooLarge) {
			return s.flush(key)
		}
		return err
	}
	kept := j.keptFiles(len(files))
	msgs, err := s.journalMessages(key, j, files)
	if err != nil {
		return err
	}
	return s.durableCheckpoint(key, head, j, j.version(hv), kept, msgs, j.lines[len(j.lines)-1].Data, sync)
}

// flush fsyncs what earlier saves of key through this store wrote without
// fsync: the files first, then the folders that name them.
func (s *FileStore) flush(key Key) error {
	s.mu.Lock()
	files, dirs := s.dirtyOf(key).take()
	s.mu.Unlock()
	if len(files)+len(dirs) == 0 {
		return nil
	}
	err := s.syncRound(key, files)
	if err == nil {
		err = s.syncRound(key, dirs)
	}
	if err != nil {
		s.redirty(key, files, dirs)
		return fmt.Errorf("session %q: fsync: %w", key.SessionID, err)
	}
	return nil
}

// dirtySet is what non-durable saves of one owner wrote and no fsync has
// covered yet: files, and folders whose entries changed.
type dirtySet struct {
	files, dirs []string
}

func (d *dirtySet) add(files, dirs []string) {
	d.files = append(d.files, files...)
	d.dirs = append(d.dirs, dirs...)
}

func (d *dirtySet) take() (files, dirs []string) {
	files, dirs = dedupe(d.files), dedupe(d.dirs)
	d.files, d.dirs = nil, nil
	return files, dirs
}

func (s *FileStore) redirty(key Key, files, dirs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirtyOf(key).add(files, dirs)
}

// dirtyOf returns key's dirty set; s.mu is held.
func (s *FileStore) dirtyOf(key Key) *dirtySet {
	d := s.dirty[key]
	if d == nil {
		d = &dirtySet{}
		s.dirty[key] = d
	}
	return d
}

// lockOwner makes the owner's folders (and the session's session.json) on
// its first save, and locks the owner's journal. Folders this store made or
// saw are remembered, so later saves skip the checks; a folder removed
// meanwhile (by Delete in another process) is made again.
func (s *FileStore) lockOwner(key Key) (*ownerLock, error) {
	p := filepath.Join(s.ownerDir(key), journalName)
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		ready := s.ready[key]
		s.mu.Unlock()
		if !ready {
			created, err := s.makeOwner(key)
			if err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.ready[key] = true
			s.dirtyOf(key).add(created.files, created.dirs)
			s.mu.Unlock()
		}
		lock, err := lockJournal(p)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			s.forget(key)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("session %q: lock: %w", key.SessionID, err)
		}
		return lock, nil
	}
}

func (s *FileStore) forget(key Key) {
	s.mu.Lock()
	delete(s.ready, key)
	s.mu.Unlock()
}

// makeOwner makes session.json and the owner's folders where missing, and
// returns what it made, to be fsynced at the next durable save: the new
// files, and the folders whose entries changed.
func (s *FileStore) makeOwner(key Key) (dirtySet, error) {
	var made dirtySet
	sdir := s.SessionDir(key.SessionID)
	var created []string
	if err := mkdirs(filepath.Join(s.ownerDir(key), "messages"), &created); err != nil {
		return made, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	for _, c := range created {
		made.dirs = append(made.dirs, filepath.Dir(c))
	}
	p := filepath.Join(sdir, "session.json")
	if exists, err := s.checkSession(key); err != nil || exists {
		return made, err
	}
	b, err := marshal(fileSession{SchemaVersion: SchemaVersion, SessionID: key.SessionID, CreatedAt: time.Now().UTC()})
	if err != nil {
		return made, err
	}
	tmp := p + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return made, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	// Link, not rename: a session.json written by a concurrent creator wins.
	err = os.Link(tmp, p)
	_ = os.Remove(tmp)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return made, fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	made.files = append(made.files, p)
	made.dirs = append(made.dirs, sdir)
	return made, nil
}

// Delete implements Store. The deletion is durable when it returns: the
// folder's removal is fsynced, then recorded in redo/deletions, so that a
// record of the owner written before it in a redo log (this store's or
// another's) is not applied by a recovery.
func (s *FileStore) Delete(ctx context.Context, key Key) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := s.ownerDir(key)
	unlockRecovery, err := s.lockRecovery(syscall.LOCK_SH)
	if err != nil {
		return fmt.Errorf("session %q: %w", key.SessionID, err)
	}
	defer unlockRecovery()
	s.forgetLogged(key)
	lock, err := lockJournal(filepath.Join(dir, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		// Nothing to remove, perhaps because an earlier Delete was cut off
		// before it recorded the deletion: record it, so that no redo log
		// brings the owner back.
		if err := s.logDeletion(key, monoNow()); err != nil {
			return fmt.Errorf("session %q: recording the deletion: %w", key.SessionID, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.unlock()
	// Stamped now: every record of the owner so far was written under its
	// lock, so before this; a new owner of the key, made once the folder is
	// gone, is written after.
	mono := monoNow()
	// The head first: without it, and with the journal's lines based on it,
	// the record does not exist. Then the rest, with the lock still held, so
	// no save in another process writes into a folder being removed; one
	// waiting for the lock finds its journal gone and makes the folders anew.
	if err := os.Remove(filepath.Join(dir, headName(key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.mu.Lock()
	delete(s.dirty, key)
	delete(s.ready, key)
	s.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := syncPath(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := s.logDeletion(key, mono); err != nil {
		return fmt.Errorf("session %q: recording the deletion: %w", key.SessionID, err)
	}
	return nil
}

// Close implements Store. It makes every file this store wrote durable
// and removes its redo log; a store not closed (its process killed) leaves
// the log for the next store on the folder to recover from.
func (s *FileStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	return s.closeRedo()
}

// checkSession reads the session's session.json, once per store, and
// reports whether it exists: one of another session or schema version is
// damage (SPEC S5).
func (s *FileStore) checkSession(key Key) (bool, error) {
	s.mu.Lock()
	ok := s.sessions[key.SessionID]
	s.mu.Unlock()
	if ok {
		return true, nil
	}
	p := filepath.Join(s.SessionDir(key.SessionID), "session.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: err}
	}
	var f fileSession
	if err := json.Unmarshal(b, &f); err != nil {
		return false, s.damaged(key, p, "not valid JSON (truncated or corrupt): %v", err)
	}
	if f.SchemaVersion != SchemaVersion {
		return false, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: errSchema(f.SchemaVersion)}
	}
	if f.SessionID != key.SessionID {
		return false, s.damaged(key, p, "belongs to session %q", f.SessionID)
	}
	s.mu.Lock()
	s.sessions[key.SessionID] = true
	s.mu.Unlock()
	return true, nil
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

// syncAll fsyncs files and folders, concurrently, so a round costs about
// its slowest fsync rather than their sum.
func syncAll(paths []string) error {
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

// syncPath fsyncs a file or folder. A file removed since it was written (a
// message file dropped by a later save) needs no fsync.
func syncPath(p string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func without(ps []string, p string) []string {
	out := ps[:0]
	for _, q := range ps {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

func removeAll(paths []string) {
	for _, p := range paths {
		_ = os.Remove(p)
	}
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
