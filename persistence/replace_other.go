//go:build !linux

package persistence

import "os"

// replaceFile puts the file at tmp in dst's place atomically.
func replaceFile(tmp, dst string) error { return os.Rename(tmp, dst) }
