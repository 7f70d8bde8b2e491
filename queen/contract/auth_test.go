package contract

import (
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// §9 with auth off: the standalone identity, acting_cluster.id "local".
func TestAuthMeStandalone(t *testing.T) {
	c := shared.client(t, "")
	if id := must[string](t)(c.AuthMe(ctx)); id == "" {
		t.Fatal("standalone identity names no tenant")
	}
	r := shared.raw(t, "GET", "/auth/me", "", "")
	m := r.json(t)
	ac, _ := m["acting_cluster"].(map[string]any)
	if r.Status != 200 || m["user_id"] != "standalone" || m["standalone"] != true || ac["id"] != "local" || m["act_cluster_header"] != "x-queen-act-cluster" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// Auth off: any token is accepted everywhere.
	if _, err := shared.client(t, "whatever").Queues(ctx); err != nil {
		t.Fatal(err)
	}
}

// QUEEN_DEV_TOKENS: unknown or no token 401, read-only 403 on writes (and
// on KV, which is read-write even for reads), tenants isolated.
func TestAuthTokensAndTenants(t *testing.T) {
	p := startDev(t, "", map[string]string{"QUEEN_DEV_TOKENS": "tokA=tenantA,tokB=tenantB,tokR=tenantA:ro,tokW=tenantA:wo,tokRW=tenantA:rw"})
	a, b, ro, wo, rw := p.client(t, "tokA"), p.client(t, "tokB"), p.client(t, "tokR"), p.client(t, "tokW"), p.client(t, "tokRW")

	_, err := p.client(t, "").Queues(ctx)
	mustKind(t, err, queen.KindUnauthorized)
	_, err = p.client(t, "nope").Queues(ctx)
	mustKind(t, err, queen.KindUnauthorized)
	if !queen.IsAuth(err) {
		t.Fatal("IsAuth")
	}
	// The bearer prefix is case-insensitive and optional.
	for _, h := range []string{"Bearer tokA", "bearer tokA", "BEARER tokA", "tokA"} {
		if r := p.raw(t, "GET", "/api/v1/resources/queues", h, ""); r.Status != 200 {
			t.Fatalf("Authorization %q: %d %s", h, r.Status, r.Body)
		}
	}
	if r := p.raw(t, "GET", "/api/v1/resources/queues", "", ""); r.Status != 401 || r.json(t)["error"] == nil {
		t.Fatalf("no token: %d %s", r.Status, r.Body)
	}

	if id := must[string](t)(a.AuthMe(ctx)); id != "tenantA" {
		t.Fatalf("AuthMe tokA = %q", id)
	}
	if id := must[string](t)(b.AuthMe(ctx)); id != "tenantB" {
		t.Fatalf("AuthMe tokB = %q", id)
	}
	_, err = p.client(t, "nope").AuthMe(ctx)
	mustKind(t, err, queen.KindUnauthorized)

	q := "orders"
	pushN(t, a, q, "0", 2)
	must[[]queen.KVResult](t)(a.KV(ctx, []queen.KVOp{kvPut("qk:groups:g", "A", nil)}))

	// Read-only: reads pass, writes and KV are 403.
	if f := fetchOne(t, ro, q, "0", 0); len(f.Records) != 2 {
		t.Fatalf("read-only fetch: %+v", f)
	}
	if _, ok := findQueue(t, ro, q); !ok {
		t.Fatal("read-only token of tenant A does not see A's queue")
	}
	_, err = ro.Push(ctx, []queen.PushItem{{Queue: q, Partition: "0", Payload: rawJSON(1)}})
	mustKind(t, err, queen.KindForbidden)
	_, err = ro.KV(ctx, []queen.KVOp{kvGet("qk:groups:g")})
	mustKind(t, err, queen.KindForbidden)
	_, err = ro.Configure(ctx, "x", nil)
	mustKind(t, err, queen.KindForbidden)
	_, err = ro.Transaction(ctx, queen.TxnRequest{KV: []queen.KVOp{kvGet("qk:groups:g")}})
	mustKind(t, err, queen.KindForbidden)
	_, err = ro.DeleteQueue(ctx, q)
	mustKind(t, err, queen.KindForbidden)
	// Write-only: push passes, fetch and listing are 403.
	pushN(t, wo, q, "0", 1)
	_, err = wo.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q, Partition: "0"}}})
	mustKind(t, err, queen.KindForbidden)
	_, err = wo.Queues(ctx)
	mustKind(t, err, queen.KindForbidden)
	// Read-write: KV passes, queue deletion (admin) is 403.
	must[[]queen.KVResult](t)(rw.KV(ctx, []queen.KVOp{kvGet("qk:groups:g")}))
	_, err = rw.DeleteQueue(ctx, q)
	mustKind(t, err, queen.KindForbidden)

	// Tenant B sees none of A's queues, records or keys.
	if _, ok := findQueue(t, b, q); ok {
		t.Fatal("tenant B lists tenant A's queue")
	}
	if f := fetchOne(t, b, q, "0", 0); f.Error != queen.FetchErrUnknownTopic || f.HighWatermark != 0 || f.LogStartOffset != 0 {
		t.Fatalf("tenant B fetches A's queue: %+v", f)
	}
	if g := must[[]queen.KVResult](t)(b.KV(ctx, []queen.KVOp{kvGet("qk:groups:g")}))[0]; len(g.Rows) != 0 {
		t.Fatal("tenant B reads tenant A's key")
	}
	// The same names are independent per tenant.
	if off := pushN(t, b, q, "0", 1); off[0] != 0 {
		t.Fatalf("tenant B's queue starts at %d", off[0])
	}
	if r := must[[]queen.KVResult](t)(b.KV(ctx, []queen.KVOp{kvPut("qk:groups:g", "B", i64(0))}))[0]; !r.Applied {
		t.Fatalf("tenant B's key collides with A's: %+v", r)
	}
	if res := must[*queen.DeleteResult](t)(b.DeleteQueue(ctx, q)); !res.Deleted {
		t.Fatal("B could not delete its own queue")
	}
	if f := fetchOne(t, a, q, "0", 0); f.HighWatermark != 3 {
		t.Fatalf("B's delete touched A's queue: %+v", f)
	}
	// Health stays public; the boot line never prints a token.
	if r := p.raw(t, "GET", "/health", "", ""); r.Status != 200 {
		t.Fatalf("health with auth on: %d", r.Status)
	}
	if logs := p.Out.String(); strings.Contains(logs, "tokA") || strings.Contains(logs, "tokRW") {
		t.Fatalf("a token reached the log:\n%s", logs)
	}
}
