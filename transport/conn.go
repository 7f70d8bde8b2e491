package transport

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

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/internal/bufpool"
	"github.com/queen-mq/queen-kafka/queen"
)

// Conn is one client connection. Requests are read ahead (at most
// maxInFlight decoded and waiting) and answered strictly one at a time in
// arrival order, which is also what a Kafka broker does: a producer's
// ordering across pipelined produces depends on it. Requests of a batch
// API already waiting behind one another are answered as one group, in
// that order (conn_coalesce.go, Batch).
//
// Handlers see a connection through its exported methods only: its Queen
// client and identity, its client id, logger, id and peer, the value the
// server's ConnValue hook made for it, and the answer bytes it holds.
type Conn struct {
	srv    *Server
	id     uint64 // unique in the process
	nc     net.Conn
	br     *bufio.Reader
	remote string
	log    *slog.Logger
	// serverName is set once by the handshake, before any request is read.
	serverName string
	// authBy is when a connection that must authenticate (SASL) is closed
	// if it has not: accept time plus the server's AuthTimeout.
	authBy time.Time

	queen    atomic.Pointer[queen.Client]
	identity atomic.Pointer[string]
	clientID atomic.Pointer[string]

	// budget bounds the bytes of requests read ahead and not yet
	// answered: at most maxInFlight requests, and at most readAheadBytes
	// (or one frame above it, held alone), so read-ahead never multiplies
	// the ceiling.
	budget *budget.Budget
	// framesHeld is what this connection holds of the server's frame budget
	// (Server.Frames): the buffers of its frames being read and of those read
	// and not yet answered.
	framesHeld atomic.Int64
	// answerHeld is what the answers being written hold of answerBudget
	// (HoldAnswer). A connection writes its answers in order, so one
	// written gives back all of it: a second answer handled before the
	// first is written is counted short only that long.
	answerHeld   atomic.Int64
	answerBudget atomic.Pointer[budget.Budget]

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

	// value is what the server's ConnValue hook made for this connection
	// (the handlers' own per-connection state), closed with it when it
	// has a Close method.
	value any
}

// Value is what the server's ConnValue hook made for this connection: the
// handlers' per-connection state, which the wire knows nothing of.
func (c *Conn) Value() any { return c.value }

// Closed reports whether the connection has been closed: a handler that
// hands the connection something to close with it checks this after.
func (c *Conn) Closed() bool { return c.closed.Load() }

// ID numbers the connection, unique in the process (what a transaction's
// binding names its owner by).
func (c *Conn) ID() uint64 { return c.id }

// HoldAnswer hands the connection n bytes the answer being handled holds
// of budget b: they are given back to b when the connection writes its
// next answer, or ends. A connection's answers hold of one budget.
func (c *Conn) HoldAnswer(b *budget.Budget, n int64) {
	c.answerBudget.Store(b)
	c.answerHeld.Add(n)
}

// queued is one decoded request waiting for its turn. preset is an answer
// decided by the framing itself (ApiVersions at an unknown version).
type queued struct {
	size   int64 // frame bytes held against the read-ahead budget
	hdr    requestHeader
	row    Row
	req    kmsg.Request
	preset kmsg.Response
	// lockstep: read before authentication; the reader waits for its answer.
	lockstep bool
	// raw: a SASL v0 token, read and answered without Kafka headers.
	raw bool
	// frame is the request's bytes, which req may alias (recycle).
	frame []byte
}

// recycle gives a request's frame back to the pool once it is answered,
// when its batch handler says nothing of a request outlives its answer
// (Batch.Recycle). Other requests' frames are left to the collector, since
// a handler may keep bytes they alias (a group member's metadata, a SASL
// token).
func (q *queued) recycle() {
	if b, ok := q.row.Handler.(*Batch); ok && b.Recycle && q.frame != nil {
		bufpool.Put(q.frame)
		q.frame, q.req = nil, nil
	}
}

func newConn(s *Server, nc net.Conn) *Conn {
	c := &Conn{srv: s, id: s.connIDs.Add(1), nc: nc, br: bufio.NewReaderSize(nc, 64<<10), remote: nc.RemoteAddr().String(), budget: budget.New(readAheadBytes), turn: make(chan struct{}, 1)}
	c.log = s.cfg.Log.With("remote", c.remote)
	if s.cfg.SASL {
		c.authBy = time.Now().Add(s.AuthTimeout)
	}
	c.queen.Store(s.cfg.Queen)
	empty := ""
	c.identity.Store(&empty)
	c.clientID.Store(&empty)
	if s.cfg.ConnValue != nil {
		c.value = s.cfg.ConnValue(c)
	}
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
	return c.srv.cfg.SASL && !c.authenticated.Load()
}

// markAuthenticated lifts the pre-authentication limits: every API of the
// table, and frames up to the general ceiling.
func (c *Conn) markAuthenticated() { c.authenticated.Store(true) }

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

// frameLimit is the ceiling of the next request frame: PreAuthMaxFrame
// before a SASL listener's connection has authenticated, so that an
// unauthenticated peer cannot make the facade allocate, MaxFrame after.
func (c *Conn) frameLimit() int32 {
	if c.mustAuthenticate() {
		return PreAuthMaxFrame
	}
	return MaxFrame
}

// preAuthKeys are what a connection may send before it authenticates:
// negotiate versions, and authenticate. Anything else closes it with no
// answer, as Apache Kafka's own authenticator does.
var preAuthKeys = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

// Close closes the connection; its value is closed with it.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		_ = c.nc.Close()
		c.closed.Store(true)
		if v, ok := c.value.(interface{ Close() }); ok {
			v.Close()
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
	defer c.srv.forget(c)
	defer c.Close()
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
		c.Close()
		for range queue { // let the reader finish after a failure
		}
		// Requests read and never answered give back the server's frame
		// budget here, as the reader's last partial frame already did.
		c.srv.Frames.Release(c.framesHeld.Swap(0))
		c.ReleaseAnswer()
	}()
	_ = c.answerLoop(ctx, queue)
}

// ReleaseAnswer gives back what the answers written held (HoldAnswer): the
// connection does it once it has written an answer, and when it ends.
func (c *Conn) ReleaseAnswer() {
	if held := c.answerHeld.Swap(0); held > 0 {
		c.answerBudget.Load().Release(held)
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
	hctx, cancel := context.WithDeadline(ctx, c.deadline(c.srv.FrameTimeout))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return err
	}
	c.serverName = tc.ConnectionState().ServerName
	if c.srv.cfg.ForwardSNIHost && c.serverName != "" {
		// A proxy that routes by host may put two hosts in two tenants,
		// so they never share a catalogue.
		c.SetCredential(c.srv.cfg.Queen.As("", c.serverName), "host:"+c.serverName)
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
		c.Close()
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
	if err := c.nc.SetReadDeadline(c.deadline(c.srv.IdleTimeout)); err != nil {
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
	if err := c.nc.SetReadDeadline(c.deadline(c.srv.FrameTimeout)); err != nil {
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
	frameBy := c.deadline(c.srv.FrameTimeout)
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
		q, err = c.srv.cfg.Table.rawTokenRequest(frame)
	} else {
		q, err = c.srv.cfg.Table.decode(frame)
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

// chargeFrame is readBody's charge against the server's budget of frame
// bytes. Waiting for it counts against the frame's deadline, by: a frame
// stalled on the budget is a stalled frame, and closing it gives back what
// it held, so that frames each holding part of the budget cannot wait on
// one another for ever.
func (c *Conn) chargeFrame(ctx context.Context, by time.Time) func(int64) error {
	return func(n int64) error {
		wctx, cancel := context.WithDeadline(ctx, by)
		defer cancel()
		if err := c.srv.Frames.Acquire(wctx, n); err != nil {
			return fmt.Errorf("waiting for the node's frame budget: %w", os.ErrDeadlineExceeded)
		}
		c.framesHeld.Add(n)
		return nil
	}
}

// release gives back what a request's frame held: its read-ahead bytes
// and, read whole, as much of the server's frame budget.
func (c *Conn) release(size int64) {
	c.budget.Release(size)
	c.releaseFrames(size)
}

func (c *Conn) releaseFrames(n int64) {
	c.framesHeld.Add(-n)
	c.srv.Frames.Release(n)
}

func midFrame(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decode turns one frame into a request the version table admits.
// A key outside the table or a version outside its window is refused (the
// connection closes with no answer, as Apache Kafka does with a request it
// cannot parse), except ApiVersions, whose unknown versions are answered
// UNSUPPORTED_VERSION with the table so that a newer client retries lower.
func (t *Table) decode(frame []byte) (queued, error) {
	hdr, body, err := parseHeader(frame)
	if err != nil {
		return queued{}, refuse("malformed request: %v", err)
	}
	row, ok := t.Row(hdr.key)
	if !ok {
		return queued{}, refuse("unsupported request: api key %d (%s) is not offered", hdr.key, kmsg.NameForKey(hdr.key))
	}
	if hdr.version < row.Min || hdr.version > row.Max {
		if hdr.key == kmsg.ApiVersions.Int16() {
			return queued{hdr: hdr, row: row, preset: t.unsupportedApiVersions()}, nil
		}
		return queued{}, refuse("unsupported request: %s v%d is outside the advertised window v%d-v%d", kmsg.NameForKey(hdr.key), hdr.version, row.Min, row.Max)
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
		c.log.Info("closing connection: not authenticated in time", "auth_timeout", c.srv.AuthTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("closing idle or stalled connection", "idle_timeout", c.srv.IdleTimeout, "frame_timeout", c.srv.FrameTimeout)
	default:
		c.log.Info("connection read failed", "err", err)
	}
}

// answerLoop answers the queue's requests in order until it is closed and
// drained, or a request or a write ends the connection; it returns the
// error that did (nil for a drained queue or a failed write).
func (c *Conn) answerLoop(ctx context.Context, queue <-chan queued) error {
	var buf []byte
	var carry []queued // read, not yet answered, ahead of the queue
	for {
		group, rest, ok := nextGroup(queue, carry)
		if !ok {
			return nil
		}
		resps, taken, err := c.dispatch(ctx, group)
		if errors.Is(err, ErrStopping) {
			c.log.Info("closing connection: the node is stopping", "api", kmsg.NameForKey(group[0].hdr.key))
			return err
		}
		if err != nil {
			q := group[0]
			c.log.Warn("request failed, closing connection", "api", kmsg.NameForKey(q.hdr.key), "version", q.hdr.version, "client_id", q.hdr.clientID, "err", err)
			return err
		}
		carry = append(group[taken:len(group):len(group)], rest...)
		for i, q := range group[:taken] {
			if !c.writeAnswer(q, resps[i], &buf) {
				return nil
			}
			if q.lockstep {
				c.turn <- struct{}{}
			}
		}
	}
}

// Dispatch decodes frame (a request without its size prefix) through the
// version table and runs it as a request read alone, returning what the
// connection would send for it (nil: no frame) without sending it. It
// drives handlers without a socket (tests, fuzzing); a frame the table
// refuses is its error.
func (c *Conn) Dispatch(ctx context.Context, frame []byte) (kmsg.Response, error) {
	q, err := c.srv.cfg.Table.decode(frame)
	if err != nil {
		return nil, err
	}
	resps, _, err := c.dispatch(ctx, []queued{q})
	if err != nil {
		return nil, err
	}
	return resps[0], nil
}

// AnswerQueued answers frames (requests without their size prefix) as if
// all had been read and were waiting, in order, grouped as a served
// connection groups them, writing each answer to the connection. It
// returns the error that ended the answers, or a frame's refusal (tests).
func (c *Conn) AnswerQueued(ctx context.Context, frames [][]byte) error {
	queue := make(chan queued, len(frames))
	for _, f := range frames {
		q, err := c.srv.cfg.Table.decode(f)
		if err != nil {
			return err
		}
		q.size = int64(len(f))
		queue <- q
	}
	close(queue)
	return c.answerLoop(ctx, queue)
}

// writeAnswer sends one request's answer (none for a nil resp: the
// request is owed no frame) and reports whether the connection lives on.
func (c *Conn) writeAnswer(q queued, resp kmsg.Response, bufp *[]byte) bool {
	// The request's bytes are garbage once handled; the response is
	// bounded separately.
	c.release(q.size)
	defer q.recycle()
	buf := *bufp
	defer func() { *bufp = buf }()
	if resp == nil {
		return true // nothing is owed
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
	if len(buf)-4 > MaxFrame {
		c.log.Error("response above the frame ceiling, closing connection", "api", kmsg.NameForKey(q.hdr.key), "bytes", len(buf)-4, "limit", MaxFrame)
		return false
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.IdleTimeout)); err != nil {
		return false
	}
	if _, err := c.nc.Write(buf); err != nil {
		c.log.Info("response write failed, closing connection", "err", err)
		return false
	}
	c.srv.cfg.Observer.Sent(len(buf))
	c.ReleaseAnswer()
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
