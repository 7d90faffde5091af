//go:build !linux

package persistence

import (
	"os"
	"time"
)

// monoNow orders the redo log's records; without a clock shared by every
// process, the wall clock stands in.
func monoNow() int64 { return time.Now().UnixNano() }

// syncFileSystem is not available: the caller fsyncs file by file.
func syncFileSystem(string) (bool, error) { return false, nil }

// fdatasync flushes f (fsync where there is no fdatasync).
func fdatasync(f *os.File) error { return f.Sync() }

// allocate makes f size bytes long, reading as zeros.
func allocate(f *os.File, size int64) error { return f.Truncate(size) }
