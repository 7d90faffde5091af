package agent_test

import (
	"context"
	"testing"

	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/internal/benchcase"
)

// The scenarios of the Strands TypeScript peer benchmark; see package
// internal/benchcase. `go run ./bench` prints them as a table with the
// actor share.

func benchEnv(b *testing.B) *benchcase.Env {
	env, err := benchcase.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Close() })
	return env
}

func runScenario(b *testing.B, op func(context.Context, *agent.Agent) error, hooks ...hook.Provider) {
	ctx := context.Background()
	b.Run("fresh", func(b *testing.B) {
		env := benchEnv(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := env.Fresh(ctx, op, hooks...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		env := benchEnv(b)
		a, err := env.NewAgent(hooks...)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			if err := benchcase.Reused(ctx, a, op); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInvokeOneTool is peer scenario b1.
func BenchmarkInvokeOneTool(b *testing.B) { runScenario(b, benchcase.InvokeOneTool) }

// BenchmarkInterruptResume is peer scenario b2: one interrupt + resume cycle
// on BeforeToolCallEvent.
func BenchmarkInterruptResume(b *testing.B) {
	runScenario(b, benchcase.InterruptResume, benchcase.Approval())
}

// BenchmarkActorHop is the actor messaging of one invocation alone.
func BenchmarkActorHop(b *testing.B) {
	env := benchEnv(b)
	a, err := env.NewAgent()
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := benchcase.Hop(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
