// Command braid is Braid's command line.
//
//	braid demo [-yes|-no|-later] [-dir DIR] [-model SPEC]   the "delete old files" agent
//	braid demo graph [-yes|-no] [-model SPEC]               the seed's Graph example: approval before its cleanup node
//	braid session list [-status]|show ID|export ID [-dir DIR|-postgres DSN]   read stored sessions
//	braid session import FILE|delete ID [-dir DIR|-postgres DSN]              move or remove a session
//	braid version                                           the build: version, commit, Go, record schema
//	braid help [demo|session]                               the usage of braid or of a command
//
// -model picks the model: "scripted" (the default, an offline script),
// "openai:<model>", "anthropic:<model>" or "bedrock:<model>".
//
// Run "braid help" for the list of commands. The exit status is 0 when the
// command did what it was asked (or printed the help asked for), 1 when it
// failed, 2 on a usage error (see exitUsage), 130 when Ctrl-C stopped it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
)

// The process's exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	// exitUsage: the command line is wrong (a missing or unknown command or
	// subcommand, a bad flag or flag value, a missing or extra argument);
	// nothing ran.
	exitUsage = 2
	// exitInterrupted: Ctrl-C (SIGINT) stopped the command, as shells
	// report a process the signal ended (128 + 2).
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line args and returns the process's exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "demo":
		return exit(ctx, stderr, "braid demo:", runDemo(ctx, args[1:], stdin, stdout))
	case "session":
		return exit(ctx, stderr, "braid session:", runSession(ctx, args[1:], stdout))
	case "version":
		return exit(ctx, stderr, "braid version:", runVersion(args[1:], stdout))
	default:
		if isHelp(args[0]) {
			return exit(ctx, stderr, "braid help:", runHelp(args[1:], stdout))
		}
		return exit(ctx, stderr, "braid:", usageErr(topUsage, "unknown command %q", args[0]))
	}
}

// runHelp runs "braid help [command]": the usage of braid, or of command.
func runHelp(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		usage(stdout)
		return nil
	case len(args) == 2 && args[0] == "demo" && args[1] == "graph":
		args = args[:1] // the demo's usage covers both demos
	case len(args) == 2 && args[0] == "session" && slices.Contains(sessionSubs, args[1]):
		args = args[:1] // the session usage covers every subcommand
	case len(args) > 1:
		return usageErr(topUsage, "help takes one command, got %q", strings.Join(args, " "))
	}
	switch args[0] {
	case "demo":
		_, err := fmt.Fprint(stdout, demoUsage())
		return err
	case "session":
		_, err := fmt.Fprint(stdout, sessionUsage)
		return err
	}
	if isHelp(args[0]) {
		usage(stdout)
		return nil
	}
	return usageErr(topUsage, "unknown command %q", args[0])
}

// usageError is a command line that a command cannot run (see exitUsage):
// run prints it, then the command's usage, and exits 2.
type usageError struct {
	err   error
	usage string // the command's usage text
}

func (e *usageError) Error() string { return e.err.Error() }

// Unwrap returns the cause (a flag's parse error, for one).
func (e *usageError) Unwrap() error { return e.err }

// usageErr returns a *usageError saying what is wrong, with the usage text
// to print after it.
func usageErr(usage, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), usage: usage}
}

// exit reports a command's error and returns the process's exit status:
// 0 when there is none or it asked for help (-h, which printed the usage),
// 2 for a *usageError (printed with its usage), 130 when ctx (the command's,
// which Ctrl-C cancels) has ended, 1 for any other error.
func exit(ctx context.Context, stderr io.Writer, prefix string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, prefix, err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, "\n", ue.usage)
		return exitUsage
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	return exitFailure
}

// parseFlags parses args with fset, which prints nothing itself: -h (or
// -help) prints usage to stdout and returns flag.ErrHelp; a bad flag or
// value is a *usageError with usage.
func parseFlags(fset *flag.FlagSet, args []string, usage string, stdout io.Writer) error {
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	err := fset.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return err
	case err != nil:
		return &usageError{err: err, usage: usage}
	}
	return nil
}

// flagUsage returns usage followed by fset's flags.
func flagUsage(fset *flag.FlagSet, usage string) string {
	var b strings.Builder
	b.WriteString(usage)
	b.WriteString("\n" + fset.Name() + " flags:\n")
	fset.SetOutput(&b)
	fset.PrintDefaults()
	fset.SetOutput(io.Discard)
	return b.String()
}

const topUsage = `usage: braid <command> [flags]

commands:
  demo    run the "delete files older than 5 days" agent on the scripted model;
          it stops for your approval before deleting, and keeps the run in a
          SQLite store under the workspace (DIR/.braid), so -later can leave
          the answer to a later run (flags: -yes, -no, -later, -dir, -model)
  demo graph
          run the seed's Graph example, inspector -> cleanup, on the scripted
          model; a BeforeNodeCall hook asks (y/N) before the cleanup node runs,
          and any answer but y cancels it (flags: -yes, -no, -model)
  session read stored sessions: list [-status], show <id>, export <id>; import an
          exported one (import <file>), or delete one (delete <id>)
          (flags: -dir DIR, the store's folder; -postgres DSN)
  version print the build: Braid's version (or the commit it was built
          from), the Go version, and the schema version of the records it
          writes (a store written by a newer schema is read by that build)
  help [command]
          show this text, or a command's usage ("-h" after a command too)

exit status: 0 done (or help shown), 1 the command failed, 2 a usage error
(a missing or mistyped command or subcommand, a bad flag, a missing or extra
argument: nothing ran), 130 stopped by Ctrl-C
`

func usage(w io.Writer) { fmt.Fprint(w, topUsage) }

// isHelp reports whether a command's argument asks for its usage.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}
