package transport

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observer hears what the wire does, for /metrics. Its methods are called
// on the request path: each must be cheap, never block, and be safe for
// concurrent use.
type Observer interface {
	// Request is one request answered (one owed no frame included): its
	// API key and version, the first non-zero error code of its answer
	// (0: none), its frame's bytes, the throttle its answer carries, and
	// how long its answer took (dispatch).
	Request(key, version, code int16, bytes int, throttle, took time.Duration)
	// Sent is one response frame written, its bytes.
	Sent(bytes int)
	// Accepted is one connection accepted; Refused one closed at accept,
	// with why: "max_connections" or "draining".
	Accepted()
	Refused(reason string)
}

// NopObserver hears nothing: the observer of a server nobody watches, and
// what an observer embeds for the calls it ignores.
type NopObserver struct{}

func (NopObserver) Request(int16, int16, int16, int, time.Duration, time.Duration) {}
func (NopObserver) Sent(int)                                                       {}
func (NopObserver) Accepted()                                                      {}
func (NopObserver) Refused(string)                                                 {}

// observe reports one answered request, then hands it to Config.Answered.
func (s *Server) observe(q queued, resp kmsg.Response, took time.Duration) {
	var throttle time.Duration
	if t, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, _ := t.Throttle()
		throttle = time.Duration(ms) * time.Millisecond
	}
	s.cfg.Observer.Request(q.hdr.key, q.hdr.version, responseErrorCode(resp), int(q.size)+4, throttle, took)
	if s.cfg.Answered != nil {
		s.cfg.Answered(q.req, resp)
	}
}
