package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/internal/ratelog"
	"github.com/queen-mq/queen-kafka/queen"
)

// Connection timeouts of the operator page's ceilings.
const (
	idleTimeout  = 10 * time.Minute // no request started
	frameTimeout = 30 * time.Second // a frame begun and not finished
	// authTimeout is how long a connection to a SASL listener has, from
	// accept, to authenticate (TLS handshake included). An unauthenticated
	// socket holds one of QUEEN_KAFKA_MAX_CONNECTIONS' slots, so idle ones
	// must not be able to lock every real client out.
	authTimeout = 10 * time.Second
	// maxInFlight is how many decoded requests one connection may have
	// read ahead of the one being answered.
	maxInFlight = 16
	// readAheadBytes bounds the request frames one connection holds read
	// and not yet answered (the one being answered included): small
	// requests still pile up behind one another to be answered as a group,
	// while a producer's multi-megabyte requests are read one at a time,
	// the next as the one before is answered, which keeps the socket's own
	// buffers between them. A frame larger than it is read when the
	// connection holds no other. At MaxFrame, one producer pipelining 6 MB
	// requests kept them piling up in the facade, and its peak memory with
	// them (issue 20: 16 MiB still peaked above the 96 MB target).
	readAheadBytes = 8 << 20
	// framesPerConnection is the share of the server's frame budget each of
	// QUEEN_KAFKA_MAX_CONNECTIONS is counted for (frameBudget).
	framesPerConnection = PreAuthMaxFrame
)

// Config is what a Server is built from: where it listens, how a
// connection authenticates, its version table, and the hooks through
// which the handlers' side hears of connections and answers.
type Config struct {
	Addr           string           // QUEEN_KAFKA_ADDR
	TLSCertificate *tls.Certificate // nil: plaintext
	// SASL: a connection must authenticate (SASL PLAIN, its password a
	// Queen token) before it may send anything but ApiVersions and the
	// SASL requests.
	SASL bool
	// ForwardSNIHost turns the TLS server name a client dialled into the
	// Host of its connection's Queen calls.
	ForwardSNIHost bool
	MaxConnections int
	// Queen is the node's own client (QUEEN_TOKEN): every connection's
	// until SASL swaps in the connection's own credential.
	Queen    *queen.Client
	Table    *Table
	Log      *slog.Logger
	Observer Observer
	Now      func() time.Time // the warnings' clock
	// Self names the broker a connection reached: ApiVersions v5 checks a
	// client's expectation against it.
	Self func() (clusterID string, nodeID int32)
	// SASLFault maps a failed credential check to the answer a client is
	// given; ok false closes the connection with no answer.
	SASLFault func(error) (code int16, msg string, ok bool)
	// ConnValue makes a connection's per-connection value (Conn.Value);
	// when the value has a Close method, closing the connection calls it.
	ConnValue func(*Conn) any
	// Forget hears of a connection once it has ended and every request of
	// it is done.
	Forget func(*Conn)
	// Answered hears every request answered, with its whole answer, after
	// the observer (what an answer says of the data path).
	Answered func(req kmsg.Request, resp kmsg.Response)
}

// ErrStopping ends a request whose wait the node's stop cut short: its
// connection is closed, logged as a stop rather than a failure.
var ErrStopping = errors.New("the node is stopping: a parked wait was cut and its connection closed")

// Server is the wire: the listener, its connections, and the budgets of
// the frames they read.
type Server struct {
	// Timeouts are fields so that tests can shorten them; set them before
	// Serve.
	IdleTimeout  time.Duration
	FrameTimeout time.Duration
	AuthTimeout  time.Duration
	// Frames is the server's budget of request frame bytes being read or
	// read and not yet answered, across every connection (frameBudget); a
	// test may set a smaller one before Serve.
	Frames *budget.Budget

	cfg Config
	ids *identities // SASL credentials' tenants (GET /auth/me)
	// connIDs numbers the connections.
	connIDs atomic.Uint64
	// acceptWarn and refuseWarn space the warnings of a failing accept and
	// of connections refused past QUEEN_KAFKA_MAX_CONNECTIONS.
	acceptWarn, refuseWarn ratelog.Every

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*Conn]struct{}
	draining bool
	connWG   sync.WaitGroup
	// cancelServed ends the context of every served connection, and so of
	// every request still being handled: the drain's last resort. Set by
	// Serve.
	cancelServed context.CancelFunc
}

// frameBudget is the server's budget of request frame bytes: room for
// every connection to have a small frame (framesPerConnection, the
// pre-authentication ceiling) in flight at once, and never less than two
// maximum frames, so that one 100 MiB request is never alone in the
// process. It is 256 MiB at the default 4,096 connections. A frame's buffer
// only takes its share as its bytes arrive (readBody).
func frameBudget(maxConnections int) int64 {
	return max(2*MaxFrame, int64(maxConnections)*framesPerConnection)
}

// NewServer builds a server from cfg. Nothing is bound yet.
func NewServer(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	return &Server{
		IdleTimeout:  idleTimeout,
		FrameTimeout: frameTimeout,
		AuthTimeout:  authTimeout,
		cfg:          cfg,
		Frames:       budget.New(frameBudget(cfg.MaxConnections)),
		ids:          newIdentities(),
		conns:        make(map[*Conn]struct{}),
		cancelServed: func() {},
		acceptWarn:   ratelog.Every{Window: warnEvery},
		refuseWarn:   ratelog.Every{Window: warnEvery},
	}
}

// NewConn is a connection on nc that is not served: handlers are driven
// with it directly (tests), or Dispatch and AnswerQueued run frames through
// dispatch.
func (s *Server) NewConn(nc net.Conn) *Conn { return newConn(s, nc) }

// Listen binds Config.Addr (with TLS when configured) and returns the
// bound address; Serve then accepts on it.
func (s *Server) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on QUEEN_KAFKA_ADDR=%s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLSCertificate != nil {
		// No ALPN: Kafka has no registered protocol id and no client offers one.
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*s.cfg.TLSCertificate}, MinVersion: tls.VersionTLS12})
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return ln.Addr(), nil
}

// Serve accepts connections on the bound listener until Close (nil) or a
// listener failure. It binds first when Listen was not called.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		if _, err := s.Listen(); err != nil {
			return err
		}
		s.mu.Lock()
		ln = s.ln
		s.mu.Unlock()
	}
	// Not cancelled when the accept loop ends (that is the start of a
	// stop): the connections drain on it, and Cancel cancels it.
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancelServed = cancel
	s.mu.Unlock()
	return s.acceptLoop(ctx, ln)
}

// Unlisten closes and forgets the listener Listen bound: its caller
// failed to start after it.
func (s *Server) Unlisten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
		s.ln = nil
	}
}

// Identities is the identity each credential SASL remembers is filed
// under ("" for one still being asked).
func (s *Server) Identities() []string { return s.ids.names() }

// Bound is the listener's address ("" before Listen) and whether the
// server is draining (Close was called): /readyz's listener check.
func (s *Server) Bound() (addr string, draining bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		addr = s.ln.Addr().String()
	}
	return addr, s.draining
}

// Connections is how many connections are open.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops accepting: the listener is closed and every connection
// accepted after is refused. Connections already served carry on (Drain).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	if s.ln != nil {
		_ = s.ln.Close()
	}
}

// Drain lets the connections already served finish the requests they have
// read, each closing after, until ctx ends; then every request still being
// handled is cancelled and its connection closed, and Drain waits at most
// afterCancel more for them.
func (s *Server) Drain(ctx context.Context, afterCancel time.Duration) error {
	s.mu.Lock()
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		s.cancelServed()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		select {
		case <-done:
		case <-time.After(afterCancel):
			return fmt.Errorf("drain cut short (%w), and connections still being handled %s after their cancellation are left behind", ctx.Err(), afterCancel)
		}
		return fmt.Errorf("drain cut short: %w", ctx.Err())
	}
}

// Cancel ends the context of every served connection, and so of every
// request still being handled.
func (s *Server) Cancel() {
	s.mu.Lock()
	s.cancelServed()
	s.mu.Unlock()
}
