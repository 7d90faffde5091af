package main

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On Windows a word shellWord quotes is read back whole and as it was by
// the system's own splitting of a command line.
func TestShellWord_WindowsSplitsItBackAsItWas(t *testing.T) {
	for _, s := range []string{`C:\my work's space\.braid`, `a"b`, `a\"b`, `x y\`, `""`, "", `tab	and "quotes" \\`, "ünï cödé"} {
		line, err := syscall.UTF16PtrFromString("braid " + shellWord(s))
		require.NoError(t, err)
		var n int32
		argv, err := syscall.CommandLineToArgv(line, &n)
		require.NoError(t, err)
		require.Equal(t, int32(2), n, "%q", s)
		assert.Equal(t, s, syscall.UTF16ToString((*argv[1])[:]), "%q", s)
	}
}
