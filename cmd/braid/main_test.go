package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command line that is wrong (a missing or unknown command or
// subcommand, a bad flag or value, a flag of another subcommand, a missing
// or extra argument) is a usage
// error: exit status 2, the error and the command's usage on stderr, and
// nothing runs (the demo touches no folder, no store is opened).
func TestRun_UsageErrorsExitTwoAndRunNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	ws := filepath.Join(t.TempDir(), "ws")
	store := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: braid <command>"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"help", "demo", "session"}, "help takes one command"},
		{[]string{"help", "session", "nope"}, "help takes one command"},
		{[]string{"demo", "graf"}, `unknown subcommand "graf"`},
		{[]string{"demo", "-yes", "graph"}, "graph comes first"},
		{[]string{"demo", "-dir", ws, "extra"}, `takes no argument, got "extra"`},
		{[]string{"demo", "-dir", ws, "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"demo", "-dir", ws, "-yes", "-no"}, "exclude each other"},
		{[]string{"demo", "-dir", ws, "-later", "-yes"}, "-later leaves the answer"},
		{[]string{"demo", "-later"}, "-later needs -dir"},
		{[]string{"demo", "-dir", ws, "-model", "gpt-4o"}, "openai:<model>"},
		{[]string{"demo", "graph", "extra"}, "takes no argument"},
		{[]string{"demo", "graph", "-yes", "-no"}, "exclude each other"},
		{[]string{"session"}, "missing subcommand"},
		{[]string{"session", "nope"}, `unknown subcommand "nope"`},
		{[]string{"session", "show", "-dir", store}, "show takes one session id"},
		{[]string{"session", "show", "-dir", store, "x", "y"}, "show takes one session id"},
		{[]string{"session", "show", "-dir", store, ""}, "show takes one session id, got an empty one"},
		{[]string{"session", "list", "-dir", store, "x"}, `list takes no argument, got "x"`},
		{[]string{"session", "import", "-dir", store}, "import takes one file"},
		{[]string{"session", "list", "-dir", store, "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"session", "show", "-dir", store, "-status", "x"}, "flag provided but not defined: -status"},
		{[]string{"session", "export", "x", "-status", "-dir", store}, "flag provided but not defined: -status"},
		{[]string{"session", "delete", "-status", "-dir", store, "x"}, "flag provided but not defined: -status"},
		{[]string{"session", "list", "-dir", store, "-postgres", "postgres://nowhere.invalid/db"}, "-dir and -postgres exclude each other"},
		{[]string{"session", "import", "-postgres", "postgres://nowhere.invalid/db", "f.json", "-dir", store}, "-dir and -postgres exclude each other"},
		{[]string{"session", "list", "-dir", ""}, "-dir is empty"},
		{[]string{"session", "import", "-dir", "", "f.json"}, "-dir is empty"},
		{[]string{"session", "show", "-postgres", "", "x"}, "-postgres is empty"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, exitUsage, run(context.Background(), tc.args, strings.NewReader("y\n"), &out, &errOut), "%v", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
		assert.Contains(t, errOut.String(), "usage: braid", "%v: the usage follows the error", tc.args)
		assert.NotContains(t, out.String(), "workspace:", "%v: the demo did not run", tc.args)
		assert.NotContains(t, out.String(), "graph:", "%v: the graph demo did not run", tc.args)
	}
	assert.NoDirExists(t, ws, "no workspace was created")
	assert.NoDirExists(t, ".braid")
	entries, err := os.ReadDir(store)
	require.NoError(t, err)
	assert.Empty(t, entries, "no store was created")
}

// "braid help <command>", "braid <command> help" and -h print the
// command's own usage on stdout and exit 0.
func TestRun_HelpForACommandPrintsItsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "session"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"session", "-h"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"session", "help"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"session", "show", "-h"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"help", "demo"}, "usage: braid demo [-yes|-no|-later] [-dir DIR]"},
		{[]string{"demo", "help"}, "usage: braid demo [-yes|-no|-later] [-dir DIR]"},
		{[]string{"demo", "-h"}, "usage: braid demo [-yes|-no|-later] [-dir DIR]"},
		{[]string{"demo", "graph", "help"}, "braid demo graph [-yes|-no]"},
		{[]string{"help", "demo", "graph"}, "braid demo graph [-yes|-no]"},
		{[]string{"help", "session", "list"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"help", "session", "import"}, "usage: braid session <list|show|export|import|delete>"},
		{[]string{"help", "help"}, "usage: braid <command>"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, exitOK, run(context.Background(), tc.args, strings.NewReader(""), &out, &errOut), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, out.String(), tc.want, "%v", tc.args)
		assert.Empty(t, errOut.String(), "%v", tc.args)
	}
}
