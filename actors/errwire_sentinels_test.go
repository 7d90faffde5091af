package actors_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// lowerSentinels are the exported sentinels of actors and of every package
// below it, by their wire code ("package.Name").
var lowerSentinels = map[string]error{
	"interrupt.ErrInterrupted":       interrupt.ErrInterrupted,
	"interrupt.ErrNotInterrupted":    interrupt.ErrNotInterrupted,
	"interrupt.ErrResumeRequired":    interrupt.ErrResumeRequired,
	"interrupt.ErrMixedInput":        interrupt.ErrMixedInput,
	"interrupt.ErrEmptyResume":       interrupt.ErrEmptyResume,
	"interrupt.ErrUnknownID":         interrupt.ErrUnknownID,
	"interrupt.ErrMissingResponse":   interrupt.ErrMissingResponse,
	"interrupt.ErrDuplicateResponse": interrupt.ErrDuplicateResponse,
	"interrupt.ErrDuplicateName":     interrupt.ErrDuplicateName,
	"interrupt.ErrReason":            interrupt.ErrReason,
	"interrupt.ErrAnswer":            interrupt.ErrAnswer,
	"interrupt.ErrNoAnswer":          interrupt.ErrNoAnswer,
	"interrupt.ErrNoReason":          interrupt.ErrNoReason,
	"interrupt.ErrEmptyID":           interrupt.ErrEmptyID,
	"interrupt.ErrEmptyName":         interrupt.ErrEmptyName,
	"interrupt.ErrNotInterruptible":  interrupt.ErrNotInterruptible,
	"interrupt.ErrNotUTF8":           interrupt.ErrNotUTF8,
	"interrupt.ErrScopeEnded":        interrupt.ErrScopeEnded,
	"interrupt.ErrOwnerPath":         interrupt.ErrOwnerPath,
	"persistence.ErrNotFound":        persistence.ErrNotFound,
	"persistence.ErrConflict":        persistence.ErrConflict,
	"persistence.ErrDamaged":         persistence.ErrDamaged,
	"persistence.ErrSchemaVersion":   persistence.ErrSchemaVersion,
	"persistence.ErrBadID":           persistence.ErrBadID,
	"persistence.ErrBadSave":         persistence.ErrBadSave,
	"persistence.ErrTooLarge":        persistence.ErrTooLarge,
	"persistence.ErrClosed":          persistence.ErrClosed,
	"persistence.ErrOutcomeUnknown":  persistence.ErrOutcomeUnknown,
	"model.ErrAuth":                  model.ErrAuth,
	"model.ErrUnknownModel":          model.ErrUnknownModel,
	"model.ErrRateLimited":           model.ErrRateLimited,
	"model.ErrContextWindow":         model.ErrContextWindow,
	"model.ErrServer":                model.ErrServer,
	"model.ErrBadRequest":            model.ErrBadRequest,
	"model.ErrIncompleteStream":      model.ErrIncompleteStream,
	"model.ErrMaxTokensInToolUse":    model.ErrMaxTokensInToolUse,
	"model.ErrEmptyBlock":            model.ErrEmptyBlock,
	"model.ErrScriptExhausted":       model.ErrScriptExhausted,
	"tool.ErrExecutor":               tool.ErrExecutor,
	"tool.ErrBadName":                tool.ErrBadName,
	"tool.ErrBadInput":               tool.ErrBadInput,
	"tool.ErrInputNotObject":         tool.ErrInputNotObject,
	"hook.ErrNilCallback":            hook.ErrNilCallback,
	"hook.ErrNotFired":               hook.ErrNotFired,
	"hook.ErrForeignInterrupt":       hook.ErrForeignInterrupt,
	"actors.ErrClosed":               actors.ErrClosed,
	"actors.ErrBound":                actors.ErrBound,
	"actors.ErrUnbound":              actors.ErrUnbound,
	"actors.ErrBadErrorCode":         actors.ErrBadErrorCode,
	"actors.ErrNodeTimeout":          actors.ErrNodeTimeout,
	"actors.ErrOrchestratorClosed":   actors.ErrOrchestratorClosed,
	"actors.ErrOrchestratorFaulted":  actors.ErrOrchestratorFaulted,
	"actors.ErrTopology":             actors.ErrTopology,
	"actors.ErrNodeFailed":           actors.ErrNodeFailed,
	"actors.ErrIncompleteRun":        actors.ErrIncompleteRun,
	"actors.ErrEmptyTask":            actors.ErrEmptyTask,
	"actors.ErrBadTask":              actors.ErrBadTask,
	"actors.ErrReentrant":            actors.ErrReentrant,
	"actors.ErrUnknownMessage":       actors.ErrUnknownMessage,
	"actors.ErrCutOff":               actors.ErrCutOff,
	"actors.ErrStreamStopped":        actors.ErrStreamStopped,
}

// SPEC R2: every sentinel of actors and of the packages below it (the
// errors any owner's work can fail with: a model's, a store's, a tool's, a
// hook's) survives a process boundary under its own code, wrapped or not,
// and matches itself there.
func TestDefaultCodec_RoundTripsEverySentinelOfTheLowerLayers(t *testing.T) {
	c := actors.DefaultCodec()
	for code, s := range lowerSentinels {
		t.Run(code, func(t *testing.T) {
			w := c.Encode(s)
			assert.Equal(t, code, w.GetCode())
			got := overWire(t, c, c, fmt.Errorf("node %q: %w", "n1", s))
			assert.ErrorIs(t, got, s)
			assert.ErrorIs(t, got, actors.ErrRemote)
		})
	}
}

// The table above lists every exported sentinel those packages declare,
// so that a new one cannot be left off the wire unnoticed. ErrRemote is
// the decoded errors' own marker, never encoded.
func TestDefaultCodec_SentinelTableListsEveryDeclaredSentinel(t *testing.T) {
	dirs := map[string]string{
		"interrupt": "../interrupt", "persistence": "../persistence", "model": "../model",
		"tool": "../tool", "hook": "../hook", "actors": ".",
	}
	var declared []string
	for pkg, dir := range dirs {
		declared = append(declared, declaredSentinels(t, pkg, dir)...)
	}
	var listed []string
	for code := range lowerSentinels {
		listed = append(listed, code)
	}
	listed = append(listed, "actors.ErrRemote")
	sort.Strings(declared)
	sort.Strings(listed)
	assert.Equal(t, declared, listed)
}

// declaredSentinels returns "pkg.ErrX" for every exported package-level
// variable named Err... that the non-test Go files of dir declare with
// errors.New or fmt.Errorf.
func declaredSentinels(t *testing.T, pkg, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					call, ok := vs.Values[i].(*ast.CallExpr)
					if !ok {
						continue
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf") {
						out = append(out, pkg+"."+name.Name)
					}
				}
			}
		}
	}
	return out
}
