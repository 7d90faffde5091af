package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/examples/graphapproval/cleanupgraph"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/model/provider"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/tool"
)

// The demo: an agent told to delete files older than 5 days, in a workspace
// folder of sample files. The scripted model inspects the folder, asks to
// delete the old files, and a BeforeToolCall hook stops for approval.

const maxAgeDays = 5

type pathsInput struct {
	Paths []string `json:"paths" jsonschema:"files or folders to act on"`
}

type fileInfo struct {
	Path    string  `json:"path"`
	AgeDays float64 `json:"ageDays"`
}

// sessionsDir is where, under the workspace, the demo keeps its session
// (the SQLite store, braid.db); the tools and the listing leave it out.
const sessionsDir = ".braid"

// workspaceMarker is the file, in the session folder, that marks a
// workspace the demo made (claimWorkspace writes it before seeding).
const workspaceMarker = "demo-workspace"

// errNotDemoWorkspace: -dir names a folder that holds files the demo did
// not create; the demo, which deletes files, does not run there.
var errNotDemoWorkspace = errors.New("the folder holds files that braid demo did not create")

// demoHead is the first part of braid demo's usage; its flags follow.
const demoHead = `usage: braid demo [-yes|-no|-later] [-dir DIR] [-model SPEC]
       braid demo graph [-yes|-no] [-model SPEC]

  demo        the "delete files older than 5 days" agent on a folder of
              sample files; it asks (y/N) before deleting, and keeps the
              run in a SQLite store under the folder (DIR/.braid)
  demo graph  the seed's Graph example, inspector -> cleanup: a
              BeforeNodeCall hook asks (y/N) before cleanup runs
`

// demoFlags are braid demo's flags.
type demoFlags struct {
	fset           *flag.FlagSet
	yes, no, later *bool
	dir, model     *string
}

func newDemoFlags() *demoFlags {
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	return &demoFlags{
		fset:  fset,
		yes:   fset.Bool("yes", false, "approve without asking"),
		no:    fset.Bool("no", false, "deny without asking"),
		later: fset.Bool("later", false, "stop at the approval and exit; run the demo again on the same -dir to answer (the run waits in the SQLite store)"),
		dir:   fset.String("dir", "", "workspace folder to create the sample files in: a new or empty folder, or one an earlier braid demo made, to resume its run (one that ended: the sample files are written again and a new run starts) (default: a new temporary folder); its .braid folder keeps the session"),
		model: provider.Flag(fset),
	}
}

// demoUsage is braid demo's usage, with its flags.
func demoUsage() string { return flagUsage(newDemoFlags().fset, demoHead) }

// runDemo runs "braid demo [flags]", the agent demo, or "braid demo graph
// [flags]", the graph demo (runGraphDemo). A first argument other than
// graph, help or a flag, and any argument after the flags, is a
// *usageError: nothing runs.
func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		switch {
		case args[0] == "graph":
			return runGraphDemo(ctx, args[1:], stdin, stdout)
		case args[0] == "help":
			fmt.Fprint(stdout, demoUsage())
			return flag.ErrHelp
		case !strings.HasPrefix(args[0], "-"):
			return usageErr(demoUsage(), "unknown subcommand %q (braid demo takes graph, or flags)", args[0])
		}
	}
	f := newDemoFlags()
	if err := parseFlags(f.fset, args, demoUsage(), stdout); err != nil {
		return err
	}
	yes, no, later, dir := f.yes, f.no, f.later, f.dir
	if err := checkDemoArgs(f.fset, *f.model); err != nil {
		return err
	}
	bad := func(msg string) error { return usageErr(demoUsage(), "%s", msg) }
	if *yes && *no {
		return bad("-yes and -no exclude each other")
	}
	if *later && (*yes || *no) {
		return bad("-later leaves the answer for the next run: give -yes or -no then")
	}
	if *later && *dir == "" {
		return bad("-later needs -dir, so that the next run finds the session")
	}
	ws := *dir
	if ws == "" {
		tmp, err := os.MkdirTemp("", "braid-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		ws = tmp
	}
	if err := claimWorkspace(ws); err != nil {
		return err
	}

	// The session lives in the SQLite store under the workspace: an
	// interrupted run waits there for its answer, which may come from
	// another process (or `braid session show demo -dir DIR/.braid`).
	store, err := sqlite.Open(ctx, sqlite.Config{Dir: filepath.Join(ws, sessionsDir)})
	if err != nil {
		return err
	}
	defer store.Close()
	sess, err := persistence.NewSessionManager(store, "demo")
	if err != nil {
		return err
	}
	chosen, err := provider.New(ctx, *f.model, demoModel())
	if err != nil {
		return err
	}
	a, err := agent.New(ctx, agent.Config{
		Model:        chosen,
		SystemPrompt: "You delete files older than 5 days",
		Tools:        []tool.Tool{inspectTool(ws), deleteTool(ws)},
		Hooks:        []hook.Provider{hook.Func(approveDeletes)},
		Session:      sess,
	})
	if err != nil {
		return damagedHint(err, ws)
	}
	defer a.Close(context.WithoutCancel(ctx))

	prompt := newPrompter(stdin, stdout, *yes, *no)

	status, err := a.Status(ctx)
	if err != nil {
		return damagedHint(err, ws)
	}
	pending := status.Interrupts
	switch {
	case len(pending) > 0:
		fmt.Fprintf(stdout, "workspace: %s\n", ws)
		fmt.Fprintf(stdout, "\nresuming the run saved in %s: it is waiting for an answer\n", filepath.Join(ws, sessionsDir))
	case status.Incomplete():
		// A run a crash (or a Close) cut off: carried on, not prompted
		// again (a prompt is refused until then, agent.ErrIncompleteRun).
		fmt.Fprintf(stdout, "workspace: %s\n", ws)
		fmt.Fprintf(stdout, "\ncarrying on the run saved in %s: it was cut off before it finished\n", filepath.Join(ws, sessionsDir))
		res, err := streamOnce(ctx, a, agent.Input{}, stdout)
		if err != nil {
			return err
		}
		pending = res.Interrupts
		if res.StopReason != agent.StopInterrupt {
			return finish(stdout, ws, res)
		}
	default:
		if err := seedWorkspace(ws); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "workspace: %s\n", ws)
		printTree(stdout, ws)
		const prompt = "Delete the files in my workspace that are older than 5 days"
		fmt.Fprintf(stdout, "\nyou: %s\n", prompt)
		res, err := streamOnce(ctx, a, agent.Text(prompt), stdout)
		if err != nil {
			return err
		}
		pending = res.Interrupts
		if res.StopReason != agent.StopInterrupt {
			return finish(stdout, ws, res)
		}
	}
	for {
		if *later {
			fmt.Fprintf(stdout, "\nThe run is saved and waits for the answer. Give it with:\n  braid demo -dir %s [-yes|-no]\n", ws)
			return nil
		}
		var responses []interrupt.Response
		for _, in := range pending {
			var reason pathsInput
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			answer, err := prompt.ask(ctx, fmt.Sprintf("Do you want to delete %v (y/N): ", reason.Paths))
			if err != nil {
				// The run waits in the store for its answer, as with -later.
				if *dir == "" {
					return fmt.Errorf("stopped at the approval (%w): nothing was deleted", err)
				}
				return fmt.Errorf("stopped at the approval (%w): nothing was deleted; the run waits in %s for its answer: braid demo -dir %s -yes (or -no)",
					err, filepath.Join(ws, sessionsDir), ws)
			}
			responses = append(responses, interrupt.Respond(in.ID, answer))
		}
		res, err := streamOnce(ctx, a, agent.Resume(responses...), stdout)
		if err != nil {
			return err
		}
		if res.StopReason != agent.StopInterrupt {
			return finish(stdout, ws, res)
		}
		pending = res.Interrupts
	}
}

// damagedHint adds to an error that a damaged stored run caused how to
// start over: the demo's session is the demo's own.
func damagedHint(err error, ws string) error {
	if errors.Is(err, persistence.ErrDamaged) {
		return fmt.Errorf("%w\nthe demo's saved run is damaged; to start over, delete it: braid session delete demo -dir %s", err, filepath.Join(ws, sessionsDir))
	}
	return err
}

// checkDemoArgs refuses, as a *usageError, arguments left after a demo's
// flags and a -model spec that does not parse.
func checkDemoArgs(fset *flag.FlagSet, modelSpec string) error {
	if fset.NArg() > 0 {
		hint := ""
		if fset.Arg(0) == "graph" {
			hint = " (graph comes first: braid demo graph [flags])"
		}
		return usageErr(flagUsage(fset, demoHead), "%s takes no argument, got %q%s", fset.Name(), fset.Arg(0), hint)
	}
	if _, err := provider.Parse(modelSpec); err != nil {
		return usageErr(flagUsage(fset, demoHead), "-model: %w", err)
	}
	return nil
}

func finish(stdout io.Writer, ws string, res *agent.Result) error {
	fmt.Fprintf(stdout, "\nstop reason: %s (this invocation: %s, %s)\n", res.StopReason,
		count(res.Metrics.ModelCalls, "model call"), count(res.Metrics.ToolCalls, "tool run"))
	fmt.Fprintln(stdout, "\nworkspace now:")
	printTree(stdout, ws)
	return nil
}

// hidden reports whether a workspace entry is the demo's own (the session
// folder): the tools and the listing leave it out.
func hidden(ws, p string) bool {
	rel, err := filepath.Rel(ws, p)
	return err == nil && (rel == sessionsDir || strings.HasPrefix(rel, sessionsDir+string(filepath.Separator)))
}

// streamOnce runs one invocation and prints its events.
func streamOnce(ctx context.Context, a *agent.Agent, in agent.Input, w io.Writer) (*agent.Result, error) {
	var res *agent.Result
	for ev, err := range a.Stream(ctx, in) {
		if err != nil {
			return nil, err
		}
		switch e := ev.(type) {
		case *agent.TextDeltaEvent:
			fmt.Fprintf(w, "agent: %s\n", e.Text)
		case *agent.ToolUseEvent:
			fmt.Fprintf(w, "  -> %s %s\n", e.ToolUse.Name, e.ToolUse.Input)
		case *agent.ToolResultEvent:
			fmt.Fprintf(w, "  <- %s [%s] %s\n", e.Result.ToolUseID, e.Result.Status, resultText(e.Result))
		case *agent.InterruptEvent:
			fmt.Fprintf(w, "  !! interrupt %q (%s) from %s\n", e.Interrupt.Name, e.Interrupt.ID, e.Interrupt.Source)
		case *agent.ResultEvent:
			res = e.Result
		}
	}
	if res == nil {
		return nil, errors.New("stream ended without a result")
	}
	return res, nil
}

func resultText(r model.ToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch {
		case c.Text != nil:
			parts = append(parts, *c.Text)
		case c.JSON != nil:
			parts = append(parts, string(c.JSON))
		}
	}
	return strings.Join(parts, " ")
}

// approveDeletes is the seed's approval hook.
func approveDeletes(_ context.Context, ev *agent.BeforeToolCallEvent) error {
	if ev.ToolUse.Name != "delete_files" {
		return nil
	}
	var in pathsInput
	if err := ev.ToolUse.DecodeInput(&in); err != nil {
		return err
	}
	answer, err := ev.Interrupt("demo-approval", in)
	if err != nil {
		return err
	}
	if s, _ := answer.String(); strings.ToLower(s) != "y" {
		ev.CancelTool("User denied permission to delete files")
	}
	return nil
}

// inWorkspace resolves a path the model gave against the workspace and
// refuses one that leaves it.
func inWorkspace(ws, p string) (string, error) {
	if filepath.IsAbs(p) || !filepath.IsLocal(filepath.Clean(p)) && filepath.Clean(p) != "." {
		return "", fmt.Errorf("path %q is outside the workspace", p)
	}
	full := filepath.Join(ws, p)
	if hidden(ws, full) {
		return "", fmt.Errorf("path %q is the demo's session folder", p)
	}
	return full, nil
}

func inspectTool(ws string) tool.Tool {
	return tool.New("inspect_files", "List the demo's sample files under the given paths (relative to the workspace) with their age in days",
		func(ctx context.Context, tc *tool.Context, in pathsInput) (map[string]any, error) {
			var files []fileInfo
			now := time.Now()
			for _, rel := range in.Paths {
				root, err := inWorkspace(ws, rel)
				if err != nil {
					return nil, err
				}
				err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err == nil && d.IsDir() && hidden(ws, p) {
						return filepath.SkipDir
					}
					if err != nil || d.IsDir() {
						return err
					}
					relPath, err := filepath.Rel(ws, p)
					if err != nil || !isSample(relPath) {
						return err // the user's files are not the demo's
					}
					info, err := d.Info()
					if err != nil {
						return err
					}
					files = append(files, fileInfo{Path: filepath.ToSlash(relPath), AgeDays: float64(int(now.Sub(info.ModTime()).Hours()/24*10)) / 10})
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
			return map[string]any{"files": files}, nil
		})
}

// deleteTool deletes sample files of ws; it deletes none when a path is
// outside ws or not a sample file.
func deleteTool(ws string) tool.Tool {
	return tool.New("delete_files", "Delete the demo's sample files at the given paths (relative to the workspace)",
		func(ctx context.Context, tc *tool.Context, in pathsInput) (map[string]any, error) {
			full := make([]string, len(in.Paths))
			for i, p := range in.Paths {
				f, err := inWorkspace(ws, p)
				if err != nil {
					return nil, err
				}
				if !isSample(p) {
					return nil, fmt.Errorf("path %q is not one of the demo's sample files: the demo deletes nothing else", p)
				}
				full[i] = f
			}
			var deleted []string
			for i, p := range in.Paths {
				if err := os.Remove(full[i]); err != nil {
					return nil, err
				}
				deleted = append(deleted, p)
			}
			return map[string]any{"deleted": deleted}, nil
		}, tool.AtMostOnce()) // cut off by a crash, it asks before deleting again (SPEC S6)
}

// demoModel plays the conversation as a function of its last message:
// prompt -> inspect; inspection -> delete the old files; deletion -> summary.
func demoModel() model.Model {
	return model.ScriptedFunc(func(req *model.Request) (model.Turn, error) {
		last, ok := req.LastMessage()
		if !ok {
			return model.Turn{}, errors.New("empty conversation")
		}
		results := last.ToolResults()
		if len(results) == 0 {
			return model.Turn{Text: "I will look at the files first.", Calls: []model.ToolCall{
				model.Call("inspect-1", "inspect_files", pathsInput{Paths: []string{"."}}),
			}}, nil
		}
		r := results[0]
		switch r.ToolUseID {
		case "inspect-1":
			var listing struct {
				Files []fileInfo `json:"files"`
			}
			if len(r.Content) == 0 || r.Content[0].JSON == nil {
				return model.TextTurn("I could not read the file list: " + resultText(r)), nil
			}
			if err := json.Unmarshal(r.Content[0].JSON, &listing); err != nil {
				return model.Turn{}, err
			}
			var old []string
			for _, f := range listing.Files {
				if f.AgeDays > maxAgeDays {
					old = append(old, f.Path)
				}
			}
			if len(old) == 0 {
				return model.TextTurn("Nothing is older than 5 days; I left everything alone."), nil
			}
			return model.Turn{
				Text:  fmt.Sprintf("%d of %d files are older than %d days; deleting them.", len(old), len(listing.Files), maxAgeDays),
				Calls: []model.ToolCall{model.Call("delete-1", "delete_files", pathsInput{Paths: old})},
			}, nil
		case "delete-1":
			if r.Status == model.ToolError {
				return model.TextTurn("I did not delete anything: " + resultText(r) + "."), nil
			}
			return model.TextTurn("Done: the old files are deleted."), nil
		}
		return model.TextTurn("I am not sure what happened."), nil
	})
}

// sampleFiles are the demo's files, with their ages: three old, two
// recent. The tools see and delete these only.
var sampleFiles = []struct {
	path string // relative to the workspace, slash-separated
	age  time.Duration
}{
	{"logs/app-2026-11-02.log", 30 * 24 * time.Hour},
	{"logs/app-2026-11-27.log", 6 * 24 * time.Hour},
	{"logs/app-today.log", time.Hour},
	{"tmp/cache.bin", 12 * 24 * time.Hour},
	{"notes.txt", 2 * 24 * time.Hour},
}

// isSample reports whether rel, a path relative to the workspace, is one
// of the sample files.
func isSample(rel string) bool {
	rel = filepath.ToSlash(filepath.Clean(rel))
	for _, f := range sampleFiles {
		if f.path == rel {
			return true
		}
	}
	return false
}

// claimWorkspace makes sure ws is the demo's to seed and delete in: a
// folder that does not exist is created, an empty one is taken; either is
// marked (workspaceMarker) as the demo's. A folder so marked by an earlier
// run is the demo's already (its stored run is resumed). Any other folder
// (one holding the user's files) is refused with errNotDemoWorkspace, and
// nothing in it is touched.
func claimWorkspace(ws string) error {
	marker := filepath.Join(ws, sessionsDir, workspaceMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	entries, err := os.ReadDir(ws)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	case err != nil:
		return fmt.Errorf("workspace: %w", err)
	case len(entries) > 0:
		var names []string
		for _, e := range entries[:min(len(entries), 3)] {
			names = append(names, e.Name())
		}
		if len(entries) > 3 {
			names = append(names, "...")
		}
		return fmt.Errorf("-dir %s: %w (%s), and the demo deletes files: give a new or empty folder, "+
			"or one an earlier braid demo made; or leave -dir out for a temporary folder", ws, errNotDemoWorkspace, strings.Join(names, ", "))
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return os.WriteFile(marker, []byte("braid demo made this folder: it seeds, and may delete, its sample files here\n"), 0o644)
}

// seedWorkspace writes the sample files (claimWorkspace has made ws the
// demo's).
func seedWorkspace(ws string) error {
	now := time.Now()
	for _, f := range sampleFiles {
		p := filepath.Join(ws, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("sample\n"), 0o644); err != nil {
			return err
		}
		t := now.Add(-f.age)
		if err := os.Chtimes(p, t, t); err != nil {
			return err
		}
	}
	return nil
}

func printTree(w io.Writer, ws string) {
	var lines []string
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && hidden(ws, p) {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(ws, p)
		lines = append(lines, fmt.Sprintf("  %-26s %4.0f days old", rel, time.Since(info.ModTime()).Hours()/24))
		return nil
	})
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// runGraphDemo runs "braid demo graph": the graph of examples/graphapproval
// (package cleanupgraph, the seed's Graph example), inspector → cleanup,
// streamed to the terminal. Before cleanup runs, its BeforeNodeCall hook
// stops the graph and the demo asks y/N on stdin (or takes -yes / -no);
// any answer but "y" cancels the cleanup node.
func runGraphDemo(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fset := flag.NewFlagSet("demo graph", flag.ContinueOnError)
	yes := fset.Bool("yes", false, "approve without asking")
	no := fset.Bool("no", false, "deny without asking")
	modelSpec := provider.Flag(fset)
	if len(args) > 0 && args[0] == "help" {
		fmt.Fprint(stdout, flagUsage(fset, demoHead))
		return flag.ErrHelp
	}
	if err := parseFlags(fset, args, flagUsage(fset, demoHead), stdout); err != nil {
		return err
	}
	if err := checkDemoArgs(fset, *modelSpec); err != nil {
		return err
	}
	if *yes && *no {
		return usageErr(flagUsage(fset, demoHead), "-yes and -no exclude each other")
	}
	sys, err := actors.NewSystem(actors.DefaultConfig())
	if err != nil {
		return err
	}
	defer sys.Close(context.WithoutCancel(ctx))
	cloud := cleanupgraph.NewCloud()
	g, err := cleanupgraph.Build(ctx, cloud, cleanupgraph.Config{Model: *modelSpec, System: sys})
	if err != nil {
		return err
	}
	defer g.Close(context.WithoutCancel(ctx))

	prompt := newPrompter(stdin, stdout, *yes, *no)

	fmt.Fprintln(stdout, "graph: inspector -> cleanup; a BeforeNodeCall hook asks before cleanup runs")
	fmt.Fprintln(stdout, "resources:")
	for _, r := range cloud.Resources() {
		fmt.Fprintf(stdout, "  %-22s %3d days old\n", r.Name, r.AgeDays)
	}
	fmt.Fprintf(stdout, "\nyou: %s\n", cleanupgraph.Task)
	res, err := streamGraph(ctx, g, agent.Text(cleanupgraph.Task), stdout)
	for err == nil && res.Status == multiagent.StatusInterrupted {
		var responses []interrupt.Response
		for _, in := range res.Interrupts {
			if in.Name != cleanupgraph.ApprovalName {
				return fmt.Errorf("unexpected interrupt %q from %s", in.Name, in.Source)
			}
			var reason cleanupgraph.Reason
			if err := in.DecodeReason(&reason); err != nil {
				return err
			}
			answer, err := prompt.ask(ctx, fmt.Sprintf("Do you want to cleanup %v (y/N): ", reason.Resources))
			if err != nil {
				return fmt.Errorf("stopped at the approval (%w): nothing was cleaned up", err)
			}
			responses = append(responses, interrupt.Respond(in.ID, answer))
		}
		res, err = streamGraph(ctx, g, agent.Resume(responses...), stdout)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ngraph status: %s (node runs: %s)\n", res.Status, strings.Join(res.ExecutionOrder, ", "))
	if n := res.Node(cleanupgraph.Cleanup); n != nil && n.Status == multiagent.StatusCancelled {
		fmt.Fprintf(stdout, "cleanup was cancelled: %s\n", n.Message)
	}
	fmt.Fprintf(stdout, "deleted: %v\n", cloud.Deleted())
	return nil
}

// streamGraph runs one invocation of g and prints its events.
func streamGraph(ctx context.Context, g *graph.Graph, in agent.Input, w io.Writer) (*multiagent.Result, error) {
	var res *multiagent.Result
	for ev, err := range g.Stream(ctx, in) {
		if err != nil {
			return nil, err
		}
		switch e := ev.(type) {
		case *multiagent.NodeStartEvent:
			fmt.Fprintf(w, "[%s] started\n", e.Node)
		case *multiagent.NodeEvent:
			switch ae := e.Event.(type) {
			case *agent.ToolUseEvent:
				fmt.Fprintf(w, "[%s]   -> %s %s\n", e.Node, ae.ToolUse.Name, ae.ToolUse.Input)
			case *agent.ToolResultEvent:
				fmt.Fprintf(w, "[%s]   <- %s [%s] %s\n", e.Node, ae.Result.ToolUseID, ae.Result.Status, resultText(ae.Result))
			}
		case *multiagent.NodeStopEvent:
			switch e.Result.Status {
			case multiagent.StatusCompleted:
				fmt.Fprintf(w, "[%s] %s: %s\n", e.Node, e.Result.Status, e.Result.Text())
			case multiagent.StatusInterrupted:
				fmt.Fprintf(w, "[%s] %s: waits for %d answer(s)\n", e.Node, e.Result.Status, len(e.Result.Interrupts))
			default:
				fmt.Fprintf(w, "[%s] %s: %s\n", e.Node, e.Result.Status, e.Result.Message)
			}
		case *multiagent.InterruptEvent:
			fmt.Fprintf(w, "  !! interrupt %q from %s before %s\n", e.Interrupt.Name, e.Interrupt.Source, e.Node)
		case *multiagent.ResultEvent:
			res = e.Result
		}
	}
	if res == nil {
		return nil, errors.New("graph stream ended without a result")
	}
	return res, nil
}

// count is n and noun, plural unless n is 1 ("1 model call", "0 tool runs").
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
