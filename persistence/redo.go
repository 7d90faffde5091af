package persistence

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// The file store's redo log: what makes a durable save durable with one
// fdatasync.
//
// A durable save writes the SPEC S2 files as every save does, atomically
// (new message files, a temp head swapped in) but without fsync, then
// appends the whole record (data and messages) to this store's redo log,
// redo/<uuid>.log under the root, and fdatasyncs the log. The log is
// written ahead of its use (zeros to its full size) and records overwrite
// those zeros, so the fdatasync flushes data only: no file is created, no
// folder changes, no metadata is committed. One device flush per durable
// point is the least SPEC I9 allows.
//
// The S2 files become durable later, all at once: when the log is full (one
// syncfs for the whole file system, after which the log starts over) and at
// Close (after which the log is removed). Until then, after a machine crash
// they may be torn, missing or old; the log holds every durable state since
// they were last made durable, so recovery rebuilds them.
//
// Recovery runs in NewFileStore: every log not locked by a live store (its
// process was killed, or the machine crashed) is read, and for each record
// it names the latest over all logs (by the monotonic clock, which all
// processes of a boot share) wins, and is applied when it is a dead log's:
// a saved record is written back as a durable checkpoint unless the files
// hold an intact state at least as new, which is then made durable as it
// is. (A live store's latest record is that store's to make durable.) Then
// the dead logs are removed. A Delete removes the folder durably and then
// logs the deletion, so that an older record in another log cannot bring
// the owner back; a reset carries deletions over while an older log exists.
//
// Framing: a 512-byte header (magic, format, generation, CRC-32C), then
// records, each a little-endian length, a CRC-32C of generation and body,
// the generation, and a JSON body. A record of another generation, a
// length of zero (the zeros past the last record) or a CRC mismatch (a torn
// append) ends the log.

const (
	redoDirName     = "redo"
	redoLockName    = "recover.lock"
	redoSuffix      = ".log"
	redoMagic       = "BRAIDRDO"
	redoFormat      = 1
	redoHeaderSize  = 512
	redoRecordHead  = 16 // length, CRC, generation
	defaultRedoSize = 8 << 20
)

// redoRecord is one record of the redo log.
type redoRecord struct {
	Op        string            `json:"op"` // "save" or "delete"
	Mono      int64             `json:"mono"`
	SessionID string            `json:"sessionId"`
	Kind      Kind              `json:"kind"`
	ID        string            `json:"id"`
	Version   int64             `json:"version,omitempty"`
	UpdatedAt time.Time         `json:"updatedAt"`
	Data      json.RawMessage   `json:"data,omitempty"`
	Messages  []json.RawMessage `json:"messages,omitempty"`
}

func (r *redoRecord) key() Key { return Key{SessionID: r.SessionID, Kind: r.Kind, ID: r.ID} }

// redoLog is this store's open, locked log. Its mutex orders appends and
// resets.
type redoLog struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	size   int64
	header redoHeader
	off    int64
	zeroed int64 // the blocks before are written (see append)
	// logged is the version of each owner's last record in this
	// generation: a durable point at that version has nothing to log.
	logged map[Key]int64
	// deleted holds this generation's deletions, which a reset carries
	// over while an older log may hold a record of the owner.
	deleted map[Key]*redoRecord
}

// redoHeader is a log's header: its generation, and when the log was made
// (monotonic clock): a log made after a deletion cannot hold an older
// record of the deleted owner.
type redoHeader struct {
	gen     uint64
	created int64
}

func (h redoHeader) bytes() []byte {
	b := make([]byte, redoHeaderSize)
	copy(b, redoMagic)
	binary.LittleEndian.PutUint32(b[8:], redoFormat)
	binary.LittleEndian.PutUint64(b[16:], h.gen)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.created))
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[16:32], crcTable))
	return b
}

// parseRedoHeader returns the log's header, or false for bytes that are not
// one (a log torn while it was made).
func parseRedoHeader(b []byte) (redoHeader, bool) {
	if len(b) < redoHeaderSize || string(b[:8]) != redoMagic || binary.LittleEndian.Uint32(b[8:]) != redoFormat {
		return redoHeader{}, false
	}
	if crc32.Checksum(b[16:32], crcTable) != binary.LittleEndian.Uint32(b[12:]) {
		return redoHeader{}, false
	}
	return redoHeader{gen: binary.LittleEndian.Uint64(b[16:]), created: int64(binary.LittleEndian.Uint64(b[24:]))}, true
}

func encodeRedoRecord(gen uint64, r *redoRecord) ([]byte, error) {
	body, err := marshalCompact(r)
	if err != nil {
		return nil, err
	}
	out := make([]byte, redoRecordHead+len(body))
	binary.LittleEndian.PutUint32(out[0:], uint32(len(body)))
	binary.LittleEndian.PutUint64(out[8:], gen)
	copy(out[redoRecordHead:], body)
	binary.LittleEndian.PutUint32(out[4:], crc32.Checksum(out[8:], crcTable))
	return out, nil
}

// readRedoRecords returns the records of b (a whole log) that belong to its
// header's generation, in order.
func readRedoRecords(b []byte) ([]*redoRecord, error) {
	h, ok := parseRedoHeader(b)
	if !ok {
		return nil, nil // torn while it was made: it holds nothing
	}
	gen := h.gen
	var out []*redoRecord
	for off := redoHeaderSize; off+redoRecordHead <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+redoRecordHead+n > len(b) || binary.LittleEndian.Uint64(b[off+8:]) != gen {
			break
		}
		rec := b[off : off+redoRecordHead+n]
		if crc32.Checksum(rec[8:], crcTable) != binary.LittleEndian.Uint32(rec[4:]) {
			break
		}
		var r redoRecord
		if err := json.Unmarshal(rec[redoRecordHead:], &r); err != nil {
			return nil, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, &r)
		off += redoRecordHead + n
	}
	return out, nil
}

func (s *FileStore) redoDir() string { return filepath.Join(s.root, redoDirName) }

// useRedo reports whether a durable save goes through the redo log. A
// store makes its log at its second durable save: one made for a single
// request (FileSession in the seed's server pattern) makes its durable save
// with fsyncs of the files and leaves no log behind, while one that lives
// (one per process, shared by the requests' session managers) pays for the
// log once and then one fdatasync per durable save.
func (s *FileStore) useRedo() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redo != nil {
		return true
	}
	s.durables++
	return s.durables > 1
}

// openRedo makes this store's log (see useRedo; a Delete makes it too):
// allocated to its full size, fsynced with its folder, and locked.
func (s *FileStore) openRedo() (*redoLog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redo != nil {
		return s.redo, nil
	}
	if s.closed {
		return nil, ErrClosed
	}
	dir := s.redoDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, uuid.NewString()+redoSuffix)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	l := &redoLog{f: f, path: p, size: s.opts.redoSize, header: redoHeader{gen: 1, created: monoNow()},
		off: redoHeaderSize, zeroed: redoHeaderSize, logged: map[Key]int64{}, deleted: map[Key]*redoRecord{}}
	fail := func(err error) (*redoLog, error) {
		_ = f.Close()
		_ = os.Remove(p)
		return nil, fmt.Errorf("file store: redo log: %w", err)
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if err := allocate(f, l.size); err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(l.header.bytes(), 0); err != nil {
		return fail(err)
	}
	made := []string{p, dir, s.root}
	if s.opts.onSync != nil {
		s.opts.onSync(Key{}, made)
	}
	if err := syncAll(made); err != nil {
		return fail(err)
	}
	s.redo = l
	return l, nil
}

// logRecord appends r to the log and fdatasyncs it. A record that does not
// fit makes the log start over first (see resetRedo); one larger than the
// whole log returns errRedoTooLarge, and the caller makes the save durable
// the slow way.
func (s *FileStore) logRecord(r *redoRecord) error {
	l, err := s.openRedo()
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	r.Mono = monoNow()
	b, err := encodeRedoRecord(l.header.gen, r)
	if err != nil {
		return err
	}
	if int64(len(b)) > l.size-redoHeaderSize-l.carried() {
		return errRedoTooLarge
	}
	if l.off+int64(len(b)) > l.size {
		if err := s.resetRedo(l); err != nil {
			return err
		}
		if b, err = encodeRedoRecord(l.header.gen, r); err != nil {
			return err
		}
	}
	if s.opts.onSync != nil {
		s.opts.onSync(r.key(), []string{l.path})
	}
	if err := l.append(b); err != nil {
		return err
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("file store: redo log: fdatasync: %w", err)
	}
	l.note(r)
	return nil
}

// redoZeroChunk is how far ahead of the records the log's blocks are
// written with zeros: a record that overwrites written blocks needs no
// metadata commit at its fdatasync, where one in blocks only allocated
// would (the extent changes from unwritten to written).
const redoZeroChunk = 256 << 10

// append writes an encoded record at the log's end. l.mu is held.
func (l *redoLog) append(b []byte) error {
	if end := l.off + int64(len(b)); end > l.zeroed {
		to := min(l.size, max(end, l.zeroed+redoZeroChunk))
		if _, err := l.f.WriteAt(make([]byte, to-l.zeroed), l.zeroed); err != nil {
			return fmt.Errorf("file store: redo log: %w", err)
		}
		l.zeroed = to
	}
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		return fmt.Errorf("file store: redo log: %w", err)
	}
	l.off += int64(len(b))
	return nil
}

// note remembers a record appended. l.mu is held.
func (l *redoLog) note(r *redoRecord) {
	if r.Op == "delete" {
		delete(l.logged, r.key())
		l.deleted[r.key()] = r
		return
	}
	l.logged[r.key()] = r.Version
	delete(l.deleted, r.key())
}

// carried is room a reset may need for the deletions it carries over.
func (l *redoLog) carried() int64 {
	var n int64
	for _, r := range l.deleted {
		n += int64(redoRecordHead + 256 + len(r.SessionID) + len(r.ID))
	}
	return n
}

var errRedoTooLarge = errors.New("record larger than the redo log")

// loggedAt reports whether this store's log holds key's record at version.
func (s *FileStore) loggedAt(key Key, version int64) bool {
	s.mu.Lock()
	l := s.redo
	s.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.logged[key]
	return ok && v == version
}

// resetRedo makes every file this store wrote durable, then starts the log
// over with the next generation, carrying over the deletions an older log
// may contradict. l.mu is held.
func (s *FileStore) resetRedo(l *redoLog) error {
	if err := s.syncEverything(); err != nil {
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	oldest, err := s.oldestOtherLog(l.path)
	if err != nil {
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	h := redoHeader{gen: l.header.gen + 1, created: l.header.created}
	var carry [][]byte
	for k, r := range l.deleted {
		if oldest == 0 || oldest > r.Mono {
			delete(l.deleted, k) // no log can hold an older record of it
			continue
		}
		b, err := encodeRedoRecord(h.gen, r)
		if err != nil {
			return err
		}
		carry = append(carry, b)
	}
	if _, err := l.f.WriteAt(h.bytes(), 0); err != nil {
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	l.header, l.off = h, redoHeaderSize
	clear(l.logged)
	for _, b := range carry {
		if err := l.append(b); err != nil {
			return err
		}
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	return nil
}

// oldestOtherLog returns when the oldest other log in the redo folder was
// made (0: there is none).
func (s *FileStore) oldestOtherLog(self string) (int64, error) {
	ents, err := os.ReadDir(s.redoDir())
	if err != nil {
		return 0, err
	}
	var oldest int64
	for _, e := range ents {
		p := filepath.Join(s.redoDir(), e.Name())
		if p == self || !strings.HasSuffix(e.Name(), redoSuffix) {
			continue
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		b := make([]byte, redoHeaderSize)
		_, err = f.ReadAt(b, 0)
		_ = f.Close()
		h, ok := parseRedoHeader(b)
		if err != nil || !ok {
			// Unreadable or torn: assume the worst, that it is older.
			return 1, nil
		}
		if oldest == 0 || h.created < oldest {
			oldest = h.created
		}
	}
	return oldest, nil
}

// syncEverything makes every file and folder this store wrote without fsync
// durable: one syncfs where there is one, else the fsyncs of every dirty
// set.
func (s *FileStore) syncEverything() error {
	s.mu.Lock()
	keys := make([]Key, 0, len(s.dirty))
	for k := range s.dirty {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	if ok, err := syncFileSystem(s.root); ok {
		if err != nil {
			return err
		}
		if s.opts.onSync != nil {
			s.opts.onSync(Key{}, []string{filepath.Join(s.root, SyncFSName)})
		}
		s.mu.Lock()
		clear(s.dirty)
		s.mu.Unlock()
		return nil
	}
	for _, k := range keys {
		if err := s.flush(k); err != nil {
			return err
		}
	}
	return nil
}

// closeRedo makes everything durable and removes the log (Close).
func (s *FileStore) closeRedo() error {
	s.mu.Lock()
	l := s.redo
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if err := s.syncEverything(); err != nil {
		return err // the log stays: the next store recovers from it
	}
	err := os.Remove(l.path)
	if err == nil {
		err = syncPath(s.redoDir())
	}
	_ = l.f.Close()
	l.f = nil
	return err
}

// recoverRedo replays the logs of dead stores (see the top of this file).
// It runs before the store is used, under recover.lock, so two stores
// opening at once do not replay the same log.
func (s *FileStore) recoverRedo() error {
	dir := s.redoDir()
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n.Name(), redoSuffix) {
			logs = append(logs, filepath.Join(dir, n.Name()))
		}
	}
	if len(logs) == 0 {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, redoLockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := flock(lock, syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = flock(lock, syscall.LOCK_UN) }()

	var dead []*os.File
	defer func() {
		for _, f := range dead {
			_ = f.Close()
		}
	}()
	// The latest record of each owner over every log, live ones included:
	// an owner whose latest record is a live store's is that store's to
	// make durable, and an older record of it in a dead log must not undo
	// it (a deletion, above all).
	type found struct {
		r    *redoRecord
		live bool
	}
	latest := map[Key]found{}
	for _, p := range logs {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // replayed by another store meanwhile
		}
		if err != nil {
			return err
		}
		live := false
		if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				_ = f.Close()
				return err
			}
			live = true
		}
		b, err := readAllAt(f)
		if live {
			_ = f.Close()
		} else {
			dead = append(dead, f)
		}
		if err != nil {
			return err
		}
		recs, err := readRedoRecords(b)
		if err != nil {
			if live {
				continue // being written: its store is alive to answer for it
			}
			return fmt.Errorf("redo log %s: %w", s.rel(p), err)
		}
		for _, r := range recs {
			if cur, ok := latest[r.key()]; !ok || r.Mono > cur.r.Mono {
				latest[r.key()] = found{r, live}
			}
		}
	}
	if len(dead) == 0 {
		return nil
	}
	keys := make([]Key, 0, len(latest))
	for k, f := range latest {
		if !f.live {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keyOrder(keys[i]) < keyOrder(keys[j]) })
	for _, k := range keys {
		if err := s.recoverOwner(latest[k].r); err != nil {
			return fmt.Errorf("redo log: session %q, %s %q: %w", k.SessionID, k.Kind, k.ID, err)
		}
	}
	for _, f := range dead {
		if err := os.Remove(f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return syncPath(dir)
}

// recoverOwner brings one owner to its latest logged state, durably.
func (s *FileStore) recoverOwner(r *redoRecord) error {
	key := r.key()
	if err := key.Validate(); err != nil {
		return err
	}
	if r.Op == "delete" {
		// Logged after the removal was durable: the files hold nothing of
		// the deleted owner, only perhaps a newer one. The record's work
		// is done by winning over older records of other logs.
		return nil
	}
	lock, err := s.lockOwner(key)
	if err != nil {
		return err
	}
	defer lock.unlock()
	// What the files hold, if it is intact and at least as new, wins: it is
	// what the dead store last wrote.
	version, msgs, data := r.Version, r.Messages, r.Data
	head, _ := s.readHead(key)
	if head != nil {
		if j, err := s.readLockedJournal(key, lock, head.Version); err == nil {
			if got, err := s.journalMessages(key, j, head.Messages); err == nil && j.version(head.Version) >= r.Version {
				version, msgs = j.version(head.Version), got
				data = head.Data
				if n := len(j.lines); n > 0 {
					data = j.lines[n-1].Data
				}
			}
		}
	}
	j, err := s.readLockedJournal(key, lock, version)
	if err != nil {
		// Damage past the durable state the log holds: the checkpoint
		// below empties the journal.
		j = &journal{f: lock.f, path: lock.f.Name(), size: 1}
	}
	// Every folder on the way, and session.json, may hold entries the dead
	// store never made durable.
	s.mu.Lock()
	d := s.dirtyOf(key)
	sdir := s.SessionDir(key.SessionID)
	d.add([]string{filepath.Join(sdir, "session.json")},
		[]string{s.root, sdir, filepath.Dir(s.ownerDir(key)), s.ownerDir(key), filepath.Join(s.ownerDir(key), "messages")})
	s.mu.Unlock()
	// All messages get new files (kept 0), so every file the new head names
	// is fsynced by this checkpoint.
	if err := s.checkpoint(key, head, j, version, 0, msgs, data, true); err != nil {
		return err
	}
	return s.removeUnlisted(key)
}

// removeUnlisted removes the message files the owner's head does not name:
// leftovers of writes a crash cut off, so that no later save finds an old
// file under a number it reuses.
func (s *FileStore) removeUnlisted(key Key) error {
	head, err := s.readHead(key)
	if err != nil || head == nil {
		return err
	}
	listed := make(map[string]bool, len(head.Messages))
	for _, n := range head.Messages {
		listed[messageName(n)] = true
	}
	dir := filepath.Join(s.ownerDir(key), "messages")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !listed[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func keyOrder(k Key) string { return k.SessionID + "\x00" + string(k.Kind) + "\x00" + k.ID }
