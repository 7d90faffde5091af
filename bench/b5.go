package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/braidhq/braid/actors"
	"github.com/braidhq/braid/agent"
	"github.com/braidhq/braid/internal/benchcase"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/sqlite"
)

// b5 is peer scenario b5 (shared/peer-bench/strands-ts/bench/b5_memory.mjs):
// the memory that agents hold while they wait on an interrupt, and, Braid's
// own part, what a passivated agent holds and what bringing it back costs.

// b5Target is issue 10's bound on the heap of one live agent holding an
// open interrupt.
const b5Target = 4.0 // KiB

// b5ClosedTarget is what counts as "nothing" left per closed agent: its
// store row is on disk, not in the heap.
const b5ClosedTarget = 0.1 // KiB

// memSample is the process's memory after full collections.
type memSample struct {
	heap, stack uint64 // runtime.MemStats HeapAlloc, StackInuse
	goroutines  int
}

// sampleMem collects twice (the second collection frees what the first
// one's finalizers and sync.Pool victims let go) and returns to the OS what
// it can, then reads the heap: live objects only.
func sampleMem() memSample {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

// memRow is one b5 line: the memory per agent between two samples.
type memRow struct {
	scenario, mode string
	peerMode       string // the peer's b5 mode it compares with, if any
	agents         int
	heapKiB        float64 // per agent
	stackKiB       float64 // per agent
	goroutines     float64 // per agent
}

func perAgent(before, after memSample, n int, r memRow) memRow {
	r.agents = n
	r.heapKiB = float64(int64(after.heap)-int64(before.heap)) / 1024 / float64(n)
	r.stackKiB = float64(int64(after.stack)-int64(before.stack)) / 1024 / float64(n)
	r.goroutines = float64(after.goroutines-before.goroutines) / float64(n)
	return r
}

// liveMemory is the peer's b5 on Braid, mode idle (built, never invoked),
// interrupted (invoked once, holding its interrupt) or completed
// (interrupted and resumed): n agents without a session in one fresh
// actor system, kept alive, heap after full collections minus the heap
// after one warm-up agent.
func liveMemory(ctx context.Context, n int, mode string) (memRow, error) {
	row := memRow{scenario: "b5 live agents, no session", mode: mode, peerMode: mode}
	env, err := benchcase.NewEnv()
	if err != nil {
		return row, err
	}
	defer env.Close()
	if err := env.Fresh(ctx, benchcase.InterruptResume, benchcase.Approval()); err != nil {
		return row, fmt.Errorf("b5 warm-up: %w", err)
	}
	agents := make([]*agent.Agent, 0, n) // allocated before the baseline, as the handles are what is measured
	defer func() { closeAll(ctx, agents) }()
	before := sampleMem()
	for range n {
		a, err := env.NewAgent(benchcase.Approval())
		if err != nil {
			return row, err
		}
		agents = append(agents, a)
		switch mode {
		case "interrupted":
			err = benchcase.Interrupt(ctx, a)
		case "completed":
			err = benchcase.InterruptResume(ctx, a)
		}
		if err != nil {
			return row, err
		}
	}
	after := sampleMem()
	runtime.KeepAlive(agents)
	row = perAgent(before, after, n, row)
	if mode == "interrupted" {
		open, err := openInterrupts(ctx, agents)
		if err != nil {
			return row, err
		}
		if open != n {
			return row, fmt.Errorf("b5 %s: %d of %d agents hold an interrupt", mode, open, n)
		}
	}
	return row, nil
}

// openInterrupts counts the agents that wait on an interrupt.
func openInterrupts(ctx context.Context, agents []*agent.Agent) (int, error) {
	open := 0
	for _, a := range agents {
		s, err := a.Status(ctx)
		if err != nil {
			return 0, err
		}
		if s.Interrupted() && len(s.Interrupts) == 1 {
			open++
		}
	}
	return open, nil
}

func closeAll(ctx context.Context, agents []*agent.Agent) error {
	var errs []error
	for _, a := range agents {
		if a != nil {
			errs = append(errs, a.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// lifecycleWatch is an actors.Config.Observer: it counts the activations
// and passivations of b5's agents and signals each passivation on a
// channel, so the bench waits for them without sleeping.
type lifecycleWatch struct {
	activated, passivated atomic.Int64
	passivations          chan struct{}
}

const b5SessionPrefix = "b5-"

func newLifecycleWatch(capacity int) *lifecycleWatch {
	return &lifecycleWatch{passivations: make(chan struct{}, capacity)}
}

// observe runs on the registry's goroutine: it must not block, and the
// channel holds more passivations than the bench ever leaves unread.
func (w *lifecycleWatch) observe(id actors.Identity, l actors.Lifecycle) {
	if id.Kind != agent.KindAgent || !strings.HasPrefix(id.SessionID, b5SessionPrefix) {
		return
	}
	switch l {
	case actors.Activated:
		w.activated.Add(1)
	case actors.Passivated:
		w.passivated.Add(1)
		select {
		case w.passivations <- struct{}{}:
		default: // never: the channel is sized for every passivation of the run
		}
	}
}

// waitPassivated waits for n passivations, or for ctx to end.
func (w *lifecycleWatch) waitPassivated(ctx context.Context, n int) error {
	for i := range n {
		select {
		case <-w.passivations:
		case <-ctx.Done():
			return fmt.Errorf("b5: %d of %d agents passivated: %w", i, n, ctx.Err())
		}
	}
	return nil
}

// passiveFigures are the figures of b5's agents on a session store.
type passiveFigures struct {
	rows []memRow
	// activateNs is the mean time of the first Status on a passivated
	// interrupted agent (the call that activates it), liveNs of the next
	// Status on the same, live agent; best of the rounds.
	activateNs, liveNs float64
	rounds             int
	overlap            int64 // passivations during a timed loop (should be 0)
	// registryBytes is what the heap grew by while fillProcessRegistry
	// took the process registry to its ceiling, in registrySpawns actors.
	registryBytes  int64
	registrySpawns int
}

// sessionEnv builds b5's agents on sessions of one store, in one actor
// system whose observer is watch.
type sessionEnv struct {
	env   *benchcase.Env
	store persistence.Store
	watch *lifecycleWatch
	idle  time.Duration
}

func newSessionEnv(store persistence.Store, idle time.Duration, watchCap int) (*sessionEnv, error) {
	watch := newLifecycleWatch(watchCap)
	env, err := benchcase.NewEnvConfig(actors.Config{Observer: watch.observe})
	if err != nil {
		return nil, err
	}
	return &sessionEnv{env: env, store: store, watch: watch, idle: idle}, nil
}

func (e *sessionEnv) newAgent(sessionID string) (*agent.Agent, error) {
	sess, err := persistence.NewSessionManager(e.store, sessionID)
	if err != nil {
		return nil, err
	}
	return e.env.NewSessionAgent(sess, e.idle, benchcase.Approval())
}

// interrupted appends n new agents to agents, one new session each, each
// left holding its interrupt.
func (e *sessionEnv) interrupted(ctx context.Context, agents []*agent.Agent, n int, batch string) ([]*agent.Agent, error) {
	for i := range n {
		a, err := e.newAgent(fmt.Sprintf("%s%s-%d", b5SessionPrefix, batch, i))
		if err != nil {
			return agents, err
		}
		agents = append(agents, a)
		if err := benchcase.Interrupt(ctx, a); err != nil {
			return agents, err
		}
	}
	return agents, nil
}

// sessionMemory measures b5 on sessions of store (SQLite, no fsync), one
// session per agent, each agent interrupted:
//
//   - live: n agents that are never passivated, handles kept;
//   - passivated, handles kept: n agents passivated after idle;
//   - the cost of the Status that activates each of them again, against a
//     Status on the live agent, best of rounds;
//   - passivated, handles closed: the same after every Close;
//   - another n agents cycled the same way afterwards (interrupted,
//     passivated, closed): what each further agent adds for good in a
//     process that keeps running.
//
// Each part has its own actor system and baseline after a warm-up agent.
// idle must outlast one timed loop over the n agents: an agent activated
// early in the loop must not be passivated while later ones are timed (the
// figures report how many were).
func sessionMemory(ctx context.Context, n, rounds int, idle time.Duration) (passiveFigures, error) {
	var out passiveFigures
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "braid-b5-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, sqlite.Config{Dir: dir, NoFsync: true})
	if err != nil {
		return out, err
	}
	defer store.Close()
	row, err := sessionLive(ctx, store, n)
	if err != nil {
		return out, err
	}
	out.rows = append(out.rows, row)

	e, err := newSessionEnv(store, idle, 2*n*(rounds+2)+16)
	if err != nil {
		return out, err
	}
	defer e.env.Close()
	if err := warmPassivation(ctx, e); err != nil {
		return out, fmt.Errorf("b5 warm-up: %w", err)
	}
	agents := make([]*agent.Agent, 0, n) // allocated before the baseline, as the handles are what is measured
	defer func() { closeAll(ctx, agents) }()
	before := sampleMem()
	if agents, err = e.interrupted(ctx, agents, n, "passivated"); err != nil {
		return out, err
	}
	if err := allPassivated(ctx, e.watch, agents); err != nil {
		return out, err
	}
	kept := sampleMem()
	runtime.KeepAlive(agents)
	const scenario = "b5 sqlite session, interrupted"
	out.rows = append(out.rows, perAgent(before, kept, n, memRow{scenario: scenario, mode: "passivated, handles kept"}))

	out.rounds = max(rounds, 1)
	for round := range out.rounds {
		act, live, overlap, err := timeActivations(ctx, e.watch, agents)
		if err != nil {
			return out, err
		}
		out.overlap += overlap
		if round == 0 || act < out.activateNs {
			out.activateNs = act
		}
		if round == 0 || live < out.liveNs {
			out.liveNs = live
		}
		if err := allPassivated(ctx, e.watch, agents); err != nil {
			return out, err
		}
	}

	if err := closeAll(ctx, agents); err != nil {
		return out, err
	}
	clear(agents)
	closed := sampleMem()
	out.rows = append(out.rows, perAgent(before, closed, n, memRow{scenario: scenario, mode: "passivated, handles closed"}))

	if agents, err = e.interrupted(ctx, agents[:0], n, "again"); err != nil {
		return out, err
	}
	if err := allPassivated(ctx, e.watch, agents); err != nil {
		return out, err
	}
	if err := closeAll(ctx, agents); err != nil {
		return out, err
	}
	clear(agents)
	again := sampleMem()
	out.rows = append(out.rows, perAgent(closed, again, n, memRow{scenario: scenario, mode: "each further agent passivated and closed"}))

	out.registryBytes, out.registrySpawns = fillProcessRegistry(e.env.Sys.Actor())
	full := sampleMem()
	if agents, err = e.interrupted(ctx, agents[:0], n, "steady"); err != nil {
		return out, err
	}
	if err := allPassivated(ctx, e.watch, agents); err != nil {
		return out, err
	}
	if err := closeAll(ctx, agents); err != nil {
		return out, err
	}
	clear(agents)
	steady := sampleMem()
	out.rows = append(out.rows, perAgent(full, steady, n, memRow{scenario: scenario, mode: steadyMode}))
	return out, nil
}

// steadyMode is the b5 row of a process whose Proto.Actor process
// registry has reached its ceiling.
const steadyMode = "each further agent passivated and closed, process registry at its ceiling"

// fillProcessRegistry spawns and stops no-op actors on sys until its
// process registry stops growing, and returns what the heap grew by and
// how many actors it took. Proto.Actor keeps local PIDs in 1,024 × 32 Go
// maps; each map keeps the table its first key made it allocate, after
// that key is gone too. A process reaches this ceiling after about 10⁵
// activations of anything (agents, nodes, asks' reply processes), at
// which point it is a fixed cost of the process, not of any agent; the
// steady row measures the agents of such a process.
func fillProcessRegistry(sys *actor.ActorSystem) (grewBy int64, spawns int) {
	const batch, maxSpawns, flat = 20000, 600000, 32 << 10
	props := actor.PropsFromFunc(func(actor.Context) {})
	start := sampleMem()
	prev := start
	pids := make([]*actor.PID, 0, batch)
	for spawns < maxSpawns {
		pids = pids[:0]
		for range batch {
			pids = append(pids, sys.Root.Spawn(props))
		}
		for _, pid := range pids {
			_ = sys.Root.StopFuture(pid).Wait()
		}
		spawns += batch
		now := sampleMem()
		grew := int64(now.heap) - int64(prev.heap)
		prev = now
		if grew < flat {
			break
		}
	}
	return int64(prev.heap) - int64(start.heap), spawns
}

// sessionLive is the live row of sessionMemory: n interrupted agents on
// sessions, never passivated, in an actor system of their own.
func sessionLive(ctx context.Context, store persistence.Store, n int) (memRow, error) {
	row := memRow{scenario: "b5 sqlite session, interrupted", mode: "live (never passivated)"}
	e, err := newSessionEnv(store, 0, 16)
	if err != nil {
		return row, err
	}
	defer e.env.Close()
	warm, err := e.newAgent(b5SessionPrefix + "live-warm-up")
	if err == nil {
		err = benchcase.InterruptResume(ctx, warm)
		err = errors.Join(err, warm.Close(ctx))
	}
	if err != nil {
		return row, fmt.Errorf("b5 warm-up: %w", err)
	}
	agents := make([]*agent.Agent, 0, n)
	defer func() { closeAll(ctx, agents) }()
	before := sampleMem()
	agents, err = e.interrupted(ctx, agents, n, "live")
	if err != nil {
		return row, err
	}
	after := sampleMem()
	runtime.KeepAlive(agents)
	return perAgent(before, after, n, row), nil
}

// timeActivations calls Status twice on each passivated agent: the first
// call activates it (load, decode, AgentInitialized), the second finds it
// live. It returns the mean time of each call, and the passivations seen
// meanwhile (agents activated early passivated while later ones ran).
func timeActivations(ctx context.Context, watch *lifecycleWatch, agents []*agent.Agent) (actNs, liveNs float64, overlap int64, err error) {
	activated, passivated := watch.activated.Load(), watch.passivated.Load()
	var act, live time.Duration
	for _, a := range agents {
		t0 := time.Now()
		s, err := a.Status(ctx)
		t1 := time.Now()
		if err == nil {
			_, err = a.Status(ctx)
		}
		t2 := time.Now()
		if err != nil {
			return 0, 0, 0, err
		}
		if !s.Interrupted() || len(s.Interrupts) != 1 {
			return 0, 0, 0, fmt.Errorf("b5: an activated agent is %s with %d interrupts, want one open interrupt", s.State, len(s.Interrupts))
		}
		act += t1.Sub(t0)
		live += t2.Sub(t1)
	}
	n := len(agents)
	if got := watch.activated.Load() - activated; got != int64(n) {
		return 0, 0, 0, fmt.Errorf("b5: %d activations for %d first calls on passivated agents", got, n)
	}
	return float64(act) / float64(n), float64(live) / float64(n), watch.passivated.Load() - passivated, nil
}

// allPassivated waits until every agent has been passivated once more, and
// checks that none is live.
func allPassivated(ctx context.Context, watch *lifecycleWatch, agents []*agent.Agent) error {
	if err := watch.waitPassivated(ctx, len(agents)); err != nil {
		return err
	}
	for _, a := range agents {
		live, err := a.Binding().Live(ctx)
		if err != nil {
			return err
		}
		if live {
			return fmt.Errorf("b5: %s is live after %d passivations", a.Binding().Identity(), len(agents))
		}
	}
	return nil
}

// warmPassivation takes one agent through what the measured ones go
// through, so that the baseline holds what the first use of each path
// allocates for good: interrupted, passivated, activated, resumed, closed.
func warmPassivation(ctx context.Context, e *sessionEnv) error {
	a, err := e.newAgent(b5SessionPrefix + "warm-up")
	if err != nil {
		return err
	}
	defer a.Close(ctx)
	if err := benchcase.Interrupt(ctx, a); err != nil {
		return err
	}
	if err := e.watch.waitPassivated(ctx, 1); err != nil {
		return err
	}
	s, err := a.Status(ctx)
	if err != nil {
		return err
	}
	if len(s.Interrupts) != 1 {
		return fmt.Errorf("activated with %d interrupts, want 1", len(s.Interrupts))
	}
	res, err := a.Invoke(ctx, agent.Resume(interrupt.Respond(s.Interrupts[0].ID, "y")))
	if err != nil {
		return err
	}
	if res.StopReason != agent.StopEndTurn {
		return fmt.Errorf("resume: stop reason %s", res.StopReason)
	}
	return a.Close(ctx)
}

// b5Figures is everything b5 prints.
type b5Figures struct {
	live    []memRow
	passive passiveFigures
	agents  int
	idle    time.Duration
}

func runB5(ctx context.Context, n, rounds int, idle time.Duration) (b5Figures, error) {
	out := b5Figures{agents: n, idle: idle}
	for _, mode := range []string{"idle", "interrupted", "completed"} {
		r, err := liveMemory(ctx, n, mode)
		if err != nil {
			return out, err
		}
		out.live = append(out.live, r)
	}
	var err error
	out.passive, err = sessionMemory(ctx, n, rounds, idle)
	return out, err
}

func printB5(w io.Writer, f b5Figures, peer peerResults) {
	fmt.Fprintf(w, "\nb5 memory per agent (%d agents in one actor system; heap after two full GCs minus the heap after a warm-up agent; peer: V8 heapUsed)\n\n", f.agents)
	fmt.Fprintln(w, "| scenario | mode | heap KiB/agent | stack KiB/agent | goroutines/agent | Strands TS heap KiB/agent | Braid/peer |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	rows := append(append([]memRow{}, f.live...), f.passive.rows...)
	for _, r := range rows {
		peerCol, ratio := "–", "–"
		if p, ok := peer.b5Heap[r.peerMode]; ok && r.peerMode != "" {
			peerCol = fmt.Sprintf("%.1f", p)
			if p > 0 {
				ratio = fmt.Sprintf("%.2f×", r.heapKiB/p)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n", r.scenario, r.mode, r.heapKiB, r.stackKiB, r.goroutines, peerCol, ratio)
	}
	for _, r := range f.live {
		if r.mode != "interrupted" {
			continue
		}
		verdict := "met"
		if r.heapKiB >= b5Target {
			verdict = "NOT met"
		}
		peerNote := "the peer's b5 is not in -peer's results (its README: about 11.5 KiB)"
		if p, ok := peer.b5Heap["interrupted"]; ok {
			peerNote = fmt.Sprintf("Strands TS %.1f KiB", p)
		}
		fmt.Fprintf(w, "\nb5 target (issue 10), heap per live agent holding an interrupt under %.0f KiB: %.2f KiB, %s; %s\n", b5Target, r.heapKiB, verdict, peerNote)
	}
	var closed, steady *memRow
	for i, r := range f.passive.rows {
		switch r.mode {
		case "passivated, handles closed":
			closed = &f.passive.rows[i]
		case steadyMode:
			steady = &f.passive.rows[i]
		}
	}
	if closed != nil && steady != nil {
		verdict := "met"
		if steady.heapKiB >= b5ClosedTarget {
			verdict = "NOT met"
		}
		fmt.Fprintf(w, "b5 target (issue 10), nothing but the store row once a passivated agent is closed (under %.1f KiB heap), in a process whose actor registry is at its ceiling: %.2f KiB per agent, %s\n",
			b5ClosedTarget, steady.heapKiB, verdict)
		fmt.Fprintf(w, "  before the ceiling each closed agent seems to keep %.2f KiB: what Proto.Actor's process registry (1,024 × 32 Go maps, which keep their tables once grown) and spawn path grow to; the heap grew by %.1f MiB over %d further no-op actors, then stopped: a fixed cost of a process, reached after about 10⁵ activations of anything\n",
			closed.heapKiB, float64(f.passive.registryBytes)/(1<<20), f.passive.registrySpawns)
	}
	p := f.passive
	fmt.Fprintf(w, "\nactivation of a passivated interrupted agent (sqlite, no fsync, %d agents, best of %d): first Status %.1f µs (load + decode + AgentInitialized); Status on the live agent %.1f µs; the activation's own cost %.1f µs\n",
		f.agents, p.rounds, p.activateNs/1e3, p.liveNs/1e3, (p.activateNs-p.liveNs)/1e3)
	if p.overlap > 0 {
		fmt.Fprintf(w, "  (%d passivations ran during the timed loops: raise -passivate-after above one loop's time)\n", p.overlap)
	}
}
