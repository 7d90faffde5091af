package postgres_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// cutProxy is a loopback TCP proxy to the tests' PostgreSQL server that
// reads the server's replies message by message (a type byte and an int32
// length) and, once armed, loses the reply that completes one save: it
// closes both sides of that connection instead of forwarding it. The
// server has committed the save by then (it sends the reply after the
// commit), and the client never hears so: the outcome of a commit whose
// connection dies right after the server sent its reply.
type cutProxy struct {
	ln       net.Listener
	upstream string
	dsn      string // the tests' DSN, pointed at the proxy

	mu    sync.Mutex
	match func(reply) bool // armed: the reply to lose (nil: none)
	skip  int              // matching replies to forward before the one lost
	cut   chan struct{}    // closed when the armed reply was lost
}

// reply is what the server sends for one Sync or simple query: its
// messages up to and including ReadyForQuery.
type reply struct {
	tags   []string // the CommandComplete tags, in order
	status byte     // ReadyForQuery's transaction status: 'I', 'T' or 'E'
}

// commitReply matches the reply to an explicit COMMIT (the general
// path's transaction).
func commitReply(r reply) bool {
	for _, tag := range r.tags {
		if tag == "COMMIT" {
			return true
		}
	}
	return false
}

// appendReply matches the reply to the one-round-trip append: the
// pipeline of the lock and the append statement, two results, run as an
// implicit transaction that the Sync committed (so the reply ends idle).
func appendReply(r reply) bool {
	return len(r.tags) == 2 && r.tags[0] == "SELECT 1" && r.tags[1] == "SELECT 1" && r.status == 'I'
}

// newCutProxy starts a proxy on a loopback port to the server of dsn (a
// TCP address), unarmed; the test's end stops it. Its dsn is dsn pointed
// at the proxy, without TLS, so that the proxy reads the protocol.
func newCutProxy(t *testing.T, dsn string) *cutProxy {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, upstream: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// A key=value DSN: the connection's parameters, as a URL.
		u = &url.URL{Scheme: "postgres", Path: "/" + cfg.Database, User: url.User(cfg.User)}
		if cfg.Password != "" {
			u.User = url.UserPassword(cfg.User, cfg.Password)
		}
	}
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	p.dsn = u.String()
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c)
			}()
		}
	}()
	return p
}

// arm makes the proxy lose the reply after skip others that match.
// It returns a channel closed once it has.
func (p *cutProxy) arm(skip int, match func(reply) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.match, p.skip, p.cut = match, skip, make(chan struct{})
	return p.cut
}

// lose reports whether r is the armed reply, and disarms the proxy if so.
func (p *cutProxy) lose(r reply) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.match == nil || !p.match(r) {
		return false
	}
	if p.skip > 0 {
		p.skip--
		return false
	}
	p.match = nil
	close(p.cut)
	return true
}

// serve relays one client connection: the client's bytes as they come,
// the server's reply by reply.
func (p *cutProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = client.Close()
			_ = server.Close()
		})
	}
	copied := make(chan struct{})
	defer func() {
		closeBoth()
		<-copied
	}()
	go func() {
		defer close(copied)
		_, _ = io.Copy(server, client)
		closeBoth()
	}()
	in := bufio.NewReader(server)
	var held bytes.Buffer
	var r reply
	for {
		var head [5]byte
		if _, err := io.ReadFull(in, head[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[1:])) - 4
		if n < 0 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		held.Write(head[:])
		held.Write(body)
		switch head[0] {
		case 'C': // CommandComplete: a NUL-terminated tag
			r.tags = append(r.tags, string(bytes.TrimRight(body, "\x00")))
		case 'Z': // ReadyForQuery: the reply is complete
			if len(body) == 1 {
				r.status = body[0]
			}
			if p.lose(r) {
				return // closes both sides; the reply is never sent
			}
			if _, err := client.Write(held.Bytes()); err != nil {
				return
			}
			held.Reset()
			r = reply{}
		case 'R', 'E', 'N', 'S', 'K', 'A':
			// Authentication, errors, notices, parameters, the cancel
			// key, notifications: also outside a Sync's reply (the
			// connection's start, a fatal error), so forward at once.
			if _, err := client.Write(held.Bytes()); err != nil {
				return
			}
			held.Reset()
		}
	}
}
