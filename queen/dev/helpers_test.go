package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// newFakeClock is an injectable Options.Now, at a fixed instant with
// sub-second digits.
func newFakeClock() *testsupport.FakeClock {
	return testsupport.NewFakeClock(time.Date(2026, 8, 28, 9, 15, 0, 123456000, time.UTC))
}

// env is a broker behind a real HTTP server plus a queen.Client on it.
type env struct {
	t   *testing.T
	b   *Broker
	srv *httptest.Server
	qc  *queen.Client
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	if opts.SweepInterval == 0 {
		opts.SweepInterval = -1 // tests call Sweep explicitly
	}
	b, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := testsupport.Serve(t, b.Handler(), func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := b.Panics(); n != 0 {
			t.Errorf("%d handler panics recovered", n)
		}
	})
	qc, err := queen.New(queen.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, b: b, srv: srv, qc: qc}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// do sends a raw request and returns status, body and headers.
func (e *env) do(method, path, token, body string) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, raw, resp.Header
}

func (e *env) post(path, body string) (int, []byte) {
	e.t.Helper()
	st, raw, _ := e.do(http.MethodPost, path, "", body)
	return st, raw
}

// mustJSON decodes raw into a generic value, failing on invalid JSON.
func mustJSON(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", raw, err)
	}
	return v
}

// wantStatus asserts status and that the body is JSON; it returns the body.
func wantStatus(t *testing.T, got int, raw []byte, want int) any {
	t.Helper()
	if got != want {
		t.Fatalf("status %d, want %d; body %s", got, want, raw)
	}
	return mustJSON(t, raw)
}

// field walks a decoded JSON value by object keys and array indexes.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func num(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		return -1 << 62
	}
	i, err := n.Int64()
	if err != nil {
		return -1 << 62
	}
	return i
}

// pushN pushes n small records to queue/part through the client.
func (e *env) pushN(queue, part string, n int) []queen.PushResult {
	e.t.Helper()
	items := make([]queen.PushItem, n)
	for i := range items {
		items[i] = queen.PushItem{Queue: queue, Partition: part, Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
	}
	res, err := e.qc.Push(ctx(e.t), items)
	if err != nil {
		e.t.Fatalf("push: %v", err)
	}
	return res
}
