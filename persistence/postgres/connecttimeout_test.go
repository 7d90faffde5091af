package postgres_test

import (
	"encoding/json"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence"
	"github.com/braidhq/braid/persistence/persistencetest"
	"github.com/braidhq/braid/persistence/postgres"
)

// stallProxy is a loopback TCP proxy to the tests' server that, once
// stalled, cuts the connections it forwards and takes new ones without
// ever answering them: a server that stopped answering (a network
// partition that drops packets, a host that hangs), where a connect waits
// for an answer that never comes.
type stallProxy struct {
	dsn      string
	mu       sync.Mutex
	stalled  bool
	forwards []net.Conn
	held     []net.Conn // taken while stalled
}

func newStallProxy(t *testing.T) *stallProxy {
	t.Helper()
	dsn := persistencetest.PostgresDSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	upstream := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &url.URL{Scheme: "postgres", Host: ln.Addr().String(), Path: "/" + cfg.Database, User: url.User(cfg.User),
		RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	}
	p := &stallProxy{dsn: u.String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range append(p.held, p.forwards...) {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.stalled {
				p.held = append(p.held, c) // read nothing, answer nothing
				p.mu.Unlock()
				continue
			}
			s, err := net.Dial("tcp", upstream)
			if err != nil {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.forwards = append(p.forwards, c, s)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
	return p
}

// stall cuts the forwarded connections and leaves new ones unanswered.
func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
	for _, c := range p.forwards {
		_ = c.Close()
	}
	p.forwards = nil
}

// resume forwards again, and ends the connections taken while stalled.
func (p *stallProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	for _, c := range p.held {
		_ = c.Close()
	}
	p.held = nil
}

// SPEC S3: Config.ConnectTimeout bounds every connect of the store's
// pool, not only New's: a call, even one whose context never ends, that
// needs a new connection to a server that does not answer fails once
// the timeout has passed, rather than waiting as long as the network
// lets it.
func TestStore_ConnectTimeoutBoundsTheConnectsOfLaterCalls(t *testing.T) {
	p := newStallProxy(t)
	// Two connections: the pool closes the cut one in the background,
	// which holds its place for a while (it asks the stalled server to
	// cancel what it ran), and the load's connect takes the other.
	s, err := postgres.New(bg, postgres.Config{DSN: p.dsn, MaxConns: 2, ConnectTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	k := persistence.Key{SessionID: "stall-" + uuid.NewString(), Kind: persistence.KindAgent, ID: "a"}
	_, err = s.Save(bg, persistence.SaveOptions{}, persistence.Change{Key: k, Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)

	p.stall()
	done := make(chan error, 1)
	go func() {
		_, err := s.Load(bg, k)
		done <- err
	}()
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(30 * time.Second):
		p.resume()
		t.Fatal("a load that needs a new connection to a server that does not answer still waits, 100 times ConnectTimeout on")
	}
	// The server answers again: the store goes on (and its Close does
	// not wait on a stalled connection).
	p.resume()
	_, err = s.Load(bg, k)
	assert.NoError(t, err)
}
