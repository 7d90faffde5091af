// Command braid is Braid's command line.
//
//	braid demo [-yes|-no|-later] [-dir DIR]   the "delete old files" agent on the scripted model
//	braid demo graph [-yes|-no]               the seed's Graph example: approval before its cleanup node
//	braid session list [-status]|show ID|export ID [-dir DIR|-postgres DSN]   read stored sessions
//	braid session import FILE|delete ID [-dir DIR|-postgres DSN]    move or remove a session
//
// Run "braid help" for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "demo":
		return exit(stderr, "braid demo:", runDemo(ctx, args[1:], stdin, stdout))
	case "session":
		return exit(stderr, "braid session:", runSession(ctx, args[1:], stdout, stderr))
	default:
		if isHelp(args[0]) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "braid: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

// exit reports a command's error and returns the process's exit code: 0
// when it asked for help (-h, which printed the flags), 1 on error.
func exit(stderr io.Writer, prefix string, err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, prefix, err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: braid <command> [flags]

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
  help    show this text
`)
}

// isHelp reports whether a command's argument asks for its usage.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}
