package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/braidhq/braid/hook"
	"github.com/braidhq/braid/interrupt"
	"github.com/braidhq/braid/model"
	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/tool"
)

// core is what an agent is made of and never changes after New: its
// config, tools and hooks. The actor and its jobs share it.
type core struct {
	cfg   Config
	tools tools
	hooks *hook.Registry
	// now is the clock of at-most-once start marks: time.Now, or a
	// test's (export_test.go).
	now func() time.Time
	// activation ends the context of an activation under way (its load
	// and AgentInitialized hooks), which no message can reach, when the
	// agent's Close begins.
	activation activationCancel
	// kept carries the agent's own answers (data.answered) over a
	// passivation, to the next activation of the same Agent.
	kept keptAnswers
}

// keptAnswers holds the own answers of a passivated agent with the
// writer they were valid for. Safe for concurrent use.
type keptAnswers struct {
	mu       sync.Mutex
	sess     *persistence.AgentSession
	answered map[string]bool
}

// keep records answered, valid while the stored agent is the one sess
// last read or saved.
func (k *keptAnswers) keep(sess *persistence.AgentSession, answered map[string]bool) {
	k.mu.Lock()
	k.sess, k.answered = sess, answered
	k.mu.Unlock()
}

// take returns the kept answers if the stored agent, which fresh was
// opened on just now, is still the one they were valid for (no other
// writer saved since), and forgets them either way.
func (k *keptAnswers) take(fresh *persistence.AgentSession) map[string]bool {
	k.mu.Lock()
	sess, answered := k.sess, k.answered
	k.sess, k.answered = nil, nil
	k.mu.Unlock()
	if sess == nil || fresh == nil || sess.Behind(fresh.Owner) != nil {
		return nil
	}
	return answered
}

// activationCancel hands the agent's Close the cancel function of the
// activation under way, if any. Safe for concurrent use.
type activationCancel struct {
	mu     sync.Mutex
	closed bool // the agent's Close has begun
	cancel context.CancelCauseFunc
}

// begin makes cancel the running activation's; if Close has begun, it
// calls it at once.
func (a *activationCancel) begin(cancel context.CancelCauseFunc) {
	a.mu.Lock()
	closed := a.closed
	if !closed {
		a.cancel = cancel
	}
	a.mu.Unlock()
	if closed {
		cancel(ErrClosed)
	}
}

// end forgets the running activation's cancel function.
func (a *activationCancel) end() {
	a.mu.Lock()
	a.cancel = nil
	a.mu.Unlock()
}

// close records that Close has begun and ends the activation under way.
func (a *activationCancel) close() {
	a.mu.Lock()
	a.closed = true
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel(ErrClosed)
	}
}

// tools is an agent's tool list with its specs, looked up by name: a scan
// for the few tools most agents have, an index above that (a map per
// agent costs more memory than the agent's whole interrupt state).
type tools struct {
	list   []tool.Tool
	specs  []model.ToolSpec
	byName map[string]int // only above toolScan tools
}

const toolScan = 16

func newTools(list []tool.Tool) tools {
	ts := tools{list: list, specs: make([]model.ToolSpec, len(list))}
	for i, t := range list {
		ts.specs[i] = t.Spec()
	}
	if len(list) > toolScan {
		ts.byName = make(map[string]int, len(list))
		for i, s := range ts.specs {
			ts.byName[s.Name] = i
		}
	}
	return ts
}

// get returns the tool named name. Names are unique (Config.Validate).
func (ts *tools) get(name string) (tool.Tool, bool) {
	if ts.byName != nil {
		i, ok := ts.byName[name]
		if !ok {
			return nil, false
		}
		return ts.list[i], true
	}
	for i := range ts.specs {
		if ts.specs[i].Name == name {
			return ts.list[i], true
		}
	}
	return nil, false
}

// data is an agent's session (SPEC R1): history, key/value state,
// interrupt state and pending work. The actor owns one, its committed
// state; a job works on a draft of it and hands the draft back.
type data struct {
	messages   []model.Message
	kv         *State
	interrupts *interrupt.State
	pending    *Pending
	// usage: the model usage of the latest invocation so far, saved with
	// every save (Snapshot.Usage).
	usage model.Usage
	// diverged: the stored history differs from this one from message
	// divergeAt on (a take-back whose save failed); the next save rewrites.
	diverged  bool
	divergeAt int
	// answered holds the interrupts this agent's own claimed resumes
	// answered, while its interrupt state is activated (see
	// job.answeredElsewhere). It is never changed in place: a job that
	// answers more replaces it. Data loaded from the store (an
	// activation, a job that lost a save to another writer) starts
	// without it: the answers stored there are another writer's.
	answered map[string]bool
}

// draft returns a copy a job may change, in one allocation with the
// states it points to. The history is append-only and shared: the copy's
// slice has no spare capacity, so an append never writes into the array
// the original sees.
func (d *data) draft() *data {
	b := &draftBox{}
	b.kv.copyFrom(d.kv)
	d.interrupts.CloneInto(&b.interrupts)
	b.d = data{
		messages:   d.messages[:len(d.messages):len(d.messages)],
		kv:         &b.kv,
		interrupts: &b.interrupts,
		pending:    d.pending.clone(),
		usage:      d.usage,
		diverged:   d.diverged,
		divergeAt:  d.divergeAt,
		answered:   d.answered,
	}
	return &b.d
}

// draftBox holds a draft and the states it starts with.
type draftBox struct {
	d          data
	kv         State
	interrupts interrupt.State
}

// snapshot returns the data as a Snapshot of agent id (copies).
func (d *data) snapshot(id string) *Snapshot {
	msgs := model.CloneMessages(d.messages)
	if msgs == nil {
		msgs = []model.Message{}
	}
	return &Snapshot{
		Version:    SnapshotVersion,
		AgentID:    id,
		Messages:   msgs,
		State:      d.kv.All(),
		Interrupts: d.interrupts.Clone(),
		Pending:    d.pending.clone(),
		Usage:      d.usage,
	}
}

// job is one unit of work of the agent actor (an invocation, a history
// reset, a direct tool call), run on a goroutine the actor starts. It
// works on its own draft of the session and reports every saved point to
// the actor (commit) and, at its end, hands the draft back.
type job struct {
	*core
	sess *persistence.AgentSession // nil without a session
	// commit gives the actor the state just saved; nil without a session.
	commit func(*data)
	// answering are the responses of the resume being run (the View's
	// Answering).
	answering []interrupt.Response
	run       runState // set when the actor starts it
	// home is the data the job started from (its draft): result hands it
	// back, filled with the job's state.
	home *data

	// The draft. Tools run concurrently; mu guards messages, pending and
	// usage for readers on their goroutines (views, saves).
	mu         sync.Mutex
	messages   []model.Message
	kv         *State
	interrupts *interrupt.State
	pending    *Pending
	usage      model.Usage
	diverged   bool
	divergeAt  int
	answered   map[string]bool // see data.answered

	hookMu sync.Mutex // serialises hooks fired from concurrent tools
}

func newJob(c *core, d *data, sess *persistence.AgentSession, commit func(*data)) *job {
	return &job{core: c, sess: sess, commit: commit, home: d, messages: d.messages, kv: d.kv, interrupts: d.interrupts, pending: d.pending, usage: d.usage, diverged: d.diverged, divergeAt: d.divergeAt, answered: d.answered}
}

// result returns the draft as the actor's new committed state. The job
// must not touch it afterwards. Only a job started on a draft has one.
func (a *job) result() *data {
	a.mu.Lock()
	defer a.mu.Unlock()
	*a.home = data{messages: a.messages, kv: a.kv, interrupts: a.interrupts, pending: a.pending, usage: a.usage, diverged: a.diverged, divergeAt: a.divergeAt, answered: a.ownAnswersLocked()}
	return a.home
}

// published returns a copy of the draft for the actor, made at a save
// point while the job goes on.
func (a *job) published() *data {
	a.mu.Lock()
	msgs := a.messages[:len(a.messages):len(a.messages)]
	p, u, own := a.pending.clone(), a.usage, a.ownAnswersLocked()
	a.mu.Unlock()
	kv := &State{}
	kv.replace(a.kv.All())
	return &data{messages: msgs, kv: kv, interrupts: a.interrupts.Clone(), pending: p, usage: u, diverged: a.diverged, divergeAt: a.divergeAt, answered: own}
}

// ownAnswersLocked is the answered set to hand on: none once the
// interrupt state is over (its ids may come again in a later cycle, as
// fresh interrupts). a.mu is held.
func (a *job) ownAnswersLocked() map[string]bool {
	if !a.interrupts.Activated() {
		return nil
	}
	return a.answered
}

// answeredOwn records the responses of a resume whose claim was saved as
// this agent's own answers.
func (a *job) answeredOwn(responses []interrupt.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	own := make(map[string]bool, len(a.answered)+len(responses))
	for id := range a.answered {
		own[id] = true
	}
	for _, r := range responses {
		own[r.ID] = true
	}
	a.answered = own
}

// answeredElsewhere refuses a resume of a run cut off after a claimed
// resume (its interrupt state activated, every interrupt answered, so it
// waits for no answer) that answers again an interrupt this agent did
// not answer itself: the claim is another writer's, which may be running
// the run still (the winner of two racing resumes, whose loser took the
// stored run, SPEC S4). Claiming it again would cut that writer off
// midway and run its tools again. The refusal is an *interrupt.IDError
// matching interrupt.ErrNotInterrupted; a run a crash cut off is carried
// on with the empty Input. A run that still waits for some answers is
// not cut off: there, an answer may be given again (SPEC I7).
func (a *job) answeredElsewhere(responses []interrupt.Response) error {
	if len(a.interrupts.Unanswered()) > 0 {
		return nil
	}
	a.mu.Lock()
	own := a.answered
	a.mu.Unlock()
	for _, r := range responses {
		if in, ok := a.interrupts.Get(r.ID); ok && in.Answered && !own[r.ID] {
			return &interrupt.IDError{ID: r.ID, Err: interrupt.ErrNotInterrupted}
		}
	}
	return nil
}

func (a *job) setPending(p *Pending) {
	a.mu.Lock()
	a.pending = p
	a.mu.Unlock()
}

func (a *job) pendingCopy() *Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending.clone()
}

func (a *job) history() []model.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.messages[:len(a.messages):len(a.messages)]
}

func (a *job) snapshot() *Snapshot {
	a.mu.Lock()
	d := &data{messages: a.messages, kv: a.kv, interrupts: a.interrupts, pending: a.pending, usage: a.usage}
	a.mu.Unlock()
	return d.snapshot(a.cfg.ID)
}

// view returns the read-only view hooks and tools get (SPEC R7).
func (a *job) view() *View { return &View{j: a} }

// decodeValues turns the JSON invocation values back into Go values.
func decodeValues(raw map[string]json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

// lookup is get without the flag: nil for an unknown name.
func (ts *tools) lookup(name string) tool.Tool {
	t, _ := ts.get(name)
	return t
}
