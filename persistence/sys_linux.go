package persistence

import (
	"os"

	"golang.org/x/sys/unix"
)

// monoNow reads the monotonic clock, which every process of one boot
// shares: the redo log orders the records of several processes by it.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// syncFileSystem makes everything written to the file system that holds dir
// durable (syncfs): one commit and one device flush for any number of
// files. It reports false where the call is not available.
func syncFileSystem(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return true, err
	}
	defer f.Close()
	return true, unix.Syncfs(int(f.Fd()))
}

// fdatasync flushes f's data (and only the metadata needed to read it).
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// allocate gives f size bytes of disk space, reading as zeros.
func allocate(f *os.File, size int64) error {
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err == nil {
		return nil
	}
	return f.Truncate(size)
}
