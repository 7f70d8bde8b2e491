package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var fuzzConsumeRoutes = []string{"/api/v1/ack", "/api/v1/ack/batch", "/api/v1/consumer-groups/g/queues/q/seek",
	"/api/v1/consumer-groups/g/queues/q/partitions/0/seek", "/api/v1/dlq/x/replay", "/api/v1/lease/x/extend", "/api/v1/transaction",
	"/api/v1/consumer-groups/g/subscription"}

// FuzzConsumeBodies throws arbitrary bodies at the consume routes that
// take one (route picks one; the subscription update included): nothing
// panics, every answer is JSON with a status the contract names, and a
// refused body (400, or a rolled-back transaction) applied nothing.
func FuzzConsumeBodies(f *testing.F) {
	for route, body := range []string{
		`{"transactionId":"t","partitionId":"p","status":"failed","consumerGroup":"g","leaseId":"l","error":"e"}`,
		`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"p","status":"dlq"}]}`,
		`{"toEnd":true}`,
		``,
		`{"queue":"q2","partition":"1"}`,
		`{"seconds":30}`,
		`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","status":"completed"},{"type":"push","items":[{"queue":"q","payload":1}]}]}`,
	} {
		f.Add(uint8(route), []byte(body))
	}
	f.Add(uint8(2), []byte(`{"timestamp":"2026-01-02T03:04:05Z"}`))
	f.Add(uint8(7), []byte(`{"subscriptionTimestamp":"2026-01-02T03:04:05Z"}`))
	f.Add(uint8(7), []byte(`{"subscriptionTimestamp":"soon"}`))
	b, err := New(Options{SweepInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	h := b.Handler()
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/api/v1/push", strings.NewReader(`{"items":[{"queue":"q","partition":"0","payload":1,"transactionId":"t"}]}`)),
		httptest.NewRequest(http.MethodGet, "/api/v1/pop/queue/q?consumerGroup=g", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzConsumeRoutes[int(route)%len(fuzzConsumeRoutes)]
		b.mu.Lock()
		before := b.dur.applied
		b.mu.Unlock()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if n := b.Panics(); n != 0 {
			t.Fatalf("%s panicked on %q", path, body)
		}
		out := rec.Body.Bytes()
		if !json.Valid(out) {
			t.Fatalf("%s answered %d with invalid JSON %q", path, rec.Code, out)
		}
		var verdict struct{ Success *bool }
		refused := rec.Code == 400 || rec.Code == 413 ||
			path == "/api/v1/transaction" && json.Unmarshal(out, &verdict) == nil && verdict.Success != nil && !*verdict.Success
		b.mu.Lock()
		after := b.dur.applied
		b.mu.Unlock()
		if refused && after != before {
			t.Fatalf("%s refused (%d %s) but applied a batch; body %q", path, rec.Code, out, body)
		}
		switch {
		case rec.Code == 200, rec.Code == 400, rec.Code == 413:
		case rec.Code == 404 && strings.HasPrefix(path, "/api/v1/dlq/"):
		case rec.Code == 500 && bytes.HasPrefix(out, []byte(`{"error":"seek failed: invalid timestamp`)): // as Queen's cast fails
		case rec.Code == 500 && bytes.HasPrefix(out, []byte(`{"error":"subscription failed: invalid timestamp`)):
		default:
			t.Fatalf("%s answered %d %s", path, rec.Code, out)
		}
	})
}
