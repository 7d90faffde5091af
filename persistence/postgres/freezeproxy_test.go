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

// freezeProxy is a loopback TCP proxy to the tests' server that, once
// frozen, stops answering and closes nothing: it keeps what the client
// sends, holds back the server's replies, and takes new connections
// (cancel requests among them) without reading them. It is a server
// whose process was stopped (SIGSTOP) or whose host hangs, while the
// kernel still accepts connections and acknowledges what is sent; the
// test's end closes everything.
type freezeProxy struct {
	dsn  string
	held chan struct{} // gets a value when the client's bytes are held (frozen)

	mu       sync.Mutex
	frozen   bool
	freezeOn []byte // freeze on a client chunk that holds these bytes
	conns    []net.Conn
	done     chan struct{} // closed at the test's end
}

func newFreezeProxy(t *testing.T) *freezeProxy {
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
	p := &freezeProxy{dsn: u.String(), held: make(chan struct{}, 1), done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		close(p.done)
		for _, c := range p.conns {
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
			p.conns = append(p.conns, c)
			if p.frozen {
				p.mu.Unlock()
				p.hold()
				continue // read nothing, answer nothing
			}
			s, err := net.Dial("tcp", upstream)
			if err != nil {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.conns = append(p.conns, s)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.pump(s, c, true) }()
			go func() { defer wg.Done(); p.pump(c, s, false) }()
		}
	}()
	return p
}

// freeze stops answering, now.
func (p *freezeProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// freezeAt arms the proxy to freeze when the client sends the bytes b.
func (p *freezeProxy) freezeAt(b string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freezeOn = []byte(b)
}

// hold reports that the client's bytes are held.
func (p *freezeProxy) hold() {
	select {
	case p.held <- struct{}{}:
	default:
	}
}

// pump copies src to dst until either fails; once frozen, it holds what
// it read until the test's end.
func (p *freezeProxy) pump(dst, src net.Conn, fromClient bool) {
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
