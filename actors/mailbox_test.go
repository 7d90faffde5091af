package actors_test

import (
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type seqMsg struct{ from, n int }

type panicMsg struct{}

type doneMsg struct{ reply chan map[int][]int }

// recorder keeps what each sender sent, in the order it got it.
type recorder struct{ got map[int][]int }

func (r *recorder) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *seqMsg:
		r.got[m.from] = append(r.got[m.from], m.n)
	case *panicMsg:
		panic("boom")
	case *doneMsg:
		m.reply <- r.got
	}
}

// SPEC R1: an actor's mailbox delivers every message once, each sender's
// in the order sent, however many goroutines send at once; a panic in one
// message does not lose the ones queued behind it (the actor is restarted
// by its supervisor here, state kept by the producer's recorder).
func TestMailbox_EveryMessageOnceInEachSendersOrder(t *testing.T) {
	sys := newSystem(t)
	rec := &recorder{got: map[int][]int{}}
	pid, err := sys.Spawn(func() actor.Actor { return rec })
	require.NoError(t, err)
	const senders, each = 8, 2000
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				if s == 0 && n == each/2 {
					sys.Root().Send(pid, &panicMsg{})
				}
				sys.Root().Send(pid, &seqMsg{from: s, n: n})
			}
		}()
	}
	wg.Wait()
	reply := make(chan map[int][]int, 1)
	sys.Root().Send(pid, &doneMsg{reply: reply})
	got := <-reply
	require.Len(t, got, senders)
	for s := range senders {
		require.Len(t, got[s], each, "sender %d", s)
		for n, v := range got[s] {
			if v != n {
				assert.Failf(t, "out of order", "sender %d: message %d is %d", s, n, v)
				break
			}
		}
	}
}
