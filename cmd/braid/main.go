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
		if err := runDemo(ctx, args[1:], stdin, stdout); err != nil {
			fmt.Fprintln(stderr, "braid demo:", err)
			return 1
		}
		return 0
	case "session":
		if err := runSession(ctx, args[1:], stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "braid session:", err)
			return 1
		}
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "braid: unknown command %q\n", args[0])
		usage(stderr)
		return 2
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
