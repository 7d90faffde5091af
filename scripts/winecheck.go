//go:build ignore

// winecheck reads `go tool test2json` output of a Windows test binary run
// under Wine (scripts/windows-test.sh) and fails when a test failed for
// any reason but one: Wine 8 does not implement the file-disposition call
// Go's os.RemoveAll uses on Windows, so every t.TempDir cleanup fails
// with "Invalid function" after the test's own assertions passed. A test
// whose only failure output is that line counts as passed; any other
// failure output fails the run. It prints a count of each.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action string
	Test   string
	Output string
}

func main() {
	out := map[string][]string{}
	failed := map[string]bool{}
	var passed, skipped, quirk int
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintf(os.Stderr, "winecheck: not test2json output: %s\n", sc.Text())
			os.Exit(2)
		}
		if e.Test == "" {
			if e.Action == "output" && strings.HasPrefix(e.Output, "panic:") {
				fmt.Fprint(os.Stderr, "winecheck: the test binary panicked: ", e.Output)
				os.Exit(1)
			}
			continue
		}
		switch e.Action {
		case "output":
			out[e.Test] = append(out[e.Test], e.Output)
		case "pass":
			passed++
		case "skip":
			skipped++
		case "fail":
			failed[e.Test] = true
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "winecheck:", err)
		os.Exit(2)
	}
	var real []string
	for name := range failed {
		if own := failure(out[name]); len(own) > 0 {
			real = append(real, name+"\n"+strings.Join(own, ""))
		} else if !hasChild(failed, name) || quirkOnly(out[name]) {
			quirk++
		}
	}
	sort.Strings(real)
	for _, r := range real {
		fmt.Print("FAIL ", r)
	}
	fmt.Printf("winecheck: %d passed, %d passed but for Wine's TempDir cleanup, %d skipped, %d failed\n", passed, quirk, skipped, len(real))
	if len(real) > 0 || passed+quirk == 0 {
		os.Exit(1)
	}
}

// failure returns a failed test's own output lines that say something
// other than the run/pass/fail headers and Wine's cleanup error. A parent
// that failed only because a subtest did has none.
func failure(lines []string) []string {
	var own []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "",
			strings.HasPrefix(t, "=== "),
			strings.HasPrefix(t, "--- "),
			strings.Contains(t, "TempDir RemoveAll cleanup:") && strings.HasSuffix(t, "Invalid function."):
			continue
		}
		own = append(own, l)
	}
	return own
}

func quirkOnly(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "TempDir RemoveAll cleanup:") {
			return true
		}
	}
	return false
}

func hasChild(failed map[string]bool, name string) bool {
	for n := range failed {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}
