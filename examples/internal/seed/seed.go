// Package seed holds what the examples share: the scripted model of the
// "delete files" conversation and the terminal question.
package seed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/braidhq/braid/model"
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
