package persistence

import (
	"bytes"
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
// A durable save appends the whole record (data and messages) to this
// store's redo log, redo/<uuid>.log under the root, and fdatasyncs it; then
// it writes the SPEC S2 files as every save does, atomically (new message
// files, a temp head swapped in) but without fsync. The log is allocated
// when it is made and its blocks are written with zeros ahead of the
// records, so an append creates no file, changes no folder and does not
// grow the file: its fdatasync is one device flush. One per durable point
// is the least SPEC I9 allows.
//
// The S2 files become durable later, all at once: when the log is full (one
// syncfs for the whole file system, after which the log starts over with a
// new generation) and at Close (after which the log is removed). Until then,
// after a machine crash, they may be torn, missing or old; the log holds
// every durable state since, so recovery rebuilds them. A durable save holds
// the store's gate (read) from its record to the end of its files, and a
// reset or Close takes it (write), so no record is dropped before its files
// are written.
//
// Recovery runs in NewFileStore, under redo/recover.lock: every log not
// locked by a live store (its process was killed, or the machine crashed)
// is read, and for each owner its records name, the latest record (by the
// monotonic clock, which all processes of a boot share) is applied, unless
// a deletion of the owner came after it: the owner is written back as a
// durable checkpoint, or, if its files hold an intact state at least as
// new (what the dead store last wrote), those files are made durable as
// they are. Then the dead logs are removed.
//
// Deletions are kept in redo/deletions, not in the logs: Delete removes the
// owner's folder durably and then appends the deletion there (fdatasync),
// stamped with the time it took the owner's lock, so that a record of the
// owner written before it in any log, live or dead, is not applied; a
// record of a new owner of that key, written after it, is. Recovery drops
// the deletions older than every remaining log.
//
// Framing, for the logs and the deletions: a 512-byte header (magic,
// format, generation, when the log's records start, CRC-32C), then records,
// each a little-endian length, a CRC-32C of generation and body, the
// generation, and a JSON body. A record of another generation, a length of
// zero (the zeros past the last record) or a CRC mismatch (a torn append)
// ends the file.

const (
	redoDirName      = "redo"
	redoLockName     = "recover.lock"
	redoSuffix       = ".log"
	redoDeletionsLog = "deletions"
	redoMagic        = "BRAIDRDO"
	redoFormat       = 1
	redoHeaderSize   = 512
	redoRecordHead   = 16 // length, CRC, generation
	defaultRedoSize  = 8 << 20
	// redoZeroChunk is how far ahead of the records the log's blocks are
	// written with zeros: a record that overwrites written blocks needs no
	// metadata commit at its fdatasync, where one in blocks only allocated
	// would (the extent changes from unwritten to written).
	redoZeroChunk = 256 << 10
)

// redoRecord is one record of a redo log, or one deletion.
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

// redoHeader is a log's header: its generation, and the monotonic time from
// which its records are (it was made, or last started over): a deletion
// older than that is not contradicted by any of its records.
type redoHeader struct {
	gen   uint64
	since int64
}

func (h redoHeader) bytes() []byte {
	b := make([]byte, redoHeaderSize)
	copy(b, redoMagic)
	binary.LittleEndian.PutUint32(b[8:], redoFormat)
	binary.LittleEndian.PutUint64(b[16:], h.gen)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.since))
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[16:32], crcTable))
	return b
}

// parseRedoHeader returns a header, or false for bytes that are not one (a
// file torn while it was made).
func parseRedoHeader(b []byte) (redoHeader, bool) {
	if len(b) < redoHeaderSize || string(b[:8]) != redoMagic || binary.LittleEndian.Uint32(b[8:]) != redoFormat {
		return redoHeader{}, false
	}
	if crc32.Checksum(b[16:32], crcTable) != binary.LittleEndian.Uint32(b[12:]) {
		return redoHeader{}, false
	}
	return redoHeader{gen: binary.LittleEndian.Uint64(b[16:]), since: int64(binary.LittleEndian.Uint64(b[24:]))}, true
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

// readRedoRecords returns the header of b (a whole file) and the records
// of its generation, in order, and where they end.
func readRedoRecords(b []byte) (redoHeader, []*redoRecord, int, error) {
	h, ok := parseRedoHeader(b)
	if !ok {
		return h, nil, 0, nil // torn while it was made: it holds nothing
	}
	var out []*redoRecord
	off := redoHeaderSize
	for off+redoRecordHead <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+redoRecordHead+n > len(b) || binary.LittleEndian.Uint64(b[off+8:]) != h.gen {
			break
		}
		rec := b[off : off+redoRecordHead+n]
		if crc32.Checksum(rec[8:], crcTable) != binary.LittleEndian.Uint32(rec[4:]) {
			break
		}
		var r redoRecord
		if err := json.Unmarshal(rec[redoRecordHead:], &r); err != nil {
			return h, nil, 0, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, &r)
		off += redoRecordHead + n
	}
	return h, out, off, nil
}

// redoLog is this store's open, locked log. Its mutex orders appends and
// resets.
type redoLog struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	size   int64
	header redoHeader
	off    int64
	zeroed int64 // the blocks before are written (see appendRecord)
	// logged is the version of each owner's last record in this
	// generation: a durable point at that version has nothing to log.
	logged map[Key]int64
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

// openRedo makes this store's log (see useRedo): made under a temporary
// name, locked, allocated and headed, then renamed into place and fsynced
// with its folder, so that no recovery ever finds it unlocked.
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
		return nil, fmt.Errorf("file store: redo log: %w", err)
	}
	name := uuid.NewString()
	tmp := filepath.Join(dir, name+".new")
	p := filepath.Join(dir, name+redoSuffix)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file store: redo log: %w", err)
	}
	l := &redoLog{f: f, path: p, size: s.opts.redoSize, header: redoHeader{gen: 1, since: monoNow()},
		off: redoHeaderSize, zeroed: redoHeaderSize, logged: map[Key]int64{}}
	fail := func(err error) (*redoLog, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
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
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fail(err)
	}
	made := []string{dir, s.root}
	if s.opts.onSync != nil {
		s.opts.onSync(Key{}, append([]string{p}, made...))
	}
	if err := syncAll(made); err != nil {
		return fail(err)
	}
	s.redo = l
	return l, nil
}

var errRedoTooLarge = errors.New("record larger than the redo log")

// logRecord appends r to the log and fdatasyncs it. A record that does not
// fit makes the log start over first (see resetRedo); one larger than the
// whole log returns errRedoTooLarge, and the caller makes the save durable
// the slow way. gateHeld says whether the caller holds s.redoGate's read
// side (a durable save does, from its record to the end of its files).
func (s *FileStore) logRecord(r *redoRecord, gateHeld bool) error {
	l, err := s.openRedo()
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.f == nil {
			return ErrClosed
		}
		if r.Mono == 0 {
			r.Mono = monoNow()
		}
		b, err := encodeRedoRecord(l.header.gen, r)
		if err != nil {
			return err
		}
		if int64(len(b)) > l.size-redoHeaderSize {
			return errRedoTooLarge
		}
		if l.off+int64(len(b)) <= l.size {
			if err := s.appendRecord(l, r.key(), b); err != nil {
				return err
			}
			l.logged[r.key()] = r.Version
			return nil
		}
		// Full: start the log over. The gate's write side waits for the
		// durable saves between their record and their files (the caller's
		// read side is let go meanwhile, if it holds it).
		l.mu.Unlock()
		err = s.resetWhenFull(l, int64(len(b)), gateHeld)
		l.mu.Lock()
		if err != nil {
			return err
		}
	}
}

// appendRecord writes an encoded record at the log's end, zeroing the
// blocks ahead as needed, and fdatasyncs it. l.mu is held.
func (s *FileStore) appendRecord(l *redoLog, key Key, b []byte) error {
	if end := l.off + int64(len(b)); end > l.zeroed {
		to := min(l.size, max(end, l.zeroed+redoZeroChunk))
		if _, err := l.f.WriteAt(make([]byte, to-l.zeroed), l.zeroed); err != nil {
			return fmt.Errorf("file store: redo log: %w", err)
		}
		l.zeroed = to
	}
	if s.opts.onSync != nil {
		s.opts.onSync(key, []string{l.path})
	}
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		return fmt.Errorf("file store: redo log: %w", err)
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("file store: redo log: fdatasync: %w", err)
	}
	l.off += int64(len(b))
	return nil
}

// resetWhenFull takes the gate's write side (letting go of the caller's
// read side, if gateHeld, and taking it back after) and resets the log if
// a record of n bytes still does not fit.
func (s *FileStore) resetWhenFull(l *redoLog, n int64, gateHeld bool) error {
	if gateHeld {
		s.redoGate.RUnlock()
		defer s.redoGate.RLock()
	}
	s.redoGate.Lock()
	defer s.redoGate.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.off+n <= l.size {
		return nil
	}
	return s.resetRedo(l)
}

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

// forgetLogged drops what loggedAt knows of key (Delete: a new owner of
// the key may reach the same version).
func (s *FileStore) forgetLogged(key Key) {
	s.mu.Lock()
	l := s.redo
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.logged, key)
	l.mu.Unlock()
}

// resetRedo makes every file this store wrote durable, then starts the log
// over with the next generation. The gate's write side and l.mu are held.
func (s *FileStore) resetRedo(l *redoLog) error {
	since := monoNow() // every record after the sync is newer
	if err := s.syncEverything(); err != nil {
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	h := redoHeader{gen: l.header.gen + 1, since: since}
	_, err := l.f.WriteAt(h.bytes(), 0)
	if err == nil {
		err = fdatasync(l.f)
	}
	if err != nil {
		// Which generation the disk holds is unknown now: the log takes no
		// more records (durable saves fail), and stays for a recovery.
		_ = l.f.Close()
		l.f = nil
		return fmt.Errorf("file store: redo log reset: %w", err)
	}
	l.header, l.off = h, redoHeaderSize
	clear(l.logged)
	return nil
}

// syncEverything makes every file and folder this store wrote without fsync
// durable: one syncfs where there is one, else the fsyncs of every dirty
// set. The dirty sets are taken before, and given back if it fails.
func (s *FileStore) syncEverything() error {
	s.mu.Lock()
	taken := s.dirty
	s.dirty = map[Key]*dirtySet{}
	s.mu.Unlock()
	giveBack := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k, d := range taken {
			s.dirtyOf(k).add(d.files, d.dirs)
		}
	}
	if ok, err := syncFileSystem(s.root); ok {
		if s.opts.onSync != nil {
			s.opts.onSync(Key{}, []string{filepath.Join(s.root, SyncFSName)})
		}
		if err != nil {
			giveBack()
			return err
		}
		return nil
	}
	s.mu.Lock()
	for k, d := range taken {
		s.dirtyOf(k).add(d.files, d.dirs)
	}
	s.mu.Unlock()
	for k := range taken {
		if err := s.flush(k); err != nil {
			return err
		}
	}
	return nil
}

// closeRedo makes everything durable and removes the log (Close). If that
// fails, the log stays, for the next store to recover from.
func (s *FileStore) closeRedo() error {
	s.mu.Lock()
	l := s.redo
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	s.redoGate.Lock() // no durable save between its record and its files
	defer s.redoGate.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	defer func() {
		_ = l.f.Close()
		l.f = nil
	}()
	if err := s.syncEverything(); err != nil {
		return err
	}
	if err := os.Remove(l.path); err != nil {
		return err
	}
	return syncPath(s.redoDir())
}

// lockRecovery takes redo/recover.lock: exclusive for a recovery, shared
// for a Delete, so that a recovery never runs between a Delete's removal
// and its deletion record.
func (s *FileStore) lockRecovery(how int) (func(), error) {
	dir := s.redoDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, redoLockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f, how); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = flock(f, syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// logDeletion appends a deletion to redo/deletions and fdatasyncs it. The
// caller holds the owner's lock and recover.lock (shared); mono is when it
// took the owner's lock.
func (s *FileStore) logDeletion(key Key, mono int64) error {
	p := filepath.Join(s.redoDir(), redoDeletionsLog)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := flock(f, syscall.LOCK_EX); err != nil {
		return err
	}
	b, err := readAllAt(f)
	if err != nil {
		return err
	}
	h, _, end, err := readRedoRecords(b)
	if err != nil {
		return fmt.Errorf("%s: %w", s.rel(p), err)
	}
	made := false
	if end == 0 { // new, or torn while it was made
		h, end, made = redoHeader{gen: 1}, redoHeaderSize, true
		if _, err := f.WriteAt(h.bytes(), 0); err != nil {
			return err
		}
	}
	rec, err := encodeRedoRecord(h.gen, &redoRecord{Op: "delete", Mono: mono, SessionID: key.SessionID, Kind: key.Kind, ID: key.ID, UpdatedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	if s.opts.onSync != nil {
		s.opts.onSync(key, []string{p})
	}
	if _, err := f.WriteAt(rec, int64(end)); err != nil {
		return err
	}
	if made {
		if err := f.Sync(); err != nil {
			return err
		}
		return syncPath(s.redoDir())
	}
	return fdatasync(f)
}

// recoverRedo replays the logs of dead stores (see the top of this file).
func (s *FileStore) recoverRedo() error {
	dir := s.redoDir()
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	work := false
	for _, n := range names {
		work = work || strings.HasSuffix(n.Name(), redoSuffix) || strings.HasSuffix(n.Name(), ".new") || n.Name() == redoDeletionsLog
	}
	if !work {
		return nil
	}
	unlock, err := s.lockRecovery(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if names, err = os.ReadDir(dir); err != nil { // again, under the lock
		return err
	}

	deletions, err := s.readDeletions()
	if err != nil {
		return err
	}
	var dead []*os.File
	defer func() {
		for _, f := range dead {
			_ = f.Close()
		}
	}()
	latest := map[Key]*redoRecord{}
	oldestLive := int64(0) // when the oldest live log's records start
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".new") {
			removeOrphan(filepath.Join(dir, n.Name()))
			continue
		}
		if !strings.HasSuffix(n.Name(), redoSuffix) {
			continue
		}
		p := filepath.Join(dir, n.Name())
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			if !errors.Is(err, syscall.EWOULDBLOCK) {
				_ = f.Close()
				return err
			}
			// A live store's. Its header says from when its records are.
			since := logSince(f)
			_ = f.Close()
			if oldestLive == 0 || since < oldestLive {
				oldestLive = since
			}
			continue
		}
		dead = append(dead, f)
		b, err := readAllAt(f)
		if err != nil {
			return err
		}
		_, recs, _, err := readRedoRecords(b)
		if err != nil {
			return fmt.Errorf("redo log %s: %w", s.rel(p), err)
		}
		for _, r := range recs {
			if cur, ok := latest[r.key()]; !ok || r.Mono > cur.Mono {
				latest[r.key()] = r
			}
		}
	}
	keys := make([]Key, 0, len(latest))
	for k, r := range latest {
		if d, ok := deletions[k]; ok && d >= r.Mono {
			continue // deleted after it was written
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyOrder(keys[i]) < keyOrder(keys[j]) })
	for _, k := range keys {
		if err := s.recoverOwner(latest[k]); err != nil {
			return fmt.Errorf("redo log: session %q, %s %q: %w", k.SessionID, k.Kind, k.ID, err)
		}
	}
	for _, f := range dead {
		if err := os.Remove(f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := syncPath(dir); err != nil {
		return err
	}
	return s.compactDeletions(deletions, oldestLive)
}

// logSince reads when a live log's records start from its header.
func logSince(f *os.File) int64 {
	b := make([]byte, redoHeaderSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return 1 // unreadable: take it for the oldest there can be
	}
	h, ok := parseRedoHeader(b)
	if !ok {
		return 1 // being written: take it for the oldest there can be
	}
	return h.since
}

// removeOrphan removes a log a store was killed while making (never
// renamed into place, so it holds no record), unless a store is making it
// now (it holds the lock).
func removeOrphan(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		_ = os.Remove(p)
	}
}

// readDeletions returns the latest deletion time of each owner.
func (s *FileStore) readDeletions() (map[Key]int64, error) {
	p := filepath.Join(s.redoDir(), redoDeletionsLog)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[Key]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	_, recs, _, err := readRedoRecords(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.rel(p), err)
	}
	out := make(map[Key]int64, len(recs))
	for _, r := range recs {
		out[r.key()] = max(out[r.key()], r.Mono)
	}
	return out, nil
}

// compactDeletions rewrites redo/deletions with the deletions a live log
// could still contradict (those not older than oldestLive), or removes it
// when there are none. recover.lock is held exclusively, so no Delete
// appends meanwhile.
func (s *FileStore) compactDeletions(deletions map[Key]int64, oldestLive int64) error {
	p := filepath.Join(s.redoDir(), redoDeletionsLog)
	if len(deletions) == 0 {
		return nil
	}
	var keep []*redoRecord
	for k, mono := range deletions {
		if oldestLive != 0 && mono >= oldestLive {
			keep = append(keep, &redoRecord{Op: "delete", Mono: mono, SessionID: k.SessionID, Kind: k.Kind, ID: k.ID})
		}
	}
	if len(keep) == len(deletions) {
		return nil
	}
	if len(keep) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncPath(s.redoDir())
	}
	b := redoHeader{gen: 1}.bytes()
	for _, r := range keep {
		rb, err := encodeRedoRecord(1, r)
		if err != nil {
			return err
		}
		b = append(b, rb...)
	}
	tmp := p + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return syncPath(s.redoDir())
}

// recoverOwner brings one owner to its latest logged state, durably.
func (s *FileStore) recoverOwner(r *redoRecord) error {
	key := r.key()
	if err := key.Validate(); err != nil {
		return err
	}
	if err := s.repairSession(key); err != nil {
		return err
	}
	lock, err := s.lockOwner(key)
	if err != nil {
		return err
	}
	defer lock.unlock()
	sdir := s.SessionDir(key.SessionID)
	odir := s.ownerDir(key)
	chain := []string{s.root, sdir, filepath.Dir(odir), odir, filepath.Join(odir, "messages")}

	// What the files hold, if it is intact and at least as new, wins: it is
	// what the dead store last wrote. It is made durable as it is.
	head, _ := s.readHead(key)
	if head != nil {
		if j, err := s.readLockedJournal(key, lock, head.Version); err == nil && j.version(head.Version) >= r.Version {
			got, err := s.journalMessages(key, j, head.Messages)
			if err == nil && j.version(head.Version) == r.Version && !sameRecord(r, got, j, head) {
				// At the record's version the files must say what it
				// says: one that does not is a stale file under a
				// number a crash let a save reuse.
				err = errors.New("the files differ from the record")
			}
			if err == nil {
				files := []string{filepath.Join(sdir, "session.json"), filepath.Join(odir, headName(key)), j.path}
				for _, n := range head.Messages {
					files = append(files, filepath.Join(odir, "messages", messageName(n)))
				}
				if err := s.removeUnlisted(key); err != nil {
					return err
				}
				if err := s.syncRound(key, files); err != nil {
					return err
				}
				return s.syncRound(key, chain)
			}
		}
	}
	// Else the record is written back, every message to a new file (kept
	// 0), so that every file the new head names is fsynced.
	j, err := s.readLockedJournal(key, lock, r.Version)
	if err != nil {
		// Damage past the durable state the log holds: the checkpoint
		// below empties the journal.
		j = &journal{f: lock.f, path: lock.f.Name(), size: 1}
	}
	s.mu.Lock()
	s.dirtyOf(key).add([]string{filepath.Join(sdir, "session.json")}, chain)
	s.mu.Unlock()
	if err := s.checkpoint(key, head, j, r.Version, 0, r.Messages, r.Data, true); err != nil {
		return err
	}
	return s.removeUnlisted(key)
}

// sameRecord reports whether the files' record (head, journal, messages
// got) says what r says.
func sameRecord(r *redoRecord, got []json.RawMessage, j *journal, head *fileHead) bool {
	data := head.Data
	if n := len(j.lines); n > 0 {
		data = j.lines[n-1].Data
	}
	if !bytes.Equal(compactJSON(data), compactJSON(r.Data)) || len(got) != len(r.Messages) {
		return false
	}
	for i := range got {
		if !bytes.Equal(compactJSON(got[i]), compactJSON(r.Messages[i])) {
			return false
		}
	}
	return true
}

func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// repairSession rewrites, durably, a session.json a crash tore (made
// without fsync, its data lost): recovery has a record of the session, so
// the session exists.
func (s *FileStore) repairSession(key Key) error {
	if _, err := s.checkSession(key); err == nil || !errors.Is(err, ErrDamaged) || errors.Is(err, ErrSchemaVersion) {
		return err // a newer schema's session.json is not a torn one
	}
	p := filepath.Join(s.SessionDir(key.SessionID), "session.json")
	b, err := marshal(fileSession{SchemaVersion: SchemaVersion, SessionID: key.SessionID, CreatedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return syncPath(filepath.Dir(p))
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
