package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/internal/sqlstore"
)

// SPEC S4: saves committed in one group are each in a savepoint: a stale
// save is rolled back alone, the others of its group commit, and a save
// whose caller gave up before the group started is not run.
func TestGroup_StaleSaveRollsBackAlone(t *testing.T) {
	ctx := context.Background()
	s, w, err := open(ctx, Config{Dir: t.TempDir()}) // the test holds the writer
	require.NoError(t, err)
	defer func() {
		s.token <- w // gives it back, for Close
		s.Close()
	}()
	save := func(c persistence.Change) error {
		_, err := sqlstore.Apply(ctx, querier{s: s, db: w.conn, stmts: w.stmts}, time.Now(), []persistence.Change{c})
		return err
	}
	k := func(id string) persistence.Key {
		return persistence.Key{SessionID: "group", Kind: persistence.KindAgent, ID: id}
	}
	require.NoError(t, save(persistence.Change{Key: k("a"), Data: json.RawMessage(`{"v":1}`)}))

	gone, cancel := context.WithCancel(ctx)
	cancel()
	saves := []struct {
		ctx    context.Context
		change persistence.Change
	}{
		{ctx, persistence.Change{Key: k("a"), Base: 1, Data: json.RawMessage(`{"v":2}`)}},
		{ctx, persistence.Change{Key: k("a"), Base: 1, Data: json.RawMessage(`{"v":"stale"}`)}},
		{ctx, persistence.Change{Key: k("b"), Data: json.RawMessage(`{"v":1}`)}},
		{gone, persistence.Change{Key: k("c"), Data: json.RawMessage(`{"v":1}`)}},
		{ctx, persistence.Change{Key: k("a"), Base: 2, Data: json.RawMessage(`{"v":3}`)}},
	}
	var group []*request
	for _, sv := range saves {
		c := sv.change
		group = append(group, &request{ctx: sv.ctx, durable: c.Key.ID == "b", reply: make(chan error, 1),
			apply: func(ctx context.Context, q sqlstore.Querier) error {
				_, err := sqlstore.Apply(ctx, q, time.Now(), []persistence.Change{c})
				return err
			}})
	}
	s.reply(s.commit(w, group))

	assert.NoError(t, <-group[0].reply)
	assert.ErrorIs(t, <-group[1].reply, persistence.ErrConflict)
	assert.NoError(t, <-group[2].reply)
	assert.ErrorIs(t, <-group[3].reply, context.Canceled)
	assert.NoError(t, <-group[4].reply)
	r, err := s.Load(ctx, k("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Version)
	assert.Equal(t, `{"v":3}`, string(r.Data))
	_, err = s.Load(ctx, k("b"))
	assert.NoError(t, err)
	_, err = s.Load(ctx, k("c"))
	assert.ErrorIs(t, err, persistence.ErrNotFound)
}

// cancelAfter is a context that ends at its n-th Done call: it ends a save
// at every step of its way through the store in turn.
type cancelAfter struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func (c *cancelAfter) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *cancelAfter) Value(any) any               { return nil }
func (c *cancelAfter) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.ch)
	}
	return c.ch
}
func (c *cancelAfter) Err() error {
	select {
	case <-c.ch:
		return context.Canceled
	default:
		return nil
	}
}

// A save whose context ends at any step of its way through the store
// leaves no transaction open: the next save commits, and another store
// (another process) opens the folder.
func TestSave_ContextEndingAnywhereLeavesTheStoreUsable(t *testing.T) {
	ctx := context.Background()
	for n := 1; n < 40; n++ {
		dir := t.TempDir()
		s, err := Open(ctx, Config{Dir: dir})
		require.NoError(t, err)
		k := persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}
		_, _ = s.Save(&cancelAfter{n: n, ch: make(chan struct{})}, persistence.SaveOptions{},
			persistence.Change{Key: k, Data: json.RawMessage(`{}`), Messages: []json.RawMessage{json.RawMessage(`{"a":1}`)}})
		_, err = s.Save(ctx, persistence.SaveOptions{}, persistence.Change{Key: persistence.Key{SessionID: "s2", Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{}`)})
		require.NoError(t, err, "context ended at step %d", n)
		other, err := Open(ctx, Config{Dir: dir, BusyTimeout: time.Second})
		require.NoError(t, err, "context ended at step %d: another store cannot open the folder", n)
		require.NoError(t, other.Close())
		require.NoError(t, s.Close())
	}
}

// Requests abandoned in the queue (their callers' contexts ended) never
// keep a later save on an idle store waiting: a caller that cannot queue
// commits (skips) them.
func TestSave_FullQueueOfAbandonedRequestsDoesNotBlock(t *testing.T) {
	s, err := Open(context.Background(), Config{Dir: t.TempDir(), MaxGroup: 1}) // a queue of 4
	require.NoError(t, err)
	defer s.Close()
	ch := persistence.Change{Key: persistence.Key{SessionID: "s", Kind: persistence.KindAgent, ID: "a"}, Data: json.RawMessage(`{}`)}
	for range cap(s.queue) { // abandoned right after the queueing
		s.queue <- &request{ctx: &cancelAfter{n: 1, ch: make(chan struct{})}, reply: make(chan error, 1),
			apply: func(context.Context, sqlstore.Querier) error { return nil }}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Save(ctx, persistence.SaveOptions{}, ch)
	require.NoError(t, err)
}

// signalCtx is a background context that closes signal at its n-th Done
// call (a save's second is its wait after queueing), or, n 0, at its first
// Err call (a group checking it before it commits); cancel ends it.
type signalCtx struct {
	context.Context
	mu     sync.Mutex
	n      int
	once   sync.Once
	signal chan struct{}
}

func newSignalCtx(n int) (*signalCtx, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	return &signalCtx{Context: ctx, n: n, signal: make(chan struct{})}, cancel
}

func (c *signalCtx) Done() <-chan struct{} {
	c.mu.Lock()
	if c.n--; c.n == 0 {
		c.once.Do(func() { close(c.signal) })
	}
	c.mu.Unlock()
	return c.Context.Done()
}

func (c *signalCtx) Err() error {
	c.mu.Lock()
	if c.n <= 0 {
		c.once.Do(func() { close(c.signal) })
	}
	c.mu.Unlock()
	return c.Context.Err()
}

// SPEC S4: a save in a group whose caller's context ends while the group
// waits for the write lock (another process holds it) reports the
// context's error, and is not committed when the group gets the lock:
// never "failed" for a save that is stored, which its writer would
// conflict with at its next save.
func TestGroup_ASaveGivenUpBeforeItsGroupBeganIsNotCommitted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, w, err := open(ctx, Config{Dir: dir}) // the test holds the writer
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "group", Kind: persistence.KindAgent, ID: "given-up"}
	rctx, cancel := newSignalCtx(2)
	defer cancel()
	saved := make(chan error, 1)
	go func() {
		_, err := s.Save(rctx, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{}`), Incarnation: 1})
		saved <- err
	}()
	<-rctx.signal // queued
	other, _ := newSignalCtx(0)
	s.queue <- &request{ctx: other, reply: make(chan error, 1),
		apply: func(context.Context, sqlstore.Querier) error { return nil }}

	db, err := RawDB(dir)
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil) // another process's write lock
	require.NoError(t, err)
	defer tx.Rollback()
	led := make(chan struct{})
	go func() { s.lead(w); close(led) }()
	<-other.signal // both taken, the save checked: the group waits for the lock
	cancel()
	assert.ErrorIs(t, <-saved, context.Canceled)
	require.NoError(t, tx.Rollback())
	<-led
	_, err = s.Load(ctx, k)
	assert.ErrorIs(t, err, persistence.ErrNotFound, "the save reported its context's end, and was committed")
}

// SPEC S4: a save whose group has begun its transaction is reported as
// the group's outcome says, even when its caller's context ends before
// the reply: committed, it returns nil (and a durable one waits for its
// fsync), never the context's error. Repeated, as the caller's wake-up
// and the group's reply race.
func TestGroup_ASaveInAGroupThatBeganReportsItsOutcomeWhenItsContextEnds(t *testing.T) {
	ctx := context.Background()
	for _, durable := range []bool{false, true} {
		s, w, err := open(ctx, Config{Dir: t.TempDir()}) // the test holds the writer
		require.NoError(t, err)
		g := gate(s)
		for i := range 20 {
			k := persistence.Key{SessionID: "group", Kind: persistence.KindAgent, ID: fmt.Sprintf("%v-%d", durable, i)}
			rctx, cancel := newSignalCtx(2)
			saved := make(chan error, 1)
			go func() {
				_, err := s.Save(rctx, persistence.SaveOptions{Durable: durable}, persistence.Change{Key: k, Data: json.RawMessage(`{}`), Incarnation: 1})
				saved <- err
			}()
			<-rctx.signal // queued
			entered, release := make(chan struct{}), make(chan struct{})
			s.queue <- &request{ctx: ctx, reply: make(chan error, 1),
				apply: func(context.Context, sqlstore.Querier) error { close(entered); <-release; return nil }}
			led := make(chan struct{})
			go func() { s.lead(w); close(led) }()
			<-entered // the group's transaction runs
			cancel()
			close(release)
			if durable {
				<-g.started // the group committed: its fsync
				g.release <- nil
			}
			assert.NoError(t, <-saved, "durable %v, save %d: committed", durable, i)
			<-led
			w = <-s.token // for the next round
			_, err := s.Load(ctx, k)
			require.NoError(t, err)
		}
		s.token <- w
		s.wal.sync = (*os.File).Sync
		require.NoError(t, s.Close())
	}
}
