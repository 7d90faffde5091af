package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/graph"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
)

// The test below runs each step of a three-level nested graph in an OS
// process of its own (this test binary again, BRAID_GRAPH_STEP naming the
// step), on the store named by BRAID_GRAPH_STORE.
const stepEnv = "BRAID_GRAPH_STEP"

type stepOut struct {
	Status     multiagent.Status `json:"status"`
	Interrupts int               `json:"interrupts"`
	Runs       map[string]int    `json:"runs"`
	Deep       string            `json:"deep"`
}

func openStepStore(ctx context.Context, kind, dir string) (persistence.Store, error) {
	if kind == "postgres" {
		return postgres.New(ctx, postgres.Config{DSN: os.Getenv("BRAID_TEST_POSTGRES_DSN")})
	}
	return sqlite.Open(ctx, sqlite.Config{Dir: dir})
}

// TestGraphStepHelper is not a test: it is a step process's body.
func TestGraphStepHelper(t *testing.T) {
	step := os.Getenv(stepEnv)
	if step == "" {
		t.Skip("only a helper process")
	}
	ctx := context.Background()
	st, err := openStepStore(ctx, os.Getenv("BRAID_GRAPH_STORE"), os.Getenv("BRAID_GRAPH_DIR"))
	require.NoError(t, err)
	defer st.Close()
	r := newRecorder()
	g := build(t, threeLevels(r), graph.Config{ID: "top", Session: manager(t, st, os.Getenv("BRAID_GRAPH_SESSION"))})
	var res *multiagent.Result
	if step == "first" {
		res, err = g.Invoke(ctx, agent.Text("go"))
		require.NoError(t, err)
	} else {
		res = finish(t, g)
	}
	out := stepOut{Status: res.Status, Interrupts: len(res.Interrupts), Runs: r.runs}
	if mid := res.Node("mid"); mid != nil && mid.Multi != nil {
		if in := mid.Multi.Node("inner"); in != nil && in.Multi != nil {
			out.Deep = in.Multi.Node("deep").Text()
		}
	}
	require.NoError(t, g.Close(ctx))
	b, err := json.Marshal(out)
	require.NoError(t, err)
	fmt.Printf("STEP %s\n", b)
}

func runStep(t *testing.T, step, store, dir, session string) stepOut {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGraphStepHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stepEnv+"="+step, "BRAID_GRAPH_STORE="+store, "BRAID_GRAPH_DIR="+dir, "BRAID_GRAPH_SESSION="+session)
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", raw)
	var out stepOut
	for _, line := range strings.Split(string(raw), "\n") {
		if b, ok := strings.CutPrefix(line, "STEP "); ok {
			require.NoError(t, json.Unmarshal([]byte(b), &out))
			return out
		}
	}
	t.Fatalf("step %s printed no result:\n%s", step, raw)
	return out
}

// SPEC M10, M11, S2, S3: a three-level nested graph interrupted in one OS
// process is resumed and finished by another, from SQLite and from
// PostgreSQL: the answers reach the deep agent and the nested gate, and
// nothing that ran in the first process runs again.
func TestGraphProcess_NestedTreeResumesInAFreshProcess(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			if store == "postgres" {
				persistencetest.PostgresDSN(t)
			}
			dir := t.TempDir()
			session := fmt.Sprintf("nested-%d", time.Now().UnixNano())
			first := runStep(t, "first", store, dir, session)
			require.Equal(t, multiagent.StatusInterrupted, first.Status)
			assert.Equal(t, 2, first.Interrupts)
			assert.Equal(t, 1, first.Runs["model:before"])

			second := runStep(t, "resume", store, dir, session)
			require.Equal(t, multiagent.StatusCompleted, second.Status)
			assert.Zero(t, second.Runs["model:before"], "completed in the first process")
			assert.Equal(t, 1, second.Runs["tool:deep"], "the deep agent resumed and ran its tool once")
			assert.Equal(t, 1, second.Runs["model:side"])
			assert.Equal(t, 1, second.Runs["model:after"])
			assert.Equal(t, "deep done: answer y", second.Deep)
		})
	}
}
