package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
)

// prompter asks the demos' (y/N) questions on out and reads the answers,
// a line each, from in; with -yes or -no it answers for the user without
// reading. One goroutine uses it at a time.
type prompter struct {
	out    io.Writer
	in     *bufio.Reader
	preset string // "y" (-yes), "n" (-no), or "": read the answer
	// reading is the read of in still under way after an ask ended with
	// its context: the next ask takes its line.
	reading chan readLine
}

type readLine struct {
	text string
	err  error
}

// newPrompter returns a prompter; yes and no are the -yes and -no flags.
func newPrompter(in io.Reader, out io.Writer, yes, no bool) *prompter {
	p := &prompter{out: out, in: bufio.NewReader(in)}
	switch {
	case yes:
		p.preset = "y"
	case no:
		p.preset = "n"
	}
	return p
}

// ask prints question and returns the answer: the preset one, or the line
// read (trimmed); the end of the input is "n". When ctx ends before a line
// comes (Ctrl-C), ask returns at once with context.Cause(ctx): the read
// goes on, owned by p, until in gives a line or ends (a process that
// exits ends it).
func (p *prompter) ask(ctx context.Context, question string) (string, error) {
	fmt.Fprint(p.out, question)
	switch p.preset {
	case "y":
		fmt.Fprintln(p.out, "y (-yes)")
		return p.preset, nil
	case "n":
		fmt.Fprintln(p.out, "n (-no)")
		return p.preset, nil
	}
	if ctx.Err() != nil {
		fmt.Fprintln(p.out)
		return "", context.Cause(ctx)
	}
	if p.reading == nil {
		ch := make(chan readLine, 1) // the reader never blocks on it
		go func() {
			text, err := p.in.ReadString('\n')
			ch <- readLine{text, err}
		}()
		p.reading = ch
	}
	select {
	case l := <-p.reading:
		p.reading = nil
		if l.err != nil && l.text == "" {
			fmt.Fprintln(p.out, "\n(no answer: taken as N)")
			return "n", nil
		}
		return strings.TrimSpace(l.text), nil
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", context.Cause(ctx)
	}
}
