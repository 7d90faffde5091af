// Package seed holds what the examples share: the scripted model of the
// "delete files" conversation and the terminal question.
package seed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/persistence/sqlite"
)

// Paths is the input of the file tools.
type Paths struct {
	Paths []string `json:"paths" jsonschema:"the files to act on"`
}

// Model returns a scripted model that answers a prompt with the given tool
// calls and, once their results are in, with summary(results).
func Model(calls []model.ToolCall, summary func(results []model.ToolResult) string) *model.ScriptedModel {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, fmt.Errorf("empty conversation")
		}
		if rs := last.ToolResults(); len(rs) > 0 {
			return model.TextTurn(summary(rs)), nil
		}
		return model.ToolTurn(calls...), nil
	})
}

// Asker answers interrupt questions: with a fixed answer when one is given
// (a flag or environment variable), else by asking at the terminal.
type Asker struct {
	fixed string
	in    *bufio.Reader
	out   io.Writer
}

// NewAsker returns an Asker. An empty fixed answer means "ask".
func NewAsker(fixed string, in io.Reader, out io.Writer) *Asker {
	return &Asker{fixed: fixed, in: bufio.NewReader(in), out: out}
}

// Ask prints the question and returns the answer, trimmed. At the end of the
// input it returns "" (which the examples read as "no").
func (a *Asker) Ask(question string) string {
	fmt.Fprint(a.out, question)
	if a.fixed != "" {
		fmt.Fprintln(a.out, a.fixed)
		return a.fixed
	}
	line, err := a.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(a.out)
		return ""
	}
	return strings.TrimSpace(line)
}

// JSON renders v as indented JSON for printing.
func JSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// UsageError is a command line an example cannot run: a bad flag or
// value, a missing flag, an argument it does not take. Nothing ran.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UsageError) Unwrap() error { return e.Err }

// Usage returns a *UsageError saying what is wrong with the command line.
func Usage(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ParseFlags parses an example's command line with fs, which takes no
// argument besides its flags. -h (or -help) prints the usage on fs's
// output and returns flag.ErrHelp; a bad flag, an argument, or a -model
// spec that does not parse (provider.Parse) is a *UsageError, which Exit
// reports: a bad flag also prints the usage, but not the error, which
// would then be said twice.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package would print the error too
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		fs.Usage()
		return &UsageError{Err: err}
	case fs.NArg() > 0:
		return Usage("%s takes flags only, got the argument %q (flags are written -name value)", fs.Name(), fs.Arg(0))
	}
	if f := fs.Lookup("model"); f != nil {
		if _, err := provider.Parse(f.Value.String()); err != nil {
			return Usage("-model: %w", err)
		}
	}
	return nil
}

// Exit reports the error an example's run returned, on stderr after the
// example's name, and returns the process's exit status: 0 when there is
// none or when -h asked for the usage (which the flag set printed), 2 for
// a *UsageError, 1 for any other error.
func Exit(stderr io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, name+":", err)
	var ue *UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// WorkLog is the outside world the tools of a two-process example change:
// a file each tool run appends a line to, with its process id, so that the
// log shows which process did what.
type WorkLog struct{ Path string }

// Write appends one line, "pid <pid>: " and the formatted text.
func (w WorkLog) Write(format string, args ...any) error {
	f, err := os.OpenFile(w.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "pid %d: %s\n", os.Getpid(), fmt.Sprintf(format, args...)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Errors of the two steps of a two-process example.
var (
	// ErrWaiting reports that step 1 found a run that waits for its answer.
	ErrWaiting = errors.New("a run already waits for an answer: resume it with -resume")
	// ErrNothingToResume reports that step 2 found no run that waits.
	ErrNothingToResume = errors.New("no run waits for an answer: run without -resume first")
)

// TwoSteps is the command line of a two-process example: step 1 runs
// until the question and exits; step 2 (-resume), another process,
// answers it from the same store.
type TwoSteps struct {
	Dir    string // the store's folder (holds braid.db and work.log)
	Resume bool   // step 2
	Answer string // step 2's answer; empty asks at the terminal
	Model  string // the -model spec
}

// ParseTwoSteps parses args of the example name into a TwoSteps, with
// its usage printed on out; -dir is required.
func ParseTwoSteps(name string, args []string, out io.Writer) (TwoSteps, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	dir := fs.String("dir", "", "the session store's folder (holds braid.db and work.log); required, and the same for both steps")
	resume := fs.Bool("resume", false, "step 2: resume the run saved by step 1 with the answer")
	answer := fs.String("answer", os.Getenv("BRAID_ANSWER"), "step 2: answer every question with this (y/n); empty asks at the terminal")
	modelSpec := provider.Flag(fs)
	if err := ParseFlags(fs, args); err != nil {
		return TwoSteps{}, err
	}
	if *dir == "" {
		return TwoSteps{}, Usage("-dir is required: both steps must find the same store")
	}
	return TwoSteps{Dir: *dir, Resume: *resume, Answer: *answer, Model: *modelSpec}, nil
}

// OpenStore opens the store in s.Dir. Step 1 creates it if need be; step
// 2 only opens one step 1 made: a folder without braid.db (a mistyped
// -dir) is ErrNothingToResume, and nothing is created in it.
func (s TwoSteps) OpenStore(ctx context.Context) (*sqlite.Store, error) {
	if s.Resume {
		if _, err := os.Stat(filepath.Join(s.Dir, sqlite.FileName)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", s.Dir, ErrNothingToResume)
		}
	}
	return sqlite.Open(ctx, sqlite.Config{Dir: s.Dir})
}
