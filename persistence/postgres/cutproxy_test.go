package postgres_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
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

	mu      sync.Mutex
	match   func(reply) bool    // armed: the reply to lose (nil: none)
	skip    int                 // matching replies to forward before the one lost
	cut     chan struct{}       // closed when the armed reply was lost
	instead []byte              // sent in place of the lost reply (nil: nothing)
	keep    keep                // what of the lost reply to send
	swallow bool                // armed: lose the client's next COMMIT instead
	before  func()              // run once the armed reply came, before it is lost
	live    map[net.Conn]func() // each relayed connection's closing of both sides
}

// keep is what the proxy sends of a reply it loses.
type keep int

const (
	keepNothing       keep = iota
	keepBeforeLastTag      // its messages before its last CommandComplete
	keepResults            // all its messages but ReadyForQuery
)

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
	p := &cutProxy{ln: ln, upstream: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), live: map[net.Conn]func(){}}
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
	p.match, p.skip, p.cut, p.instead, p.keep, p.swallow, p.before = match, skip, make(chan struct{}), nil, keepNothing, false, nil
	return p.cut
}

// armThen is arm that runs fn once the reply to lose came from the
// server, before the proxy closes both sides: what happens on the server
// after the commit and before the client can ask about it.
func (p *cutProxy) armThen(match func(reply) bool, fn func()) <-chan struct{} {
	cut := p.arm(0, match)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.before = fn
	return cut
}

// armCommit makes the proxy lose the client's next COMMIT on its way to
// the server, and close both sides instead of forwarding it: the server
// finds its client gone in the middle of the transaction and rolls it
// back, and the client, which sent the COMMIT, never hears what became of
// it. It returns a channel closed once it has.
func (p *cutProxy) armCommit() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.match, p.skip, p.cut, p.instead, p.keep, p.swallow, p.before = nil, 0, make(chan struct{}), nil, keepNothing, true, nil
	return p.cut
}

// swallowed reports whether the client's simple query sql is the armed
// COMMIT, and disarms the proxy if so.
func (p *cutProxy) swallowed(sql string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.swallow || !strings.EqualFold(strings.TrimSpace(sql), "commit") {
		return false
	}
	p.swallow = false
	close(p.cut)
	return true
}

// relayClient copies the client's bytes to the server message by message
// (the first, the startup or a cancel request, has no type byte), and
// stops, without forwarding it, at a COMMIT the proxy swallows.
func (p *cutProxy) relayClient(client, server net.Conn) {
	in := bufio.NewReader(client)
	typed := false
	for {
		var head []byte
		if typed {
			head = make([]byte, 5)
		} else {
			head = make([]byte, 4)
		}
		if _, err := io.ReadFull(in, head); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[len(head)-4:])) - 4
		if n < 0 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		if typed && head[0] == 'Q' && p.swallowed(string(bytes.TrimRight(body, "\x00"))) {
			return
		}
		if _, err := server.Write(append(head, body...)); err != nil {
			return
		}
		typed = true
	}
}

// armResults makes the proxy send the results of the first reply that
// matches but not its ReadyForQuery, and then close both sides: the
// client hears every statement of the save complete, and not whether the
// commit that follows them did. It returns a channel closed once it has.
func (p *cutProxy) armResults(match func(reply) bool) <-chan struct{} {
	cut := p.arm(0, match)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep = keepResults
	return cut
}

// armFatal makes the proxy send a FATAL error of SQLSTATE code in place of
// the first reply that matches, and then close both sides: what a
// connection pooler between client and server sends its client when its
// own link to the server breaks after the server committed. It returns a
// channel closed once it has.
func (p *cutProxy) armFatal(code string, match func(reply) bool) <-chan struct{} {
	cut := p.arm(0, match)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.instead = errorResponse("FATAL", code)
	return cut
}

// armFailedCommit makes the proxy send, of the first reply that matches,
// the messages before its last CommandComplete, and then an error of
// severity and SQLSTATE code, and close both sides: what the server sends
// when it fails at the commit of a simple query's implicit transaction
// (it commits that before it reports the last statement complete), after
// the commit may have become durable (a PANIC at the commit's WAL flush).
// It returns a channel closed once it has.
func (p *cutProxy) armFailedCommit(severity, code string, match func(reply) bool) <-chan struct{} {
	cut := p.arm(0, match)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.instead, p.keep = errorResponse(severity, code), keepBeforeLastTag
	return cut
}

// errorResponse is an ErrorResponse of severity and SQLSTATE code.
func errorResponse(severity, code string) []byte {
	var body bytes.Buffer
	for _, f := range [][2]string{{"S", severity}, {"C", code}, {"M", "the server link broke"}} {
		body.WriteString(f[0] + f[1] + "\x00")
	}
	body.WriteByte(0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+body.Len()))
	return append(msg, body.Bytes()...)
}

// cutAll closes both sides of every connection the proxy relays, at
// once, and returns how many it closed: what a server restart, or a
// proxy or load balancer that drops its connections, does to a client's
// connections. Connections made afterwards are relayed as before.
func (p *cutProxy) cutAll() int {
	p.mu.Lock()
	var closers []func()
	for _, closeBoth := range p.live {
		closers = append(closers, closeBoth)
	}
	p.mu.Unlock()
	for _, closeBoth := range closers {
		closeBoth()
	}
	return len(closers)
}

// lose reports whether r is the armed reply, and disarms the proxy if so;
// instead is what to send in its place, after what keep says of it.
func (p *cutProxy) lose(r reply) (lost bool, instead []byte, k keep) {
	p.mu.Lock()
	if p.match == nil || !p.match(r) {
		p.mu.Unlock()
		return false, nil, keepNothing
	}
	if p.skip > 0 {
		p.skip--
		p.mu.Unlock()
		return false, nil, keepNothing
	}
	p.match = nil
	before, cut, instead, k := p.before, p.cut, p.instead, p.keep
	p.mu.Unlock()
	if before != nil {
		before()
	}
	close(cut)
	return true, instead, k
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
	p.mu.Lock()
	p.live[client] = closeBoth
	p.mu.Unlock()
	copied := make(chan struct{})
	defer func() {
		closeBoth()
		<-copied
		p.mu.Lock()
		delete(p.live, client)
		p.mu.Unlock()
	}()
	go func() {
		defer close(copied)
		p.relayClient(client, server)
		closeBoth()
	}()
	in := bufio.NewReader(server)
	var held bytes.Buffer
	var r reply
	lastTag := 0 // where in held the last CommandComplete starts
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
		start := held.Len()
		if head[0] == 'C' {
			lastTag = start
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
			if lost, instead, k := p.lose(r); lost {
				switch k {
				case keepBeforeLastTag:
					_, _ = client.Write(held.Bytes()[:lastTag])
				case keepResults:
					_, _ = client.Write(held.Bytes()[:start])
				}
				if instead != nil {
					_, _ = client.Write(instead)
				}
				return // closes both sides; the reply is never sent
			}
			if _, err := client.Write(held.Bytes()); err != nil {
				return
			}
			held.Reset()
			r, lastTag = reply{}, 0
		case 'R', 'E', 'N', 'S', 'K', 'A':
			// Authentication, errors, notices, parameters, the cancel
			// key, notifications: also outside a Sync's reply (the
			// connection's start, a fatal error), so forward at once.
			if _, err := client.Write(held.Bytes()); err != nil {
				return
			}
			held.Reset()
			lastTag = 0
		}
	}
}
