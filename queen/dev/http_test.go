package dev

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

func TestHealthAndUnknownRoutes(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw, _ := e.do(http.MethodGet, "/health", "", "")
	if st != 200 || string(raw) != `{"status":"ok"}` {
		t.Errorf("health: %d %s", st, raw)
	}
	for _, p := range []string{"/api/v1/push", "/api/v1/resources/queues/x", "/api/v1/kv"} {
		st, raw, _ := e.do(http.MethodPut, p, "", "")
		v := wantStatus(t, st, raw, 405)
		if field(v, "error") == nil {
			t.Errorf("%s: %s", p, raw)
		}
	}
	for _, p := range []string{"/api/v1/pop/nowhere", "/api/v1/kv/queen-kafka/k", "/", "/api/v1/resources/queues/"} {
		st, raw, _ := e.do(http.MethodGet, p, "", "")
		v := wantStatus(t, st, raw, 404)
		if field(v, "error") == nil {
			t.Errorf("%s: %s", p, raw)
		}
	}
}

// Bodies above QUEEN_MAX_BODY_BYTES: 413 {"error":"payload too large"},
// whether the length is declared or streamed; nothing is written.
func TestBodyCap(t *testing.T) {
	e := newEnv(t, Options{MaxBodyBytes: 1024})
	big := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 2000) + `"}]}`
	for _, path := range []string{"/api/v1/push", "/api/v1/kv", "/api/v1/fetch", "/api/v1/transaction", "/api/v1/configure"} {
		st, raw := e.post(path, big)
		if st != 413 || string(raw) != `{"error":"payload too large"}` {
			t.Errorf("%s: %d %s", path, st, raw)
		}
	}
	// Streamed (no Content-Length).
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/push", struct{ *strings.Reader }{strings.NewReader(big)})
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked: %d", resp.StatusCode)
	}
	if e.b.Mutations() != 0 {
		t.Error("oversized body wrote something")
	}
	// Through the client: KindTooLarge.
	_, err = e.qc.Push(ctx(t), []queen.PushItem{{Queue: "q", Payload: []byte(`"` + strings.Repeat("x", 2000) + `"`)}})
	if queen.KindOf(err) != queen.KindTooLarge {
		t.Errorf("client: %v", err)
	}
}

// Malformed JSON on every body route: 400 with the route's body shape.
func TestMalformedJSONEveryRoute(t *testing.T) {
	e := newEnv(t, Options{})
	for _, body := range []string{`{`, `nul`, `{"a":1}{`, "\x00", `{"items":[{"queue":"q","payload":1}]`} {
		for path, key := range map[string]string{
			"/api/v1/push": "error", "/api/v1/fetch": "error", "/api/v1/configure": "error",
			"/api/v1/kv": "reason", "/api/v1/transaction": "reason",
		} {
			st, raw := e.post(path, body)
			v := wantStatus(t, st, raw, 400)
			if field(v, key) == nil {
				t.Errorf("%s %q: %s", path, body, raw)
			}
		}
	}
	if e.b.Mutations() != 0 {
		t.Error("malformed bodies wrote something")
	}
}
