package devbroker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Recorder is a middleware for Start's wrap: it counts the calls per route
// ("METHOD /path", every queue's own path as
// /api/v1/resources/queues/:queue), keeps each call's JSON body, and lets
// a fault answer a call itself (a synthetic failure, or a gate).
type Recorder struct {
	mu     sync.Mutex
	calls  map[string]int
	bodies map[string][]map[string]any
	fault  func(r *http.Request) (status int, retryAfter string, body string)
}

// NewRecorder is a Recorder with nothing recorded and no fault.
func NewRecorder() *Recorder {
	return &Recorder{calls: map[string]int{}, bodies: map[string][]map[string]any{}}
}

// Wrap counts the call under its route, keeps its body, and lets the fault
// answer it when that says so (a non-zero status, with Retry-After when
// one is given).
func (rec *Recorder) Wrap(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/api/v1/resources/queues/") {
			route = r.Method + " /api/v1/resources/queues/:queue"
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var decoded map[string]any
		_ = json.Unmarshal(body, &decoded)
		rec.mu.Lock()
		rec.calls[route]++
		rec.bodies[route] = append(rec.bodies[route], decoded)
		fault := rec.fault
		rec.mu.Unlock()
		if fault != nil {
			if status, ra, msg := fault(r); status != 0 {
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				w.WriteHeader(status)
				fmt.Fprint(w, msg)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
}

// Count is how many calls route has had.
func (rec *Recorder) Count(route string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.calls[route]
}

// Bodies is every body route has been called with, oldest first (nil for
// one that is not a JSON object).
func (rec *Recorder) Bodies(route string) []map[string]any {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]map[string]any(nil), rec.bodies[route]...)
}

// SetFault makes f answer the calls it says so for (a non-zero status);
// nil lets every call through.
func (rec *Recorder) SetFault(f func(r *http.Request) (status int, retryAfter string, body string)) {
	rec.mu.Lock()
	rec.fault = f
	rec.mu.Unlock()
}
