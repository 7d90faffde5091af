package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The file store's journal: journal.jsonl beside an owner's head keeps the
// saves made since the head was last written, one JSON line each. A head and
// its message files are written only at checkpoints (durable saves, and when
// the journal grows long); every other save appends one line. An append
// creates no file and renames nothing, so it costs a fraction of a head
// write, and it never touches the files of the last durable checkpoint: a
// machine crash between durable saves loses at most the journal's tail,
// never the checkpoint.
//
// Each line names the version it was based on and the version it makes, so
// the lines that count are the chain that starts at the head's version; a
// line that does not continue the chain (left from before a checkpoint, or
// cut by a killed writer) ends it. Each line ends with a CRC-32C of the rest,
// so a torn or half-overwritten line is never mistaken for a save.

const (
	journalName = "journal.jsonl"
	// A journal past either limit is folded into a checkpoint by the next
	// save, so a load reads a bounded journal.
	journalMaxLines = 64
	journalMaxBytes = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journalLine is one save in the journal.
type journalLine struct {
	SchemaVersion int       `json:"schemaVersion"`
	SessionID     string    `json:"sessionId"`
	Kind          Kind      `json:"kind"`
	ID            string    `json:"id"`
	Base          int64     `json:"base"`
	Version       int64     `json:"version"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// Keep is how many messages of the Base version stay; Messages follow.
	Keep     int               `json:"keep"`
	Messages []json.RawMessage `json:"messages"`
	Data     json.RawMessage   `json:"data"`
}

// The CRC closes every line: ...,"crc":"xxxxxxxx"}\n
const crcSuffixLen = len(`,"crc":"00000000"}`)

func encodeJournalLine(l *journalLine) ([]byte, error) {
	b, err := marshalCompact(l)
	if err != nil {
		return nil, err
	}
	sum := crc32.Checksum(b, crcTable)
	out := make([]byte, 0, len(b)+crcSuffixLen+1)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"crc":"`...)
	out = append(out, fmt.Sprintf("%08x", sum)...)
	out = append(out, "\"}\n"...)
	return out, nil
}

// decodeJournalLine returns false for a line whose CRC does not match (torn,
// half overwritten, or not a journal line at all).
func decodeJournalLine(line []byte) (*journalLine, bool) {
	if len(line) < crcSuffixLen+2 || !bytes.HasPrefix(line[len(line)-crcSuffixLen:], []byte(`,"crc":"`)) {
		return nil, false
	}
	tail := line[len(line)-crcSuffixLen:]
	want, err := strconv.ParseUint(string(tail[8:16]), 16, 32)
	if err != nil || tail[16] != '"' || tail[17] != '}' {
		return nil, false
	}
	body := make([]byte, 0, len(line)-crcSuffixLen+1)
	body = append(body, line[:len(line)-crcSuffixLen]...)
	body = append(body, '}')
	if crc32.Checksum(body, crcTable) != uint32(want) {
		return nil, false
	}
	var l journalLine
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, false
	}
	return &l, true
}

// journal is what an owner's journal holds on top of its head.
type journal struct {
	f     *os.File // open and locked, when read under the owner's lock
	path  string
	lines []*journalLine // the chain from the head's version
	end   int64          // where the chain ends: the next line goes there
	size  int64          // the file's size (lines past end are leftovers)
}

// version returns the version the journal brings the record to.
func (j *journal) version(headVersion int64) int64 {
	if len(j.lines) == 0 {
		return headVersion
	}
	return j.lines[len(j.lines)-1].Version
}

// keptFiles returns how many of the head's first n message files the
// record still starts with after the journal.
func (j *journal) keptFiles(n int) int {
	for _, l := range j.lines {
		n = min(n, l.Keep)
	}
	return n
}

// messageCount returns the record's message count after the journal, given
// the head's.
func (j *journal) messageCount(n int) int {
	for _, l := range j.lines {
		n = l.Keep + len(l.Messages)
	}
	return n
}

// readJournal reads key's journal without taking the owner's lock (see
// parseJournal). A missing journal is an empty one.
func (s *FileStore) readJournal(key Key, headVersion int64) (*journal, error) {
	p := filepath.Join(s.ownerDir(key), journalName)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &journal{path: p}, nil
	}
	if err != nil {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: err}
	}
	return s.parseJournal(key, p, b, headVersion)
}

// readLockedJournal reads the journal through the lock's open file.
func (s *FileStore) readLockedJournal(key Key, l *ownerLock, headVersion int64) (*journal, error) {
	b, err := readAllAt(l.f)
	if err != nil {
		return nil, &DamageError{SessionID: key.SessionID, File: s.rel(l.f.Name()), Err: err}
	}
	j, err := s.parseJournal(key, l.f.Name(), b, headVersion)
	if err != nil {
		return nil, err
	}
	j.f = l.f
	return j, nil
}

// readAllAt reads the whole of f from its start, sized by one fstat.
func readAllAt(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF {
		err = nil // shorter than fstat said: take what is there
	}
	return b[:n], err
}

// parseJournal returns the chain of lines of b that starts at headVersion.
// A line whose CRC matches but which belongs to another owner or schema is
// damage.
func (s *FileStore) parseJournal(key Key, p string, b []byte, headVersion int64) (*journal, error) {
	j := &journal{path: p, size: int64(len(b))}
	want := headVersion
	for off := 0; off < len(b); {
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			break // a torn last line
		}
		l, ok := decodeJournalLine(b[off : off+nl])
		if !ok {
			break
		}
		if l.SchemaVersion != SchemaVersion {
			return nil, &DamageError{SessionID: key.SessionID, File: s.rel(p), Err: errSchema(l.SchemaVersion)}
		}
		if l.SessionID != key.SessionID || l.Kind != key.Kind || l.ID != key.ID {
			return nil, s.damaged(key, p, "line at byte %d belongs to session %q, %s %q", off, l.SessionID, l.Kind, l.ID)
		}
		if l.Base != want || l.Version != want+1 {
			break // from before the last checkpoint
		}
		if !validObject(l.Data) {
			return nil, s.damaged(key, p, "line at byte %d: data is not a JSON object", off)
		}
		for _, m := range l.Messages {
			if !validObject(m) {
				return nil, s.damaged(key, p, "line at byte %d: a message is not a JSON object", off)
			}
		}
		j.lines = append(j.lines, l)
		want = l.Version
		off += nl + 1
		j.end = int64(off)
	}
	return j, nil
}

// applyJournal returns the record's messages after the journal, given the
// head's n message files: the first `files` of them (keptFiles), which the
// caller reads, then tail, from the journal's lines. It checks that every
// line keeps no more messages than there were.
func (s *FileStore) applyJournal(key Key, j *journal, n int) (files int, tail []json.RawMessage, err error) {
	files = n
	for _, l := range j.lines {
		switch {
		case l.Keep < 0 || l.Keep > files+len(tail):
			return 0, nil, s.damaged(key, j.path, "version %d keeps %d messages of %d", l.Version, l.Keep, files+len(tail))
		case l.Keep <= files:
			files, tail = l.Keep, nil
		default:
			tail = tail[: l.Keep-files : l.Keep-files]
		}
		tail = append(tail, l.Messages...)
	}
	return files, tail, nil
}

// appendJournal writes line at the journal's end, cutting off what lay past
// it (leftovers from before a checkpoint, or a torn line). The owner's lock
// is held.
func appendJournal(j *journal, line []byte) error {
	if _, err := j.f.WriteAt(line, j.end); err != nil {
		return err
	}
	if j.size > j.end+int64(len(line)) {
		return j.f.Truncate(j.end + int64(len(line)))
	}
	return nil
}

// resetJournal empties the journal after a checkpoint. Its lines no longer
// continue the head's chain, so this only reclaims space: a failure or a
// crash before it leaves lines that loads skip.
func resetJournal(j *journal) {
	if j.size > 0 {
		_ = j.f.Truncate(0)
	}
}

// ownerLock is a held lock on one owner: an exclusive flock on its journal
// file, which a save then reads and appends to through the same file.
type ownerLock struct{ f *os.File }

func (l *ownerLock) unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}

// lockJournal opens (creating it if needed) and locks the journal at p. A
// journal removed while this waited for the lock (Delete in another
// process) is not the owner's any more: it opens the one the path names
// now. It returns an error matching fs.ErrNotExist when p's folder is gone.
func lockJournal(p string) (*ownerLock, error) {
	for {
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
			_ = f.Close()
			return nil, err
		}
		held, herr := f.Stat()
		named, nerr := os.Stat(p)
		if herr == nil && nerr == nil && os.SameFile(held, named) {
			return &ownerLock{f: f}, nil
		}
		l := &ownerLock{f: f}
		l.unlock()
		if herr != nil {
			return nil, herr
		}
		if nerr != nil && !errors.Is(nerr, fs.ErrNotExist) {
			return nil, nerr
		}
	}
}
