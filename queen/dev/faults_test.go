package dev

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

func (e *env) faults(body string) {
	e.t.Helper()
	st, raw, _ := e.do(http.MethodPost, "/dev/faults", "", body)
	wantStatus(e.t, st, raw, 200)
}

func TestFaultsOffByDefault(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw, _ := e.do(http.MethodPost, "/dev/faults", "", `{"rules":[{"route":"any","status":500}]}`)
	wantStatus(t, st, raw, 404)
	if _, err := e.qc.Queues(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestFaultStatusRetryAfterAndCount(t *testing.T) {
	e := newEnv(t, Options{Faults: true})
	c := ctx(t)
	e.faults(`{"rules":[{"route":"kv","status":429,"retryAfter":2,"count":2}]}`)
	for i := 0; i < 2; i++ {
		_, err := e.qc.KV(c, []queen.KVOp{put("k", `1`)})
		ra, ok := queen.RetryAfter(err)
		if !ok || ra != 2*time.Second {
			t.Fatalf("call %d: %v (retry after %v)", i, err, ra)
		}
	}
	if _, err := e.qc.KV(c, []queen.KVOp{put("k", `1`)}); err != nil {
		t.Fatalf("rule must expire after count: %v", err)
	}
	// Contract-shaped bodies per route.
	e.faults(`{"rules":[{"route":"kv","status":503,"retryAfter":1},{"route":"transaction","status":503},{"route":"push","status":502}]}`)
	st, raw, h := e.do(http.MethodPost, "/api/v1/kv", "", `[]`)
	v := wantStatus(t, st, raw, 503)
	if field(v, "error") != "kv_unavailable" || field(v, "reason") == nil || field(v, "detail") == nil || h.Get("Retry-After") != "1" {
		t.Errorf("kv fault body %s", raw)
	}
	st, raw, _ = e.do(http.MethodPost, "/api/v1/transaction", "", `{}`)
	v = wantStatus(t, st, raw, 503)
	if field(v, "success") != false || field(v, "transactionId") == nil {
		t.Errorf("txn fault body %s", raw)
	}
	_, err := e.qc.Push(c, []queen.PushItem{{Queue: "q", Payload: json.RawMessage(`1`)}})
	if queen.KindOf(err) != queen.KindTransient {
		t.Errorf("push 502: %v", err)
	}
	// DELETE clears; nothing reached the store.
	st, raw, _ = e.do(http.MethodDelete, "/dev/faults", "", "")
	wantStatus(t, st, raw, 200)
	if qs, _ := e.qc.Queues(c); len(qs) != 0 {
		t.Errorf("faulted push stored something: %+v", qs)
	}
	if _, err := e.qc.Push(c, []queen.PushItem{{Queue: "q", Payload: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
}

// A token-scoped rule hits only the facade presenting that token.
func TestFaultTokenTargeting(t *testing.T) {
	e := newEnv(t, Options{Faults: true})
	c := ctx(t)
	e.faults(`{"rules":[{"route":"any","token":"node-2-token","status":503}]}`)
	if _, err := e.qc.As("node-1-token", "").Queues(c); err != nil {
		t.Errorf("node 1 hit: %v", err)
	}
	if _, err := e.qc.As("node-2-token", "").Queues(c); queen.KindOf(err) != queen.KindTransient {
		t.Errorf("node 2 not hit: %v", err)
	}
	st, raw, _ := e.do(http.MethodGet, "/dev/faults", "", "")
	v := wantStatus(t, st, raw, 200)
	if num(field(v, "rules", 0, "hits")) != 1 {
		t.Errorf("hits: %s", raw)
	}
	// An HTTP-date Retry-After is sent verbatim (clients read it as absent).
	e.faults(`{"rules":[{"route":"fetch","status":429,"retryAfterRaw":"Wed, 21 Oct 2015 07:28:00 GMT"}]}`)
	_, err := e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Offset: 0}}})
	if ra, ok := queen.RetryAfter(err); !ok || ra != 0 {
		t.Errorf("raw retry-after: %v %v", ra, err)
	}
}

func TestFaultHangAndDrop(t *testing.T) {
	e := newEnv(t, Options{Faults: true})
	qc, err := queen.New(queen.Config{URL: e.srv.URL, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	e.faults(`{"rules":[{"route":"queues","hang":true,"count":1}]}`)
	_, err = qc.Queues(c)
	if queen.KindOf(err) != queen.KindTimeout {
		t.Errorf("hang: %v", err)
	}
	e.faults(`{"rules":[{"route":"configure","hang":true,"hangMs":50}]}`)
	_, err = qc.Configure(c, "q", nil)
	if queen.KindOf(err) != queen.KindTransient {
		t.Errorf("bounded hang must end in 504: %v", err)
	}
	e.faults(`{"rules":[{"route":"authme","drop":true}]}`)
	_, err = qc.AuthMe(c)
	if k := queen.KindOf(err); k != queen.KindTransport {
		t.Errorf("drop: kind %v %v", k, err)
	}
	if qs, _ := e.qc.Queues(c); len(qs) != 0 {
		t.Errorf("faulted configure stored something: %+v", qs)
	}
}

func TestFaultRuleValidation(t *testing.T) {
	e := newEnv(t, Options{Faults: true})
	for _, body := range []string{
		`{"rules":[{"route":"nope","status":500}]}`,
		`{"rules":[{"route":"kv"}]}`,
		`{"rules":[{"route":"kv","status":500,"drop":true}]}`,
		`{"rules":[{"route":"kv","status":99}]}`,
		`{"rules":[{"route":"kv","status":500,"count":-1}]}`,
		`{"rules":[null]}`,
		`{"rules":`,
	} {
		st, raw, _ := e.do(http.MethodPost, "/dev/faults", "", body)
		wantStatus(t, st, raw, 400)
	}
}

// Fault rules only apply to, and are only managed by, loopback callers.
func TestFaultsLoopbackOnly(t *testing.T) {
	b, err := New(Options{Faults: true, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := b.Handler()
	req := httptest.NewRequest(http.MethodPost, "/dev/faults", nil)
	req.RemoteAddr = "10.1.2.3:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("remote manage: %d", rec.Code)
	}
	b.faults.rules = []*FaultRule{{Route: "any", Status: 500}}
	req = httptest.NewRequest(http.MethodGet, "/api/v1/resources/queues", nil)
	req.RemoteAddr = "10.1.2.3:5555"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("remote caller faulted: %d", rec.Code)
	}
	req.RemoteAddr = "[::1]:5555"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("loopback caller not faulted: %d", rec.Code)
	}
}

// With auth on, managing fault rules takes an admin token (any tenant's: the
// rules apply to every caller); without one every method is refused and the
// rules stay as they were.
func TestFaultsNeedAdminTokenWhenAuthOn(t *testing.T) {
	e := newEnv(t, Options{Faults: true, Tokens: map[string]Token{
		"adm": {Tenant: "t1", Role: RoleAll}, "rw": {Tenant: "t1", Role: RoleReadWrite}, "other-adm": {Tenant: "t2", Role: RoleAll},
	}})
	rules := `{"rules":[{"route":"kv","status":503}]}`
	if st, raw, _ := e.do(http.MethodPost, "/dev/faults", "Bearer adm", rules); st != 200 {
		t.Fatalf("admin POST: %d %s", st, raw)
	}
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer rw", 403}} {
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if m == http.MethodPost {
				body = `{"rules":[]}`
			}
			st, raw, _ := e.do(m, "/dev/faults", c.token, body)
			wantStatus(t, st, raw, c.want)
		}
	}
	st, raw, _ := e.do(http.MethodGet, "/dev/faults", "Bearer other-adm", "")
	wantStatus(t, st, raw, 200)
	if n := len(field(mustJSON(t, raw), "rules").([]any)); n != 1 {
		t.Errorf("refused calls changed the rules: %d left, want 1\n%s", n, raw)
	}
	st, raw, _ = e.do(http.MethodDelete, "/dev/faults", "adm", "")
	wantStatus(t, st, raw, 200)
}

// Fault rules name the consume routes too.
func TestFaultConsumeRoutes(t *testing.T) {
	e := newEnv(t, Options{Faults: true})
	e.faults(`{"rules":[{"route":"pop","status":503,"count":1},{"route":"dlq","status":500,"count":1},{"route":"groups","status":429,"count":1},{"route":"ack","status":502,"count":1}]}`)
	for path, want := range map[string]int{"/api/v1/pop?task=x": 503, "/api/v1/dlq": 500, "/api/v1/consumer-groups/lagging": 429} {
		if st, raw, _ := e.do(http.MethodGet, path, "", ""); st != want {
			t.Errorf("%s: %d %s", path, st, raw)
		}
	}
	if st, raw := e.post("/api/v1/lease/x/extend", ""); st != 502 {
		t.Errorf("extend: %d %s", st, raw)
	}
	e.faults(`{"rules":[{"route":"groups","status":503,"count":1}]}`)
	if st, raw := e.post("/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"2000-01-01T00:00:00Z"}`); st != 503 {
		t.Errorf("subscription: %d %s", st, raw)
	}
}
