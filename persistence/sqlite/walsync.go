package sqlite

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/braidhq/braid/persistence"
)

// walSync makes commits durable with an fsync of the WAL file, outside
// the write lock: every transaction commits at synchronous=NORMAL (its
// frames are written to the WAL, atomic and safe from a killed process),
// and a durable point then waits for an fsync of the WAL that started
// after its commit. One fsync covers every group committed before it
// started, so concurrent durable points share it (group commit), and the
// next group commits while it runs.
//
// Why this is safe: SQLite writes a transaction's frames to the WAL with
// write calls before COMMIT returns, and keeps nothing of them in user
// space, so an fsync of the WAL that starts later makes them durable,
// header included. Frames leave the WAL only through a checkpoint, which
// at synchronous=NORMAL syncs the WAL and then the database file before
// the WAL is reset or removed: a commit whose frames a checkpoint moved is
// durable already. The WAL is opened by name once (see fsync). SQLite
// takes no locks on the WAL file itself (its locks are on the database
// and its -shm file), so opening and closing a descriptor of the WAL does
// not drop any lock of SQLite's.
type walSync struct {
	path string
	// sync is (*os.File).Sync; tests replace it to count or fail fsyncs.
	sync func(*os.File) error

	mu   sync.Mutex
	idle *sync.Cond // signalled when an fsync ends
	// committed counts the groups this Store committed; synced, those an
	// fsync covered.
	committed, synced uint64
	running           bool     // an fsync is running (without mu)
	closed            bool     // close was called: no fsync starts
	err               error    // a failed fsync: sticky (see to)
	f                 *os.File // the WAL, open from the first fsync on
}

func newWALSync(path string) *walSync {
	w := &walSync{path: path, sync: (*os.File).Sync}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// ErrDurability reports that an fsync of the WAL failed. The operating
// system may have dropped the pages it could not write, so a later fsync
// that succeeds proves nothing about them: every durable save and Sync of
// the Store fails from then on. Close the Store and open it again (SQLite
// reads the WAL as it is on disk).
var ErrDurability = errors.New("an fsync of the WAL failed: this store can no longer promise durability; close it and open it again")

// commit records that a group committed and returns its number.
func (w *walSync) commit() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed++
	return w.committed
}

// failed returns the error of a failed fsync, if one failed.
func (w *walSync) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// now returns the number of the last group committed.
func (w *walSync) now() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committed
}

// all returns once every group committed so far is durable.
func (w *walSync) all() error { return w.to(w.now()) }

// to returns once the groups up to n are durable: covered by an fsync that
// started after they committed, this caller's or one running already.
// A failed fsync fails every later call, with an error that matches
// ErrDurability and names the WAL file.
func (w *walSync) to(n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < n && w.err == nil {
		if w.running {
			w.idle.Wait()
			continue
		}
		if w.closed {
			return persistence.ErrClosed
		}
		w.running = true
		upto := w.committed
		w.mu.Unlock()
		err := w.fsync()
		w.mu.Lock()
		w.running = false
		if err != nil {
			w.err = fmt.Errorf("sqlite store %s: %w: %w", w.path, ErrDurability, err)
		} else {
			w.synced = max(w.synced, upto)
		}
		w.idle.Broadcast()
	}
	return w.err
}

// fsync syncs the WAL file, opening it at the first call. The descriptor
// is kept for the Store's life and never checked against the WAL's name:
// SQLite removes the WAL only when the last connection to the database
// closes, and the Store's write connection stays open until Close, so the
// file it names is the file the Store's commits are written to. A stat of
// the WAL before each fsync, to notice a replaced file, made every durable
// point about 70 µs slower on ext4 (Linux 6.18): a stat that reports a
// file's times makes its next write update them at once.
func (w *walSync) fsync() error {
	if w.f == nil {
		f, err := os.OpenFile(w.path, os.O_WRONLY, 0)
		if err != nil {
			return err // even a missing WAL: our commits must be in it
		}
		w.f = f
	}
	return w.sync(w.f)
}

// close closes the WAL descriptor; call it once no fsync can start.
func (w *walSync) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for w.running {
		w.idle.Wait()
	}
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
