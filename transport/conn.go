package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/internal/bufpool"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// Conn is one client connection. Requests are read ahead (at most
// maxInFlight decoded and waiting) and answered strictly one at a time in
// arrival order, which is also what a Kafka broker does: a producer's
// ordering across pipelined produces depends on it. Produce requests
// already waiting behind one another are written as one push and then
// answered in that order (conn_coalesce.go, produce_group.go).
type Conn struct {
	n      *Node
	id     uint64 // unique in the process
	nc     net.Conn
	br     *bufio.Reader
	remote string
	log    *slog.Logger
	// serverName is set once by the handshake, before any request is read.
	serverName string
	// authBy is when a connection that must authenticate (SASL) is closed
	// if it has not: accept time plus the node's authTimeout.
	authBy time.Time

	queen    atomic.Pointer[queen.Client]
	identity atomic.Pointer[string]
	clientID atomic.Pointer[string]

	// budget bounds the bytes of requests read ahead and not yet
	// answered: at most maxInFlight requests, and at most one maximum
	// frame's worth of bytes, so read-ahead never multiplies the ceiling.
	budget *recordbatch.Budget
	// framesHeld is what this connection holds of the node's frame budget
	// (Node.frames): the buffers of its frames being read and of those read
	// and not yet answered.
	framesHeld atomic.Int64
	// answerHeld is what the answers being written hold of the node's
	// fetch response budget (fetchFill.handOver). A connection writes its
	// answers in order, so one written gives back all of it: a second
	// fetch handled before the first is written is counted short only
	// that long.
	answerHeld atomic.Int64

	authenticated atomic.Bool
	stopping      atomic.Bool
	closed        atomic.Bool
	closeOnce     sync.Once

	// sasl is the connection's SASL step (sasl_handshake.go): after a v0
	// handshake the reader takes the next frame as a bare token.
	sasl atomic.Int32
	// closeAfterAnswer ends the connection once the answer being handled
	// is written: a refused authentication.
	closeAfterAnswer atomic.Bool
	// turn hands the reader its next read while the connection has not
	// authenticated: no read-ahead then, so that how the next frame is
	// read, and under which ceiling, follows the answer before it.
	turn chan struct{}

	// fetchWatch is the watch of this connection's wide sessionless fetches
	// (fetch_watched.go), closed with the connection.
	fetchWatch atomic.Pointer[fetchwatch.Watch]
}

// keepFetchWatch makes w the connection's sessionless fetch watch, closing
// the one it replaces; a closed connection closes w at once.
func (c *Conn) keepFetchWatch(w *fetchwatch.Watch) {
	if old := c.fetchWatch.Swap(w); old != nil {
		old.Close()
	}
	if c.closed.Load() {
		if w := c.fetchWatch.Swap(nil); w != nil {
			w.Close()
		}
	}
}

// queued is one decoded request waiting for its turn. preset is an answer
// decided by the framing itself (ApiVersions at an unknown version).
type queued struct {
	size   int64 // frame bytes held against the read-ahead budget
	hdr    requestHeader
	row    apiRow
	req    kmsg.Request
	preset kmsg.Response
	// lockstep: read before authentication; the reader waits for its answer.
	lockstep bool
	// raw: a SASL v0 token, read and answered without Kafka headers.
	raw bool
	// frame is the request's bytes, which req may alias (recycle).
	frame []byte
}

// recycle gives a Produce request's frame back to the pool once it is
// answered: nothing of a produce outlives its answer (its records are
// envelopes in their own buffer by then, its strings are copies). Other
// requests' frames are left to the collector, since a handler may keep
// bytes they alias (a group member's metadata, a SASL token).
func (q *queued) recycle() {
	if q.hdr.key == kmsg.Produce.Int16() && q.frame != nil {
		bufpool.Put(q.frame)
		q.frame, q.req = nil, nil
	}
}

func newConn(n *Node, nc net.Conn) *Conn {
	c := &Conn{n: n, id: n.connIDs.Add(1), nc: nc, br: bufio.NewReaderSize(nc, 64<<10), remote: nc.RemoteAddr().String(), budget: recordbatch.NewBudget(maxFrame), turn: make(chan struct{}, 1)}
	c.log = n.log.With("remote", c.remote)
	if n.cfg.SASL != "" {
		c.authBy = time.Now().Add(n.authTimeout)
	}
	c.queen.Store(n.queen)
	empty := ""
	c.identity.Store(&empty)
	c.clientID.Store(&empty)
	return c
}

// Queen is the client this connection's calls go through: the node's
// (QUEEN_TOKEN) until SASL swaps in the connection's own credential.
func (c *Conn) Queen() *queen.Client { return c.queen.Load() }

// SetCredential replaces the connection's Queen client and the identity its
// cached topic list is filed under (SASL, after authentication). identity
// "" is the node's own credential.
func (c *Conn) SetCredential(q *queen.Client, identity string) {
	c.queen.Store(q)
	c.identity.Store(&identity)
}

// Identity is the key this connection's catalogue is filed under.
func (c *Conn) Identity() string { return *c.identity.Load() }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.remote }

// ClientID is the client_id of the last request header read.
func (c *Conn) ClientID() string { return *c.clientID.Load() }

// Logger carries the connection's remote address.
func (c *Conn) Logger() *slog.Logger { return c.log }

// mustAuthenticate reports whether the connection still owes a SASL
// authentication (QUEEN_KAFKA_SASL set and not yet done).
func (c *Conn) mustAuthenticate() bool {
	return c.n.cfg.SASL != "" && !c.authenticated.Load()
}

// MarkAuthenticated lifts the pre-authentication limits: every API of the
// table, and frames up to the general ceiling.
func (c *Conn) MarkAuthenticated() { c.authenticated.Store(true) }

// deadline is now plus d, and never past the authentication deadline while
// the connection still owes one: every read and the TLS handshake of an
// unauthenticated connection end there.
func (c *Conn) deadline(d time.Duration) time.Time {
	t := time.Now().Add(d)
	if c.mustAuthenticate() && c.authBy.Before(t) {
		return c.authBy
	}
	return t
}

// authExpired reports whether the connection was closed for owing an
// authentication past its deadline.
func (c *Conn) authExpired() bool {
	return c.mustAuthenticate() && !time.Now().Before(c.authBy)
}

// frameLimit is the ceiling of the next request frame: preAuthMaxFrame
// before a SASL listener's connection has authenticated, so that an
// unauthenticated peer cannot make the facade allocate, maxFrame after.
func (c *Conn) frameLimit() int32 {
	if c.mustAuthenticate() {
		return preAuthMaxFrame
	}
	return maxFrame
}

// preAuthKeys are what a connection may send before it authenticates:
// negotiate versions, and authenticate. Anything else closes it with no
// answer, as Apache Kafka's own authenticator does.
var preAuthKeys = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

func (c *Conn) close() {
	c.closeOnce.Do(func() {
		_ = c.nc.Close()
		c.closed.Store(true)
		if w := c.fetchWatch.Swap(nil); w != nil {
			w.Close()
		}
	})
}

// stopReading ends the read loop at the next frame boundary (graceful
// shutdown): requests already read are still answered.
func (c *Conn) stopReading() {
	c.stopping.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
}

func (c *Conn) serve(parent context.Context) {
	defer c.n.forget(c)
	defer c.close()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// Encoding a response can panic on a malformed answer; that too ends
	// one connection, never the process.
	defer c.recoverAndClose("answer")
	if err := c.handshake(ctx); err != nil {
		c.log.Info("TLS handshake failed, closing connection", "err", err)
		return
	}
	queue := make(chan queued, maxInFlight)
	go func() {
		defer close(queue)
		defer c.recoverAndClose("reader")
		c.readLoop(ctx, queue)
	}()
	defer func() {
		cancel()
		c.close()
		for range queue { // let the reader finish after a failure
		}
		// Requests read and never answered give back the node's frame
		// budget here, as the reader's last partial frame already did.
		c.n.frames.Release(c.framesHeld.Swap(0))
		c.releaseAnswer()
	}()
	c.answerLoop(ctx, queue)
}

// releaseAnswer gives back what the answers written held of the node's
// fetch response budget.
func (c *Conn) releaseAnswer() {
	if held := c.answerHeld.Swap(0); held > 0 {
		c.n.fetchMem.Release(held)
	}
}

// handshake completes a TLS connection's handshake up front, inside the
// half-frame timeout, and with QUEEN_KAFKA_FORWARD_SNI_HOST turns the
// server name the client dialled into the Host of this connection's calls.
func (c *Conn) handshake(ctx context.Context) error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	hctx, cancel := context.WithDeadline(ctx, c.deadline(c.n.frameTimeout))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return err
	}
	c.serverName = tc.ConnectionState().ServerName
	if c.n.cfg.ForwardSNIHost && c.serverName != "" {
		// A proxy that routes by host may put two hosts in two tenants,
		// so they never share a catalogue.
		c.SetCredential(c.n.queen.As("", c.serverName), "host:"+c.serverName)
	}
	return nil
}

// ServerName is the TLS server name the client dialled ("" without TLS or
// SNI). SASL derives the connection's credentialed client with it as Host
// when QUEEN_KAFKA_FORWARD_SNI_HOST is on.
func (c *Conn) ServerName() string { return c.serverName }

func (c *Conn) recoverAndClose(where string) {
	if r := recover(); r != nil {
		c.log.Error("panic on connection, closing it", "where", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.close()
	}
}

func (c *Conn) readLoop(ctx context.Context, queue chan<- queued) {
	for {
		q, err := c.readRequest(ctx)
		if err != nil {
			c.logReadEnd(err)
			return
		}
		select {
		case queue <- q:
		case <-ctx.Done():
			return
		}
		if q.lockstep {
			select {
			case <-c.turn:
			case <-ctx.Done():
				return
			}
		}
	}
}

// errRefused ends a connection because of what the client sent; it is
// logged as such, not as a network failure.
type errRefused struct{ msg string }

func (e errRefused) Error() string { return e.msg }

func refuse(format string, args ...any) error { return errRefused{fmt.Sprintf(format, args...)} }

func (c *Conn) readRequest(ctx context.Context) (queued, error) {
	if err := c.nc.SetReadDeadline(c.deadline(c.n.idleTimeout)); err != nil {
		return queued{}, err
	}
	if c.stopping.Load() {
		return queued{}, os.ErrDeadlineExceeded
	}
	if _, err := c.br.Peek(1); err != nil {
		return queued{}, err
	}
	// A frame has begun: the rest of it has frameTimeout to arrive, except
	// while the connection waits for its read-ahead budget.
	if err := c.nc.SetReadDeadline(c.deadline(c.n.frameTimeout)); err != nil {
		return queued{}, err
	}
	prefix, err := c.br.Peek(4)
	if err != nil {
		return queued{}, midFrame(err)
	}
	size, err := frameSize(prefix, c.frameLimit())
	if err != nil {
		return queued{}, refuse("request %v", err)
	}
	if c.budget.Acquire(ctx, int64(size)) != nil {
		return queued{}, net.ErrClosed // the connection is ending
	}
	frameBy := c.deadline(c.n.frameTimeout)
	if err := c.nc.SetReadDeadline(frameBy); err != nil {
		c.budget.Release(int64(size))
		return queued{}, err
	}
	_, _ = c.br.Discard(4)
	frame, charged, err := readBody(c.br, size, c.chargeFrame(ctx, frameBy))
	if err != nil {
		c.budget.Release(int64(size))
		c.releaseFrames(charged)
		return queued{}, err
	}
	var q queued
	if c.sasl.Load() == saslRawToken {
		q, err = rawTokenRequest(frame)
	} else {
		q, err = decodeRequest(frame)
	}
	if err == nil && c.mustAuthenticate() && !preAuthKeys[q.hdr.key] {
		err = refuse("%s before SASL authentication", kmsg.NameForKey(q.hdr.key))
	}
	if err != nil {
		c.release(int64(size))
		bufpool.Put(frame)
		return queued{}, err
	}
	q.size, q.frame = int64(size), frame
	q.lockstep = c.mustAuthenticate()
	return q, nil
}

// chargeFrame is readBody's charge against the node's budget of frame
// bytes. Waiting for it counts against the frame's deadline, by: a frame
// stalled on the budget is a stalled frame, and closing it gives back what
// it held, so that frames each holding part of the budget cannot wait on
// one another for ever.
func (c *Conn) chargeFrame(ctx context.Context, by time.Time) func(int64) error {
	return func(n int64) error {
		wctx, cancel := context.WithDeadline(ctx, by)
		defer cancel()
		if err := c.n.frames.Acquire(wctx, n); err != nil {
			return fmt.Errorf("waiting for the node's frame budget: %w", os.ErrDeadlineExceeded)
		}
		c.framesHeld.Add(n)
		return nil
	}
}

// release gives back what a request's frame held: its read-ahead bytes
// and, read whole, as much of the node's frame budget.
func (c *Conn) release(size int64) {
	c.budget.Release(size)
	c.releaseFrames(size)
}

func (c *Conn) releaseFrames(n int64) {
	c.framesHeld.Add(-n)
	c.n.frames.Release(n)
}

func midFrame(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeRequest turns one frame into a request the version table admits.
// A key outside the table or a version outside its window is refused (the
// connection closes with no answer, as Apache Kafka does with a request it
// cannot parse), except ApiVersions, whose unknown versions are answered
// UNSUPPORTED_VERSION with the table so that a newer client retries lower.
func decodeRequest(frame []byte) (queued, error) {
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return queued{}, refuse("malformed request: %v", err)
	}
	row, ok := rowFor(hdr.key)
	if !ok {
		return queued{}, refuse("unsupported request: api key %d (%s) is not offered", hdr.key, kmsg.NameForKey(hdr.key))
	}
	if hdr.version < row.min || hdr.version > row.max {
		if hdr.key == kmsg.ApiVersions.Int16() {
			return queued{hdr: hdr, row: row, preset: unsupportedApiVersions()}, nil
		}
		return queued{}, refuse("unsupported request: %s v%d is outside the advertised window v%d-v%d", kmsg.NameForKey(hdr.key), hdr.version, row.min, row.max)
	}
	req, err := decodeBody(hdr, body)
	if err != nil {
		return queued{}, refuse("malformed request: %v", err)
	}
	return queued{hdr: hdr, row: row, req: req}, nil
}

func (c *Conn) logReadEnd(err error) {
	var ref errRefused
	switch {
	case errors.As(err, &ref):
		c.log.Warn("closing connection", "reason", ref.msg, "client_id", c.ClientID())
	case c.stopping.Load():
		c.log.Debug("connection drained for shutdown")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug("connection closed by peer")
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Info("connection closed mid-frame")
	case errors.Is(err, os.ErrDeadlineExceeded) && c.authExpired():
		c.log.Info("closing connection: not authenticated in time", "auth_timeout", c.n.authTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing idle or stalled connection", "idle_timeout", c.n.idleTimeout, "frame_timeout", c.n.frameTimeout)
	default:
		c.log.Info("connection read failed", "err", err)
	}
}

func (c *Conn) answerLoop(ctx context.Context, queue <-chan queued) {
	var buf []byte
	var carry []queued // read, not yet answered, ahead of the queue
	for {
		group, rest, ok := nextGroup(queue, carry)
		if !ok {
			return
		}
		resps, taken, err := c.dispatch(ctx, group)
		if errors.Is(err, errStopping) {
			c.log.Info("closing connection: the node is stopping", "api", kmsg.NameForKey(group[0].hdr.key))
			return
		}
		if err != nil {
			q := group[0]
			c.log.Warn("request failed, closing connection", "api", kmsg.NameForKey(q.hdr.key), "version", q.hdr.version, "client_id", q.hdr.clientID, "err", err)
			return
		}
		carry = append(group[taken:len(group):len(group)], rest...)
		for i, q := range group[:taken] {
			if !c.writeAnswer(q, resps[i], &buf) {
				return
			}
			if q.lockstep {
				c.turn <- struct{}{}
			}
		}
	}
}

// writeAnswer sends one request's answer (none for a nil resp: acks=0
// owes nothing) and reports whether the connection lives on.
func (c *Conn) writeAnswer(q queued, resp kmsg.Response, bufp *[]byte) bool {
	// The request's bytes are garbage once handled; the response is
	// bounded separately.
	c.release(q.size)
	defer q.recycle()
	buf := *bufp
	defer func() { *bufp = buf }()
	if resp == nil {
		return true // acks=0: nothing is owed
	}
	if buf == nil {
		if p, _ := writeBuffers.Get().(*[]byte); p != nil {
			buf = *p
		}
	}
	if q.raw {
		var ok bool
		if buf, ok = appendRawToken(buf[:0], resp); !ok {
			return false // a refused v0 token has no bare answer: Kafka closes
		}
	} else {
		buf = appendResponse(buf[:0], q.hdr.correlationID, q.hdr.flexible, resp)
	}
	if len(buf)-4 > maxFrame {
		c.log.Error("response above the frame ceiling, closing connection", "api", kmsg.NameForKey(q.hdr.key), "bytes", len(buf)-4, "limit", maxFrame)
		return false
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.n.idleTimeout)); err != nil {
		return false
	}
	if _, err := c.nc.Write(buf); err != nil {
		c.log.Info("response write failed, closing connection", "err", err)
		return false
	}
	c.n.obs.Sent(len(buf))
	c.releaseAnswer()
	switch {
	case cap(buf) > maxPooledWriteBuffer:
		buf = nil // left to the collector
	case cap(buf) > keptWriteBuffer:
		writeBuffers.Put(&buf)
		buf = nil
	}
	return !c.closeAfterAnswer.Load()
}

// A connection keeps a response buffer of at most keptWriteBuffer between
// answers; a larger one (up to maxPooledWriteBuffer) waits in writeBuffers
// for the next answer of any connection, and the collector frees what none
// is using. Kept per connection, the last large answer's buffer would stay
// pinned by each of thousands of idle connections: 4 GiB at 4,096 of 1 MiB.
const (
	keptWriteBuffer      = 64 << 10
	maxPooledWriteBuffer = 1 << 20
)

var writeBuffers sync.Pool // *[]byte
