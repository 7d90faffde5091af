package postgres_test

import (
	"bytes"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/braidhq/braid/persistence/persistencetest"
)

// silentProxy is a loopback TCP proxy to the tests' server that can stop
// answering, as a server does whose process was stopped (SIGSTOP), whose
// host hangs or whose network drops packets, while the kernel still
// accepts connections and acknowledges what is sent:
//   - frozen (freeze, freezeAt), it keeps what the client sends on the
//     connections it forwards, holds back the server's replies and closes
//     nothing;
//   - stalled (stall), it cuts the connections it forwards;
//
// and either way it takes new connections (cancel requests among them)
// without ever reading them, until resume (after stall). The test's end
// closes everything.
type silentProxy struct {
	dsn  string
	held chan struct{} // gets a value when a client's bytes are held

	mu       sync.Mutex
	frozen   bool
	stalled  bool
	freezeOn []byte     // freeze on a client chunk that holds these bytes
	forwards []net.Conn // both ends of each forwarded connection
	waiting  []net.Conn // taken while silent, never read
	done     chan struct{}
}

func newSilentProxy(t *testing.T) *silentProxy {
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
	p := &silentProxy{dsn: u.String(), held: make(chan struct{}, 1), done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		close(p.done)
		for _, c := range append(p.forwards, p.waiting...) {
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
			if p.frozen || p.stalled {
				p.waiting = append(p.waiting, c) // read nothing, answer nothing
				p.mu.Unlock()
				p.hold()
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
			go func() { defer wg.Done(); p.pump(s, c, true) }()
			go func() { defer wg.Done(); p.pump(c, s, false) }()
		}
	}()
	return p
}

// freeze stops answering, now.
func (p *silentProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// freezeAt arms the proxy to freeze when the client sends the bytes b.
func (p *silentProxy) freezeAt(b string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freezeOn = []byte(b)
}

// stall cuts the forwarded connections and leaves new ones unanswered.
func (p *silentProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
	for _, c := range p.forwards {
		_ = c.Close()
	}
	p.forwards = nil
}

// resume forwards again after stall, and ends the connections taken
// while stalled.
func (p *silentProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	for _, c := range p.waiting {
		_ = c.Close()
	}
	p.waiting = nil
}

// hold reports that a client's bytes are held.
func (p *silentProxy) hold() {
	select {
	case p.held <- struct{}{}:
	default:
	}
}

// pump copies src to dst until either fails; once frozen, it holds what
// it read until the test's end.
func (p *silentProxy) pump(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if fromClient && p.freezeOn != nil && bytes.Contains(buf[:n], p.freezeOn) {
				p.frozen = true
			}
			frozen := p.frozen
			p.mu.Unlock()
			if frozen {
				if fromClient {
					p.hold()
				}
				<-p.done
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}
