package dev

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

func TestParseTokens(t *testing.T) {
	got, err := ParseTokens("tokA=tenant1, tokB=tenant2:ro,tokC=t3:wo,tokD=t3:rw,tokE=t4:admin")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Token{
		"tokA": {"tenant1", RoleAll}, "tokB": {"tenant2", RoleReadOnly}, "tokC": {"t3", RoleWriteOnly},
		"tokD": {"t3", RoleReadWrite}, "tokE": {"t4", RoleAll},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %+v, want %+v", k, got[k], w)
		}
	}
	for _, bad := range []string{"", ",", "tok", "=t", "tok=", "tok=t:xx", "a=t,a=u", "a b=t"} {
		if _, err := ParseTokens(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAuthOff(t *testing.T) {
	e := newEnv(t, Options{})
	// Any or no credential is the default tenant.
	e.pushN("q", "0", 1)
	qc := e.qc.As("whatever", "")
	qs, err := qc.Queues(ctx(t))
	if err != nil || len(qs) != 1 {
		t.Fatalf("auth off: %+v %v", qs, err)
	}
	st, raw, _ := e.do("GET", "/auth/me", "", "")
	wantStatus(t, st, raw, 200)
	// The §9 standalone identity (cell_slug is the server id).
	want := `{"user_id":"standalone","email":null,"tenant_slug":"local","is_operator":true,
 "operator_enabled":true,"operator_live":true,
 "acting_cluster":{"id":"local","slug":"local"},
 "clusters":[{"id":"local","slug":"local","role":"admin","tenant_slug":"local",
              "tenant_id":"00000000-0000-0000-0000-000000000001","status":"active","cell_slug":"queen-dev"}],
 "act_cluster_header":"x-queen-act-cluster","role":"admin","cluster":null,"standalone":true}`
	var got, exp any
	if json.Unmarshal(raw, &got) != nil || json.Unmarshal([]byte(want), &exp) != nil || !reflect.DeepEqual(got, exp) {
		t.Errorf("standalone identity:\n got %s\nwant %s", raw, want)
	}
	tenant, err := e.qc.AuthMe(ctx(t))
	if err != nil || tenant != "local" {
		t.Errorf("AuthMe = %q %v", tenant, err)
	}
}

func TestAuthTokens(t *testing.T) {
	toks, err := ParseTokens("tokA=tenant1,tokB=tenant2:ro,tokA2=tenant1:rw,tokW=tenant1:wo")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{Tokens: toks})
	c := ctx(t)
	a, b, a2, w := e.qc.As("tokA", ""), e.qc.As("tokB", ""), e.qc.As("tokA2", ""), e.qc.As("tokW", "")

	// 401: missing or unknown token, JSON body.
	for _, h := range []string{"", "Bearer nope", "tokZ"} {
		st, raw, _ := e.do("GET", "/api/v1/resources/queues", h, "")
		v := wantStatus(t, st, raw, 401)
		if field(v, "error") == nil {
			t.Errorf("401 body %s", raw)
		}
	}
	if _, err := e.qc.Queues(c); queen.KindOf(err) != queen.KindUnauthorized {
		t.Errorf("no token: %v", err)
	}
	// Bearer prefix case-insensitive; bare token accepted.
	for _, h := range []string{"Bearer tokA", "bearer tokA", "BEARER  tokA", "tokA"} {
		st, raw, _ := e.do("GET", "/api/v1/resources/queues", h, "")
		wantStatus(t, st, raw, 200)
	}

	// Tenant scoping: queues and KV.
	if _, err := a.Push(c, []queen.PushItem{{Queue: "q1", Payload: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.KV(c, []queen.KVOp{put("k", `"t1"`)}); err != nil {
		t.Fatal(err)
	}
	qs, _ := a2.Queues(c)
	if len(qs) != 1 {
		t.Errorf("same tenant other token: %+v", qs)
	}
	qs, err = b.Queues(c)
	if err != nil || len(qs) != 0 {
		t.Errorf("tenant2 sees tenant1 queues: %+v %v", qs, err)
	}
	fr, err := b.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q1", Partition: "Default", Offset: 0}}})
	if err != nil || fr[0].Error != queen.FetchErrUnknownTopic || fr[0].HighWatermark != 0 {
		t.Errorf("other tenant's queue must look unknown: %+v %v", fr, err)
	}

	// Read-only: reads pass, every write 403 (KV is read-write even for reads).
	forbidden := func(name string, err error) {
		t.Helper()
		if queen.KindOf(err) != queen.KindForbidden {
			t.Errorf("%s: %v, want 403", name, err)
		}
	}
	_, err = b.Push(c, []queen.PushItem{{Queue: "q", Payload: json.RawMessage(`1`)}})
	forbidden("ro push", err)
	_, err = b.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "k"}})
	forbidden("ro kv", err)
	_, err = b.Configure(c, "q", nil)
	forbidden("ro configure", err)
	_, err = b.Transaction(c, queen.TxnRequest{KV: []queen.KVOp{put("x", `1`)}})
	forbidden("ro transaction", err)
	_, err = b.DeleteQueue(c, "q")
	forbidden("ro delete", err)
	// Write-only: push passes, reads 403. Read-write: delete is admin.
	if _, err := w.Push(c, []queen.PushItem{{Queue: "q1", Payload: json.RawMessage(`2`)}}); err != nil {
		t.Errorf("wo push: %v", err)
	}
	_, err = w.Queues(c)
	forbidden("wo list", err)
	_, err = a2.DeleteQueue(c, "q1")
	forbidden("rw delete", err)
	if d, err := a.DeleteQueue(c, "q1"); err != nil || !d.Deleted {
		t.Errorf("admin delete: %+v %v", d, err)
	}
	// KV of tenant2 is separate.
	res, _ := a.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "k"}})
	if !*res[0].Found {
		t.Error("tenant1 lost its KV row")
	}

	// /auth/me: known token names its tenant, anything else 401.
	if id, err := b.AuthMe(c); err != nil || id != "tenant2" {
		t.Errorf("AuthMe tokB = %q %v", id, err)
	}
	st, raw, _ := e.do("GET", "/auth/me", "Bearer nope", "")
	if wantStatus(t, st, raw, 401); string(raw) != `{"code":"auth_required","error":"auth_required"}` {
		t.Errorf("auth/me 401 body %s", raw)
	}
}
