package queen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

func TestStatusMapsToKind(t *testing.T) {
	cases := []struct {
		status int
		want   Kind
	}{
		{400, KindBadRequest}, {401, KindUnauthorized}, {403, KindForbidden}, {413, KindTooLarge},
		{429, KindThrottled}, {408, KindTransient}, {502, KindTransient}, {503, KindTransient},
		{504, KindTransient}, {500, KindServer}, {501, KindServer}, {421, KindServer}, {404, KindServer},
		{409, KindServer}, {307, KindServer},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ string) {
				if tc.status == 307 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, "{\"error\":\"nope \x1b[31mred\x1b[0m\"}")
			})
			_, err := f.client(t, "").Queues(context.Background())
			mustKind(t, err, tc.want)
			var qe *Error
			if !errors.As(err, &qe) || qe.Status != tc.status || qe.Route != routeQueues {
				t.Fatalf("error %#v lacks status/route", err)
			}
			if qe.Message != `{"error":"nope red"}` {
				t.Fatalf("message not sanitised: %q", qe.Message)
			}
			if f.count() != 1 {
				t.Fatalf("%d requests, want exactly 1 (redirects must not be followed)", f.count())
			}
			if got := IsAuth(err); got != (tc.status == 401 || tc.status == 403) {
				t.Fatalf("IsAuth = %v", got)
			}
		})
	}
}

func TestRetryAfterParsing(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", 0}, {"7", 7 * time.Second}, {" 12 ", 12 * time.Second}, {"0", 0},
		{"-3", 0}, {"+5", 0}, {"1.5", 0}, {"soon", 0}, {"5s", 0},
		{"Wed, 21 Oct 2026 07:28:00 GMT", 0},
		{"99999999999999999999999", maxRetryAfter * time.Second},
		{"7200", maxRetryAfter * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(429)
			})
			_, err := f.client(t, "").Queues(context.Background())
			mustKind(t, err, KindThrottled)
			d, ok := RetryAfter(err)
			if !ok || d != tc.want {
				t.Fatalf("RetryAfter = %v, %v; want %v, true", d, ok, tc.want)
			}
			if !Retriable(err) {
				t.Fatal("a 429 must be retriable")
			}
		})
	}
}

func TestRetryAfterOnlyForThrottle(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
		fmt.Fprint(w, `{"error":"kv_unavailable"}`)
	})
	_, err := f.client(t, "").KV(context.Background(), []KVOp{{Op: OpGetMany, NS: Namespace, Keys: []string{"qk:x"}}})
	mustKind(t, err, KindTransient)
	if _, ok := RetryAfter(err); ok {
		t.Fatal("a 503 is never a throttle")
	}
	var qe *Error
	if !errors.As(err, &qe) || qe.RetryAfter != time.Second {
		t.Fatalf("503 Retry-After not kept on the error: %#v", err)
	}
}

func TestThrottleMillis(t *testing.T) {
	cases := map[time.Duration]int32{0: 1000, 500 * time.Millisecond: 1000, time.Second: 1000,
		7 * time.Second: 7000, 30 * time.Second: 30000, time.Hour: 30000}
	for in, want := range cases {
		if got := ThrottleMillis(in); got != want {
			t.Errorf("ThrottleMillis(%v) = %d, want %d", in, got, want)
		}
	}
}

func TestTransportFailure(t *testing.T) {
	addr, err := testsupport.FreeAddr() // nothing listens: connection refused
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Queues(context.Background())
	mustKind(t, err, KindTransport)
	if !Retriable(err) {
		t.Fatal("transport failure must be retriable")
	}
}

func TestDroppedConnectionIsTransport(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	})
	_, err := f.client(t, "").Queues(context.Background())
	mustKind(t, err, KindTransport)
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, err := f.clientTimeout(t, 50*time.Millisecond).Queues(context.Background())
	mustKind(t, err, KindTimeout)
}

func TestCallerCancel(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ string) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := f.client(t, "").Queues(ctx)
	mustKind(t, err, KindCanceled)
	if Retriable(err) {
		t.Fatal("a canceled call is not retriable")
	}
}

func TestKindOfForeignErrors(t *testing.T) {
	mustKind(t, nil, KindNone)
	mustKind(t, context.Canceled, KindCanceled)
	mustKind(t, fmt.Errorf("x: %w", context.DeadlineExceeded), KindTimeout)
	mustKind(t, errors.New("plain"), KindProtocol)
	mustKind(t, &net.OpError{Op: "dial", Err: errors.New("refused")}, KindTransport)
	mustKind(t, fmt.Errorf("wrapped: %w", &Error{Kind: KindForbidden}), KindForbidden)
}

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\there\r\nnull\x00del\x7f", "tabherenulldel"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b(Bcharset", "charset"},
		{"\x1bMrev", "rev"},
		{"\u009b31mc1csi", "c1csi"},
		{"c1\u0085next", "c1next"},
		{"héllo ✓", "héllo ✓"},
		{"trailing esc\x1b", "trailing esc"},
		{"esc then é: \x1bé", "esc then é: é"},
	}
	for _, tc := range cases {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("é", 300)
	if got := Sanitize(long); got != strings.Repeat("é", 256) {
		t.Errorf("cut to %d runes, want 256", len([]rune(got)))
	}
	if got := Sanitize(strings.Repeat("\x1b[0m", 300) + "x"); got != "x" {
		t.Errorf("escapes count toward the cut: %q", got)
	}
}

func TestErrorStrings(t *testing.T) {
	seen := map[string]bool{}
	for k := KindNone; k <= KindCanceled; k++ {
		s := k.String()
		if strings.HasPrefix(s, "kind(") || seen[s] {
			t.Fatalf("kind %d has no distinct name: %q", int(k), s)
		}
		seen[s] = true
	}
	if Kind(99).String() != "kind(99)" {
		t.Fatal("unknown kind name")
	}
	e := &Error{Kind: KindThrottled, Route: routePush, Status: 429, Message: "slow down"}
	if got := e.Error(); got != "queen POST /api/v1/push: throttled (HTTP 429): slow down" {
		t.Fatal(got)
	}
	cause := errors.New("connection reset")
	e = &Error{Kind: KindTransport, Route: routeKV, Message: "reset", Err: cause}
	if got := e.Error(); got != "queen POST /api/v1/kv: transport: reset" || !errors.Is(e, cause) {
		t.Fatalf("%q / unwrap", got)
	}
	pe := &PreconditionError{Index: 2, KVReason: ReasonVersion, Version: 9}
	if !strings.Contains(pe.Error(), "op 2") || !strings.Contains(pe.Error(), "version 9") {
		t.Fatal(pe.Error())
	}
	te := &TxnError{Reason: "duplicate", Message: "dup"}
	if te.Error() != "queen transaction rolled back: duplicate: dup" || te.Fenced() {
		t.Fatal(te.Error())
	}
	if KindOf(pe) != KindProtocol || IsAuth(te) || Retriable(pe) {
		t.Fatal("verdict errors are neither auth failures nor retriable")
	}
}
