package postgres

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/braidhq/braid/persistence"
)

// dials keeps the network connections a store's pool has open: its
// connections to the server and those of its cancel requests. Closing the
// pool waits for each connection's end, which on a server that stopped
// answering means pgx's own waits (15 s for a cancel request and for the
// reply to it); cut closes them all, and refuses new ones, so that the
// pool closes at once.
type dials struct {
	mu   sync.Mutex
	cut  bool
	open map[*dialed]struct{}
}

func newDials() *dials {
	return &dials{open: map[*dialed]struct{}{}}
}

// wrap returns dial, recording the connections it makes; once cut, it
// makes none and fails with persistence.ErrClosed.
func (d *dials) wrap(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		cut := d.cut
		d.mu.Unlock()
		if cut {
			return nil, persistence.ErrClosed
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.cut {
			_ = c.Close()
			return nil, persistence.ErrClosed
		}
		w := &dialed{Conn: c, d: d}
		d.open[w] = struct{}{}
		return w, nil
	}
}

// cutAll closes every connection still open and refuses new ones.
func (d *dials) cutAll() {
	d.mu.Lock()
	d.cut = true
	open := d.open
	d.open = map[*dialed]struct{}{}
	d.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

// dialed is a connection that dials keeps until it is closed.
type dialed struct {
	net.Conn
	d    *dials
	once sync.Once
}

func (c *dialed) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.d.mu.Lock()
		delete(c.d.open, c)
		c.d.mu.Unlock()
	})
	return err
}

// closePool closes pool, whose connections d dialed, waiting at most wait
// for it to close in order (each connection told to end, the statements
// of calls whose context ended cancelled, calls under way run to their
// end): after wait, it cuts every connection, which fails the calls still
// under way, and returns once the pool is closed, which is then at once.
func closePool(pool *pgxpool.Pool, d *dials, wait time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pool.Close()
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	d.cutAll()
	<-done
}
