package swarm_test

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
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/multiagent"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
	"github.com/braidhq/braid/persistence/sqlite"
	"github.com/braidhq/braid/swarm"
)

// The test below runs each step of researchSwarm in an OS process of its
// own (this test binary again, BRAID_SWARM_STEP naming the step).
const stepEnv = "BRAID_SWARM_STEP"

type stepOut struct {
	Status     multiagent.Status `json:"status"`
	Interrupts []string          `json:"interrupts"`
	Runs       map[string]int    `json:"runs"`
	Prompts    []string          `json:"prompts"`
}

// TestSwarmStepHelper is not a test: it is a step process's body.
func TestSwarmStepHelper(t *testing.T) {
	step := os.Getenv(stepEnv)
	if step == "" {
		t.Skip("only a helper process")
	}
	ctx := context.Background()
	var st persistence.Store
	var err error
	if os.Getenv("BRAID_SWARM_STORE") == "postgres" {
		st, err = postgres.New(ctx, postgres.Config{DSN: os.Getenv("BRAID_TEST_POSTGRES_DSN")})
	} else {
		st, err = sqlite.Open(ctx, sqlite.Config{Dir: os.Getenv("BRAID_SWARM_DIR")})
	}
	require.NoError(t, err)
	defer st.Close()
	r := newRecorder()
	s := build(t, researchSwarm(r), swarm.Config{Session: manager(t, st, os.Getenv("BRAID_SWARM_SESSION"))})
	var res *multiagent.Result
	if step == "first" {
		res, err = s.Invoke(ctx, agent.Text("find the answer"))
	} else {
		var now *multiagent.Result
		now, err = s.Status(ctx)
		require.NoError(t, err)
		var rs []interrupt.Response
		for _, in := range now.Interrupts {
			rs = append(rs, interrupt.Respond(in.ID, "42"))
		}
		res, err = s.Invoke(ctx, agent.Resume(rs...))
	}
	require.NoError(t, err)
	out := stepOut{Status: res.Status, Runs: r.runs, Prompts: r.prompts("c")}
	for _, in := range res.Interrupts {
		out.Interrupts = append(out.Interrupts, in.ID)
	}
	require.NoError(t, s.Close(ctx))
	b, err := json.Marshal(out)
	require.NoError(t, err)
	fmt.Printf("STEP %s\n", b)
}

func runStep(t *testing.T, step, store, dir, session string) stepOut {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSwarmStepHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stepEnv+"="+step, "BRAID_SWARM_STORE="+store, "BRAID_SWARM_DIR="+dir, "BRAID_SWARM_SESSION="+session)
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", raw)
	for _, line := range strings.Split(string(raw), "\n") {
		if b, ok := strings.CutPrefix(line, "STEP "); ok {
			var out stepOut
			require.NoError(t, json.Unmarshal([]byte(b), &out))
			return out
		}
	}
	t.Fatalf("step %s printed no result:\n%s", step, raw)
	return stepOut{}
}

// SPEC M10, M9, S2, S3: a swarm interrupted in one OS process is resumed
// and finished by another, from SQLite and from PostgreSQL: the answer
// reaches the interrupted agent, nothing that ran before runs again, and
// the swarm's own state (history, shared context) reaches the next node.
func TestSwarmProcess_ResumesInAFreshProcess(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			if store == "postgres" {
				persistencetest.PostgresDSN(t) // skips, or fails under CI, without a server
			}
			dir := t.TempDir()
			session := fmt.Sprintf("swarm-%d", time.Now().UnixNano())
			first := runStep(t, "first", store, dir, session)
			require.Equal(t, multiagent.StatusInterrupted, first.Status)
			require.Len(t, first.Interrupts, 1)

			second := runStep(t, "resume", store, dir, session)
			require.Equal(t, multiagent.StatusCompleted, second.Status)
			assert.Zero(t, second.Runs["model:a"], "a completed in the first process")
			assert.Equal(t, 1, second.Runs["tool:b"])
			assert.Equal(t, 1, second.Runs["model:c"])
			require.Len(t, second.Prompts, 1)
			assert.Contains(t, second.Prompts[0], `- a: {"k":"v"}`, "the shared context survived the process")
		})
	}
}
