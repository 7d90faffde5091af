package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/braidhq/braid/persistence"
)

// runVersion runs "braid version": it takes no argument.
func runVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		if len(args) == 1 && isHelp(args[0]) {
			usage(stdout)
			return nil
		}
		return usageErr(topUsage, "version takes no argument, got %q", strings.Join(args, " "))
	}
	bi, ok := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(stdout, versionText(bi, ok))
	return err
}

// versionText is the line braid version prints for the build bi (ok:
// the binary carries its build information): the main module's version,
// or "(devel)" with the commit it was built from when known (marked
// "+modified" when the work tree had changes), the Go version, and the
// schema version of the records this build writes.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return fmt.Sprintf("braid (unknown build), record schema %d", persistence.SchemaVersion)
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " commit " + rev + modified
	}
	return fmt.Sprintf("braid %s, %s, record schema %d", v, bi.GoVersion, persistence.SchemaVersion)
}
