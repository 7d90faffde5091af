package persistence

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// replaceFile puts the file at tmp in dst's place atomically, and removes
// tmp. Where dst exists it swaps the two names (renameat2 RENAME_EXCHANGE)
// and then removes the old file: a plain rename over an existing file makes
// ext4 start writing the new file's data at once (its auto_da_alloc
// heuristic), which costs ten times the swap; durable saves fsync tmp
// before they call this, so they need no heuristic. A crash between the
// swap and the removal leaves the old head under tmp's name, which the next
// save overwrites.
func replaceFile(tmp, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS),
		errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EXDEV):
		// No dst yet, or a file system without the swap.
		return os.Rename(tmp, dst)
	default:
		return err
	}
}
