package queen

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// seen is one request as a fake Queen received it.
type seen struct {
	Method, Path, RawPath, Host, Auth, ContentType string
	Body                                           string
}

// fake is an httptest Queen whose every answer is scripted by reply.
type fake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []seen
	reply func(w http.ResponseWriter, r *http.Request, body string)
}

func newFake(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, body string)) *fake {
	t.Helper()
	f := &fake{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{
			Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Host: r.Host,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: string(b),
		})
		f.mu.Unlock()
		f.reply(w, r, string(b))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// answer is a reply that always sends status and body (JSON content type).
func answer(status int, body string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func (f *fake) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("fake Queen received no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fake) client(t *testing.T, token string) *Client {
	t.Helper()
	c, err := New(Config{URL: f.srv.URL + "/", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fake) clientTimeout(t *testing.T, d time.Duration) *Client {
	t.Helper()
	c, err := New(Config{URL: f.srv.URL, RequestTimeout: d})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustKind(t *testing.T, err error, want Kind) {
	t.Helper()
	if got := KindOf(err); got != want {
		t.Fatalf("kind = %v, want %v (err: %v)", got, want, err)
	}
}
