package queen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind classifies every way a call to Queen can fail, so that a caller maps
// an outcome to a Kafka error code (§0.2) without looking at message text.
type Kind int

const (
	KindNone         Kind = iota // no error
	KindBadRequest               // 400: refused whole, nothing written
	KindUnauthorized             // 401
	KindForbidden                // 403
	KindTooLarge                 // 413
	KindThrottled                // 429; see RetryAfter
	KindTransient                // 408, 502, 503, 504
	KindServer                   // 500 and any other status
	KindTransport                // connection refused, reset, DNS, TLS
	KindTimeout                  // the call's own budget ran out
	KindProtocol                 // a 2xx whose body breaks the contract (misaligned, missing offset, bad JSON)
	KindCanceled                 // the caller's context was canceled
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindBadRequest:
		return "bad_request"
	case KindUnauthorized:
		return "unauthorized"
	case KindForbidden:
		return "forbidden"
	case KindTooLarge:
		return "too_large"
	case KindThrottled:
		return "throttled"
	case KindTransient:
		return "transient"
	case KindServer:
		return "server"
	case KindTransport:
		return "transport"
	case KindTimeout:
		return "timeout"
	case KindProtocol:
		return "protocol"
	case KindCanceled:
		return "canceled"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is every failure the client returns, except the two verdicts that
// arrive inside a 200 (PreconditionError, TxnError).
type Error struct {
	Kind   Kind
	Route  string // e.g. "POST /api/v1/push"
	Status int    // HTTP status, 0 when none arrived
	// Message is the response body (or the transport error) sanitised and cut
	// to 256 characters: safe to copy into a Kafka error_message.
	Message string
	// RetryAfter is the delta-seconds Retry-After of a 429/503, 0 when absent.
	RetryAfter time.Duration
	Err        error // underlying cause, if any
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("queen %s: %s (HTTP %d): %s", e.Route, e.Kind, e.Status, e.Message)
	}
	return fmt.Sprintf("queen %s: %s: %s", e.Route, e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// PreconditionError is a required KV write that did not apply: the whole
// call was rolled back (§7.4). Index is the op's position in the call.
type PreconditionError struct {
	Index    int
	KVReason string // exists, absent or version ("" if the server could not say)
	Version  int64
	Value    []byte
}

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("queen kv: precondition of op %d lost (%s, version %d)", e.Index, e.KVReason, e.Version)
}

// TxnError is a rolled-back transaction (HTTP 200, success:false, §8). For
// reason kv_precondition, KVIndex is the ordinal inside the kv rider.
type TxnError struct {
	Reason   string
	Message  string
	KVIndex  int
	KVReason string
	Version  int64
	Value    []byte
}

func (e *TxnError) Error() string {
	return fmt.Sprintf("queen transaction rolled back: %s: %s", e.Reason, e.Message)
}

// TxnReasonDuplicate is the rollback of a transaction one of whose pushed
// items carries a transactionId already stored in its partition's dedup
// window (§8).
const TxnReasonDuplicate = "duplicate"

// Fenced reports whether the rollback was a lost KV precondition.
func (e *TxnError) Fenced() bool { return e.Reason == "kv_precondition" }

// KindOf returns the Kind of err: KindNone for nil, KindProtocol for an error
// that is none of this package's (a caller bug or a decode failure).
func KindOf(err error) Kind {
	if err == nil {
		return KindNone
	}
	var qe *Error
	if errors.As(err, &qe) {
		return qe.Kind
	}
	if errors.Is(err, context.Canceled) {
		return KindCanceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return KindTimeout
		}
		return KindTransport
	}
	return KindProtocol
}

// RetryAfter returns the Retry-After a throttled call carried, and whether
// err is a throttle at all.
func RetryAfter(err error) (time.Duration, bool) {
	var qe *Error
	if errors.As(err, &qe) && qe.Kind == KindThrottled {
		return qe.RetryAfter, true
	}
	return 0, false
}

// IsAuth reports a 401 or 403.
func IsAuth(err error) bool {
	k := KindOf(err)
	return k == KindUnauthorized || k == KindForbidden
}

// Retriable reports whether the same call may succeed later unchanged.
func Retriable(err error) bool {
	switch KindOf(err) {
	case KindThrottled, KindTransient, KindTransport, KindTimeout, KindServer:
		return true
	}
	return false
}

// ThrottleMillis is §0.2's throttle_time_ms for a 429:
// clamp(seconds*1000, 1000, 30000), 1000 when Retry-After was absent.
func ThrottleMillis(retryAfter time.Duration) int32 {
	ms := retryAfter.Milliseconds()
	if ms < 1000 {
		ms = 1000
	}
	if ms > 30000 {
		ms = 30000
	}
	return int32(ms)
}

// Sanitize removes control characters and ANSI escapes and cuts s to 256
// characters, the form in which a Queen message may reach a Kafka client.
// Escapes removed whole: CSI (ESC [ or 0x9B, up to its final byte), OSC, DCS,
// SOS, PM and APC strings (up to BEL or ESC \), nF and two-byte ESC sequences.
func Sanitize(s string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s) && n < 256; {
		r, size := rune(s[i]), 1
		if r >= 0x80 {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case r == 0x1b:
			i = skipEscape(s, i)
			continue
		case r == 0x9b: // C1 CSI
			i = skipCSI(s, i)
			continue
		case unicode.IsControl(r):
			continue
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// skipEscape skips what follows an ESC at s[i:]: a CSI, a control string, an
// nF sequence (intermediates 0x20–0x2F then a final byte) or one final byte
// 0x30–0x7E. Anything else (a control, non-ASCII) is left for the caller.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch c := s[i]; {
	case c == '[':
		return skipCSI(s, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(s, i+1)
	case c >= 0x20 && c <= 0x2f:
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		return i + 1
	}
	return i
}

// skipCSI skips a control sequence's parameter and intermediate bytes and
// its final byte (0x40–0x7E).
func skipCSI(s string, i int) int {
	for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
		i++
	}
	if i < len(s) {
		i++
	}
	return i
}

// skipString skips a control string up to and including BEL or ESC \.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
		i++
	}
	return i
}
