package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/persistence"
)

// braid version prints one line naming the build, the Go version and the
// record schema it writes, and takes no argument.
func TestVersion_PrintsTheBuildGoAndRecordSchema(t *testing.T) {
	var so, se bytes.Buffer
	assert.Equal(t, exitOK, run(context.Background(), []string{"version"}, nil, &so, &se), se.String())
	assert.Regexp(t, `^braid \S.*, `+runtime.Version()+`, record schema `+strconv.Itoa(persistence.SchemaVersion)+`\n$`, so.String())

	so.Reset()
	se.Reset()
	assert.Equal(t, exitUsage, run(context.Background(), []string{"version", "extra"}, nil, &so, &se))
	assert.Contains(t, se.String(), `version takes no argument, got "extra"`)
	assert.Empty(t, so.String())
}

// The version line names the module's version, else the commit the build
// came from (marked when its work tree had changes), and says so when the
// binary carries no build information.
func TestVersionText_NamesTheVersionOrTheCommit(t *testing.T) {
	assert.Equal(t, "braid v1.2.3, go1.26.8, record schema 1",
		versionText(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, true))
	assert.Equal(t, "braid (devel) commit 0123456789ab+modified, go1.26.8, record schema 1",
		versionText(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, true))
	assert.Equal(t, "braid (devel) commit 0123456789ab, go1.26.8, record schema 1",
		versionText(&debug.BuildInfo{GoVersion: "go1.26.8",
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}}, true))
	assert.Equal(t, "braid (unknown build), record schema 1", versionText(nil, false))
}
