package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// Budgets of §0: connect 3 s, request 10 s, fetch 10 s + its long poll.
const (
	ConnectTimeout  = 3 * time.Second
	RequestTimeout  = 10 * time.Second
	MaxFetchWaitMs  = 30000
	MaxFetchEntries = 1024
	// MaxFetchEntryBytes is §6's clamp of a fetch entry's maxBytes.
	MaxFetchEntryBytes = 8 << 20
)

// Config is how a Client reaches Queen.
type Config struct {
	URL   string // QUEEN_URL; http or https, trailing slash stripped
	Token string // QUEEN_TOKEN; "" sends no Authorization header
	// MaxConnsPerHost bounds pooled keep-alive connections (default 512).
	MaxConnsPerHost int
	// RequestTimeout overrides RequestTimeout (tests only).
	RequestTimeout time.Duration
	// Observer, when set, hears every call's route, outcome and duration.
	Observer Observer
	// Answers, when set, bounds the bytes of answers being read and
	// decoded at once, across every client derived from this one (As): a
	// 2xx answer of answerHoldMin bytes or more takes its declared length
	// from it before its first byte is read, and gives it back once
	// decoded. Nothing else is held while waiting, so the waits cannot
	// deadlock; a wait ends with the call's context.
	Answers Budget
}

// Budget is a bound on bytes held at once (budget.Budget is one).
type Budget interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// answerHoldMin: answers shorter than this are read without the Answers
// budget; they cost less than its lock would be taken.
const answerHoldMin = 64 << 10

// Observer hears every HTTP call a Client (and every client As derives from
// it) makes to Queen: route is the route constant ("POST /api/v1/push"),
// outcome KindNone for a 2xx whose body decoded, else the failure's Kind;
// d runs from the request's start to its body decoded. A verdict a route
// reads from a decoded body (a configure not confirmed, PreconditionError,
// TxnError) is a call that succeeded. It is called on every call's path:
// it must be cheap, never block, and be safe for concurrent use.
type Observer interface {
	QueenCall(route string, outcome Kind, d time.Duration)
}

// Client calls Queen's HTTP routes. It is safe for concurrent use; As derives
// a client that shares the connection pool but carries another credential.
type Client struct {
	base    string
	token   string
	host    string
	timeout time.Duration
	hc      *http.Client
	obs     Observer // nil: nobody listens
	answers Budget   // nil: unbounded
}

// New validates cfg and builds a client with its own pooled transport.
func New(cfg Config) (*Client, error) {
	u, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	conns := cfg.MaxConnsPerHost
	if conns <= 0 {
		conns = 512
	}
	dialer := &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         wholeBodyDialer(dialer.DialContext),
		TLSHandshakeTimeout: ConnectTimeout,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
		// No Accept-Encoding: gzip: the answers are small beside the
		// bodies, and inflating them is CPU on the produce path; Queen
		// answers identity to a client that asks for none.
		DisableCompression: true,
		// A push answer is ~150 bytes a record: read in 64 KiB steps
		// rather than the default 4 KiB, a few syscalls per answer
		// instead of dozens. Request bodies are written whole from
		// their buffer (wholeBodyConn), past the write buffer.
		ReadBufferSize: 64 << 10,
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = RequestTimeout
	}
	hc := &http.Client{
		Transport: tr,
		// The contract has no redirects; following one would replay a POST
		// (and possibly its credential) somewhere unvetted. A 3xx is surfaced
		// as a server failure instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Client{base: u, token: cfg.Token, timeout: timeout, hc: hc, obs: cfg.Observer, answers: cfg.Answers}, nil
}

// ParseURL checks a QUEEN_URL and returns it without a trailing slash.
func ParseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	return strings.TrimRight(raw, "/"), nil
}

// RedactURL is raw as a log line may show it: the password of its user
// info replaced by xxxxx, or a user info without one (a token put where
// the user goes) replaced whole; text that does not parse as a URL loses
// all of its user info.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		switch _, has := u.User.Password(); {
		case u.User == nil:
			return raw
		case has:
			return u.Redacted()
		}
		u.User = url.User("xxxxx")
		return u.String()
	}
	at := strings.LastIndexByte(raw, '@')
	if at < 0 {
		return raw
	}
	scheme := ""
	if i := strings.Index(raw, "://"); i >= 0 && i < at {
		scheme = raw[:i+3]
	}
	return scheme + "xxxxx" + raw[at:]
}

// As returns a client sharing c's pool whose calls carry token (when not
// empty, replacing the configured one) and, when host is not empty, that
// Host header (SNI forwarding).
func (c *Client) As(token, host string) *Client {
	d := *c
	if token != "" {
		d.token = token
	}
	if host != "" {
		d.host = host
	}
	return &d
}

// Authenticated reports whether calls carry a credential (never the credential).
func (c *Client) Authenticated() bool { return c.token != "" }

// call performs one HTTP exchange on route (a route* constant) with suffix
// appended to its path, and decodes a 2xx body into out. Any other status
// becomes an *Error. A 2xx body longer than limit (the most the contract
// lets the route answer, limits.go) is a KindProtocol error, read no
// further. It is the one place every call passes, where the observer hears
// it.
func (c *Client) call(ctx context.Context, route, suffix string, timeout time.Duration, limit int64, in, out any) error {
	if c.obs == nil {
		return c.exchange(ctx, route, suffix, timeout, limit, in, out)
	}
	start := time.Now()
	err := c.exchange(ctx, route, suffix, timeout, limit, in, out)
	outcome := KindNone
	if err != nil {
		outcome = KindOf(err)
	}
	c.obs.QueenCall(route, outcome, time.Since(start))
	return err
}

func (c *Client) exchange(ctx context.Context, route, suffix string, timeout time.Duration, limit int64, in, out any) error {
	method, path, _ := strings.Cut(route, " ")
	var body io.Reader
	pooled, _ := in.(*pooledBody)
	if pooled != nil {
		defer pooled.release()
		body = pooled.reader()
	} else if rb, ok := in.(rawBody); ok {
		body = bytes.NewReader(rb)
	} else if in != nil {
		b, err := encodeBody(in)
		if err != nil {
			return &Error{Kind: KindProtocol, Route: route, Message: Sanitize("encode: " + err.Error()), Err: err}
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+suffix, body)
	if err != nil {
		return &Error{Kind: KindProtocol, Route: route, Message: err.Error(), Err: err}
	}
	if pooled != nil {
		req.ContentLength = pooled.size()
		req.GetBody = func() (io.ReadCloser, error) { return pooled.reader(), nil }
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.host != "" {
		req.Host = c.host
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportError(ctx, route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Only logged or copied, cut short (§0.1): the rest is dropped.
		raw, _, err := readAnswer(resp.Body, maxErrorBody)
		if err != nil {
			return transportError(ctx, route, err)
		}
		return statusError(route, resp, raw)
	}
	if resp.ContentLength > limit {
		return tooLongError(route, resp.StatusCode, limit)
	}
	if c.answers != nil && resp.ContentLength >= answerHoldMin {
		if err := c.answers.Acquire(ctx, resp.ContentLength); err != nil {
			return transportError(ctx, route, err)
		}
		defer c.answers.Release(resp.ContentLength)
	}
	var raw []byte
	var ok bool
	if _, copies := out.(answerCopier); copies {
		// Decoded into copies: the answer's buffer is the pool's again
		// once decoded.
		raw, ok, err = readPooledAnswer(resp.Body, resp.ContentLength, limit)
		defer func() { bufpool.Put(raw) }()
	} else {
		raw, ok, err = readAnswer(resp.Body, limit)
	}
	if err != nil {
		return transportError(ctx, route, err)
	}
	if !ok {
		return tooLongError(route, resp.StatusCode, limit)
	}
	if out == nil {
		return nil
	}
	var derr error
	if d, ok := out.(bodyDecoder); ok {
		derr = d.decodeBody(raw)
	} else {
		derr = json.Unmarshal(raw, out)
	}
	if derr != nil {
		return &Error{Kind: KindProtocol, Route: route, Status: resp.StatusCode, Message: Sanitize("decode: " + derr.Error()), Err: derr}
	}
	return nil
}

// bodyDecoder is a response body with its own decoder (the push and fetch
// answers, see decodePushResponse and decodeFetchResponse).
type bodyDecoder interface{ decodeBody(raw []byte) error }

// answerCopier is a bodyDecoder that keeps nothing of the bytes it
// decodes, so that they may be read into a pooled buffer.
type answerCopier interface {
	bodyDecoder
	copiesAnswer()
}

// rawBody is a request body a route has already rendered as JSON.
type rawBody []byte

// pooledBody is a request body rendered into a bufpool buffer, with the
// payloads refs places in it sent from their own memory. The transport
// may still be reading a body after Do returns (it writes from its own
// goroutine, and closes the body once written), so release waits for
// every reader made of it to be closed, which the transport does once the
// request is written or its connection dropped; the buffer then goes back
// to the pool and the referenced payloads are the caller's again.
type pooledBody struct {
	buf  []byte
	refs []bodyRef
	mu   sync.Mutex
	open int
	idle chan struct{} // closed when open drops to 0, while release waits
	// abandoned is set when release stopped waiting: a reader still open
	// then reads nothing more of the caller's memory.
	abandoned atomic.Bool
}

// bodyRef is a payload sent in place: after buf[:at].
type bodyRef struct {
	at int
	p  []byte
}

// releaseWait bounds release's wait for the transport to close the body:
// past a response, the transport drops a connection whose request is not
// written within 50 ms, which closes the body.
const releaseWait = 5 * time.Second

func (p *pooledBody) size() int64 {
	n := int64(len(p.buf))
	for _, r := range p.refs {
		n += int64(len(r.p))
	}
	return n
}

// segments is the body in write order: buf's pieces and the payloads
// between them.
func (p *pooledBody) segments() [][]byte {
	segs := make([][]byte, 0, 2*len(p.refs)+1)
	at := 0
	for _, r := range p.refs {
		segs = append(segs, p.buf[at:r.at], r.p)
		at = r.at
	}
	return append(segs, p.buf[at:])
}

// reader is a fresh reader over the body (the request's, and one per
// GetBody rewind).
func (p *pooledBody) reader() io.ReadCloser {
	p.mu.Lock()
	p.open++
	p.mu.Unlock()
	return &pooledReader{segs: p.segments(), left: p.size(), body: p}
}

// release is called once the call is over; see pooledBody.
func (p *pooledBody) release() {
	p.mu.Lock()
	if p.open > 0 {
		idle := make(chan struct{})
		p.idle = idle
		p.mu.Unlock()
		t := time.NewTimer(releaseWait)
		select {
		case <-idle:
		case <-t.C:
			p.abandoned.Store(true)
		}
		t.Stop()
		p.mu.Lock()
	}
	if p.open == 0 {
		bufpool.Put(p.buf)
	}
	p.buf, p.refs = nil, nil
	p.mu.Unlock()
}

// wholeBodyConn is a connection to Queen that writes a pooled request body
// straight from its memory, with one vectored write (writev) of its
// pieces and payloads. The transport hands a body with a ContentLength to
// the connection's ReadFrom as an io.LimitedReader, and a TCP connection
// copies that through a 32 KiB buffer: a copy of every byte and a write
// syscall per 32 KiB (a multi-megabyte push body was ~16% of the facade's
// CPU). Any other body takes the connection's own path.
type wholeBodyConn struct{ net.Conn }

// wholeBodyDialer wraps the connections dial makes in wholeBodyConn.
func wholeBodyDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wholeBodyConn{nc}, nil
	}
}

func (c wholeBodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if pr, ok := lr.R.(*pooledReader); ok && pr.left <= lr.N {
			n, err := pr.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// errBodyAbandoned ends a body read after its call gave up waiting.
var errBodyAbandoned = errors.New("queen: request body abandoned")

// pooledReader reads a pooledBody's segments; segs[0][off:] is next.
type pooledReader struct {
	segs   [][]byte
	off    int
	left   int64
	body   *pooledBody
	closed atomic.Bool
}

func (r *pooledReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.segs) > 0 {
		if r.body.abandoned.Load() {
			return n, errBodyAbandoned
		}
		m := copy(p[n:], r.segs[0][r.off:])
		n, r.off = n+m, r.off+m
		if r.off == len(r.segs[0]) {
			r.segs, r.off = r.segs[1:], 0
		}
	}
	r.left -= int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left in vectored writes of up to 1,024 segments
// (net.Buffers: writev on a socket).
func (r *pooledReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var scratch [][]byte
	for len(r.segs) > 0 {
		if r.body.abandoned.Load() {
			return total, errBodyAbandoned
		}
		k := min(len(r.segs), 1024)
		scratch = append(scratch[:0], r.segs[:k]...)
		scratch[0] = scratch[0][r.off:]
		bufs := net.Buffers(scratch)
		n, err := bufs.WriteTo(w)
		total, r.left = total+n, r.left-n
		// Skip what was written: whole segments, then into the next.
		for n > 0 {
			rest := int64(len(r.segs[0]) - r.off)
			if n < rest {
				r.off += int(n)
				break
			}
			n -= rest
			r.segs, r.off = r.segs[1:], 0
		}
		if err != nil {
			return total, err
		}
		for len(r.segs) > 0 && len(r.segs[0]) == r.off {
			r.segs, r.off = r.segs[1:], 0
		}
	}
	return total, nil
}

func (r *pooledReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		b := r.body
		b.mu.Lock()
		b.open--
		if b.open == 0 && b.idle != nil {
			close(b.idle)
			b.idle = nil
		}
		b.mu.Unlock()
	}
	return nil
}

// jsonAppender is a body that renders itself, without reflection.
type jsonAppender interface{ appendJSON([]byte) []byte }

// jsonAppenderErr is a body that renders itself and may fail to.
type jsonAppenderErr interface {
	appendJSONErr([]byte) ([]byte, error)
}

// encodeBody renders a request body without HTML escaping: json.Marshal would
// rewrite '<', '>' and '&' inside payloads (header names of the envelope) as
// \u003c…, and a push payload must reach Queen as the bytes the caller built.
func encodeBody(in any) ([]byte, error) {
	if a, ok := in.(jsonAppender); ok {
		return a.appendJSON(nil), nil
	}
	if a, ok := in.(jsonAppenderErr); ok {
		return a.appendJSONErr(nil)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func transportError(ctx context.Context, route string, err error) error {
	kind := KindTransport
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() == context.Canceled:
		kind = KindCanceled
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		kind = KindTimeout
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			kind = KindTimeout
		}
	}
	return &Error{Kind: kind, Route: route, Message: Sanitize(err.Error()), Err: err}
}

func statusError(route string, resp *http.Response, raw []byte) error {
	e := &Error{Route: route, Status: resp.StatusCode, Message: Sanitize(string(raw))}
	switch resp.StatusCode {
	case 400:
		e.Kind = KindBadRequest
	case 401:
		e.Kind = KindUnauthorized
	case 403:
		e.Kind = KindForbidden
	case 413:
		e.Kind = KindTooLarge
	case 429:
		e.Kind = KindThrottled
	case 408, 502, 503, 504:
		e.Kind = KindTransient
	default:
		e.Kind = KindServer
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	return e
}

// maxRetryAfter bounds a delta-seconds Retry-After; callers clamp further
// (ThrottleMillis caps at 30 s).
const maxRetryAfter = 3600

// parseRetryAfter reads only the delta-seconds form (RFC 9110: 1*DIGIT); an
// HTTP-date, a sign, a fraction or any other text counts as absent (§0.2).
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > maxRetryAfter { // all digits: only overflow fails
		n = maxRetryAfter
	}
	return time.Duration(n) * time.Second
}

func protocolError(route, format string, args ...any) error {
	return &Error{Kind: KindProtocol, Route: route, Message: Sanitize(fmt.Sprintf(format, args...))}
}
