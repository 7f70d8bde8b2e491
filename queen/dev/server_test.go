package dev

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The server cmd/queen-dev runs, with its derived timeouts.
func TestServerTimeoutsDerived(t *testing.T) {
	b, err := New(Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := b.Server(nil)
	// 64 MiB at 1 MiB/s after 10 s of headers; a 30 s long poll and a
	// 64 MiB answer at 1 MiB/s on top; idle longer than the facade's 90 s.
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != 74*time.Second ||
		srv.WriteTimeout != (74+30+64)*time.Second || srv.IdleTimeout != 2*time.Minute {
		t.Errorf("timeouts header %v read %v write %v idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	fb, err := New(Options{SweepInterval: -1, Faults: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if w := fb.Server(nil).WriteTimeout; w != (74+120+64)*time.Second {
		t.Errorf("with faults on, write timeout %v must cover a 120 s hang", w)
	}
}

// A connection that never finishes its headers, stalls its body or idles is
// closed while other clients are answered; a long poll and an injected hang
// outlive the read timeout and are answered. The limits are shortened (the server is built
// from them as cmd/queen-dev's is) so the test does not wait out 10 s.
func TestServerClosesSlowConnections(t *testing.T) {
	b, err := New(Options{SweepInterval: -1, Faults: true, MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.limits = connLimits{header: 300 * time.Millisecond, rate: 1 << 20, idle: 300 * time.Millisecond}
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = b.Server(nil)
	hs.Start()
	defer hs.Close()
	addr := hs.Listener.Addr().String()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	call := func(t *testing.T, method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, raw
	}
	answers := func(t *testing.T) {
		t.Helper()
		if st, raw := call(t, http.MethodGet, "/health", ""); st != 200 {
			t.Fatalf("health while a slow connection is open: %d %s", st, raw)
		}
	}
	dial := func(t *testing.T, send string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// closed reads r to its end; the 20 s read deadline on c only turns a
	// server that never closes into a failure instead of a hang.
	closed := func(t *testing.T, c net.Conn, r io.Reader) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := io.Copy(io.Discard, r)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the server left the connection open")
		}
	}

	t.Run("headers never finished", func(t *testing.T) {
		c := dial(t, "POST /api/v1/push HTTP/1.1\r\nHost: queen-dev\r\nContent-Type: appl")
		answers(t)
		closed(t, c, c)
	})
	t.Run("body never finished", func(t *testing.T) {
		c := dial(t, "POST /api/v1/push HTTP/1.1\r\nHost: queen-dev\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"items\":[")
		answers(t)
		closed(t, c, c)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, "GET /health HTTP/1.1\r\nHost: queen-dev\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("first request: %d close=%v", resp.StatusCode, resp.Close)
		}
		answers(t)
		closed(t, c, br)
	})
	t.Run("long poll outlives the read timeout", func(t *testing.T) {
		if st, raw := call(t, http.MethodPost, "/api/v1/configure", `{"queue":"lp"}`); st != 200 {
			t.Fatalf("configure: %d %s", st, raw)
		}
		// Parks on an empty partition for 1.5 s, past the 300 ms read budget.
		st, raw := call(t, http.MethodPost, "/api/v1/fetch", `{"entries":[{"queue":"lp","partition":"0","offset":0}],"maxWaitMs":1500,"minBytes":1}`)
		var got struct {
			Entries []struct {
				Queue         string `json:"queue"`
				HighWatermark *int64 `json:"highWatermark"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(raw, &got); st != 200 || err != nil || len(got.Entries) != 1 || got.Entries[0].Queue != "lp" || got.Entries[0].HighWatermark == nil {
			t.Fatalf("long poll: %d %q (%v)", st, raw, err)
		}
	})
	t.Run("hang outlives the read timeout", func(t *testing.T) {
		if st, raw := call(t, http.MethodPost, "/dev/faults", `{"rules":[{"route":"queues","hang":true,"hangMs":1500,"count":1}]}`); st != 200 {
			t.Fatalf("faults: %d %s", st, raw)
		}
		if st, raw := call(t, http.MethodGet, "/api/v1/resources/queues", ""); st != http.StatusGatewayTimeout {
			t.Fatalf("hang: %d %q, want the 504 at its end", st, raw)
		}
	})
}
