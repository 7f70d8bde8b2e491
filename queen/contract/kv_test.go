package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// §7.4 example replayed: a fence put with expect = the held version, an
// unconditional offset put and a getMany that sees the call's own write.
func TestKVExample(t *testing.T) {
	c := shared.client(t, "")
	g := uniq("billing")
	fence, off3, off4 := queen.FenceKey(g), queen.GroupOffsetKey(g, "orders", 3), queen.GroupOffsetKey(g, "orders", 4)
	held := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(fence, map[string]any{"node": 1}, i64(0))}))[0].Version
	fenceVal := `{"node":2,"incarnation":"3f2a","generation":7,"ts":1787824800123}`
	offVal := `{"offset":43,"metadata":"","ts":1787824800123}`
	res := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{
		{Op: queen.OpPut, NS: queen.Namespace, Key: fence, Value: json.RawMessage(fenceVal), Forever: true, Expect: i64(held), Required: true},
		{Op: queen.OpPut, NS: queen.Namespace, Key: off3, Value: json.RawMessage(offVal), Forever: true},
		kvGet(off3, off4),
	}))
	if !res[0].Applied || res[0].Key != fence || res[0].Version == held || res[0].Version == 0 || res[0].Reason != "" {
		t.Fatalf("fence: %+v (held %d)", res[0], held)
	}
	jsonEq(t, res[0].Value, []byte(fenceVal))
	if !res[1].Applied || res[1].Version == 0 || res[1].Version == res[0].Version {
		t.Fatalf("offset put: %+v", res[1])
	}
	g2 := res[2]
	if g2.Op != queen.OpGetMany || len(g2.Rows) != 1 || g2.Rows[0].Key != off3 || g2.Rows[0].Version != res[1].Version ||
		g2.Rows[0].ExpiresAt != nil || g2.Rows[0].UpdatedAt == "" || len(g2.Missing) != 1 || g2.Missing[0] != off4 || g2.Truncated {
		t.Fatalf("getMany: %+v", g2)
	}
	jsonEq(t, g2.Rows[0].Value, []byte(offVal))
	// Raw: results carry index and op; a success body never carries ok.
	body := `{"operations":[{"op":"getMany","ns":"queen-kafka","keys":["` + off3 + `"]}]}`
	r := shared.raw(t, "POST", "/api/v1/kv", "", body)
	m := r.json(t)
	if _, hasOK := m["ok"]; r.Status != 200 || hasOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// The bare-array body form is accepted; [] answers {"results":[]}.
	if r := shared.raw(t, "POST", "/api/v1/kv", "", `[{"op":"getMany","ns":"queen-kafka","keys":["`+off3+`"]}]`); r.Status != 200 {
		t.Fatalf("bare array: %d %s", r.Status, r.Body)
	}
	if r := shared.raw(t, "POST", "/api/v1/kv", "", `[]`); r.Status != 200 || strings.ReplaceAll(string(r.Body), " ", "") != `{"results":[]}` {
		t.Fatalf("empty: %d %s", r.Status, r.Body)
	}
}

// expect 0 / N semantics, verdicts carry the current value and version,
// versions are unique store-wide, expect N never creates.
func TestKVConditionalWrites(t *testing.T) {
	c := shared.client(t, "")
	k := "qk:txn:" + uniq("cond")
	kv := func(ops ...queen.KVOp) []queen.KVResult { return must[[]queen.KVResult](t)(c.KV(ctx, ops)) }

	r := kv(kvPut(k, 1, i64(5)))[0]
	if r.Applied || r.Reason != queen.ReasonAbsent || r.Version != 0 || !isNull(r.Value) {
		t.Fatalf("expect N on absent: %+v", r)
	}
	if got := kv(kvGet(k))[0]; len(got.Rows) != 0 {
		t.Fatal("expect N created the key")
	}
	v1 := kv(kvPut(k, 1, i64(0)))[0]
	if !v1.Applied || v1.Version == 0 {
		t.Fatalf("claim: %+v", v1)
	}
	r = kv(kvPut(k, 2, i64(0)))[0]
	if r.Applied || r.Reason != queen.ReasonExists || r.Version != v1.Version || string(r.Value) != "1" {
		t.Fatalf("expect 0 on live key: %+v", r)
	}
	r = kv(kvPut(k, 3, i64(v1.Version+1000)))[0]
	if r.Applied || r.Reason != queen.ReasonVersion || r.Version != v1.Version || string(r.Value) != "1" {
		t.Fatalf("wrong version: %+v", r)
	}
	v2 := kv(kvPut(k, 4, i64(v1.Version)))[0]
	if !v2.Applied || v2.Version == v1.Version || v2.Version == 0 {
		t.Fatalf("matching version: %+v", v2)
	}
	v3 := kv(kvPut(k, 5, nil))[0]
	if !v3.Applied || v3.Version == v2.Version {
		t.Fatalf("unconditional: %+v", v3)
	}
	// delete: expect 0 on a live key loses; no expect removes and echoes.
	del := func(expect *int64) queen.KVResult {
		return kv(queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: k, Expect: expect})[0]
	}
	if r := del(i64(0)); r.Applied || r.Reason != queen.ReasonExists || r.Version != v3.Version {
		t.Fatalf("delete expect 0 on live: %+v", r)
	}
	if r := del(i64(v2.Version)); r.Applied || r.Reason != queen.ReasonVersion {
		t.Fatalf("delete stale version: %+v", r)
	}
	if r := del(nil); !r.Applied || r.Version != v3.Version || string(r.Value) != "5" || r.Op != queen.OpDelete {
		t.Fatalf("delete: %+v", r)
	}
	if r := del(nil); r.Applied || r.Reason != queen.ReasonAbsent || r.Version != 0 {
		t.Fatalf("delete absent: %+v", r)
	}
	if r := del(i64(0)); !r.Applied || r.Version != 0 {
		t.Fatalf("delete expect 0 on absent: %+v", r)
	}
	// A new incarnation never reuses a version.
	v4 := kv(kvPut(k, 6, i64(0)))[0]
	for _, old := range []int64{v1.Version, v2.Version, v3.Version} {
		if v4.Version == old {
			t.Fatalf("version %d reissued", old)
		}
	}
	// putIfAbsent = put with expect 0.
	if r := kv(queen.KVOp{Op: queen.OpPutIfAbsent, NS: queen.Namespace, Key: k, Value: rawJSON(7), Forever: true})[0]; r.Applied || r.Reason != queen.ReasonExists {
		t.Fatalf("putIfAbsent: %+v", r)
	}
	// null is a legal value.
	nk := k + ":null"
	if r := kv(queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: nk, Value: json.RawMessage("null"), Forever: true})[0]; !r.Applied {
		t.Fatalf("null value: %+v", r)
	}
	if g := kv(kvGet(nk))[0]; len(g.Rows) != 1 || !isNull(g.Rows[0].Value) {
		t.Fatalf("null value read back: %+v", g)
	}
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// required:true that does not apply rolls back the whole call.
func TestKVRequiredRollsBack(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:group:" + uniq("req") + ":"
	a, b := p+"a", p+"b"
	va := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(a, "first", nil)}))[0].Version
	_, err := c.KV(ctx, []queen.KVOp{
		kvPut(b, "written?", nil),
		{Op: queen.OpPut, NS: queen.Namespace, Key: a, Value: rawJSON("second"), Forever: true, Expect: i64(0), Required: true},
	})
	var pe *queen.PreconditionError
	if !errors.As(err, &pe) || pe.Index != 1 || pe.KVReason != queen.ReasonExists || pe.Version != va || string(pe.Value) != `"first"` {
		t.Fatalf("%#v", err)
	}
	got := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(a, b)}))[0]
	if len(got.Rows) != 1 || string(got.Rows[0].Value) != `"first"` || len(got.Missing) != 1 {
		t.Fatalf("rolled-back call left writes: %+v", got)
	}
	// Raw body shape: no results key, ok:false, failedIndex.
	r := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[{"op":"delete","ns":"queen-kafka","key":"`+p+`zz","expect":9,"required":true}]}`)
	m := r.json(t)
	if _, has := m["results"]; r.Status != 200 || has || m["ok"] != false || m["reason"] != "kv_precondition" || m["failedIndex"] != float64(0) || m["kvReason"] != "absent" {
		t.Fatalf("precondition body: %d %s", r.Status, r.Body)
	}
}

// Apply order: writes first (by key), then reads, which see them.
func TestKVReadsSeeOwnWrites(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:groups:" + uniq("own")
	res := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{
		kvGet(p+"b", p+"a"),
		{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: p},
		kvPut(p+"b", "B", nil),
		kvPut(p+"a", "A", nil),
	}))
	if len(res[0].Rows) != 2 || res[0].Rows[0].Key != p+"a" || res[0].Rows[1].Key != p+"b" {
		t.Fatalf("getMany rows (byte order, own writes): %+v", res[0])
	}
	if len(res[1].Rows) != 2 || res[1].Truncated || res[1].NextAfter != nil {
		t.Fatalf("getPrefix: %+v", res[1])
	}
	if res[0].Rows[0].Version != res[3].Version || res[0].Rows[1].Version != res[2].Version {
		t.Fatal("read versions differ from the writes' versions")
	}
}

// getPrefix paging with after / limit / truncated / nextAfter, keysOnly,
// limit clamping (never refused).
func TestKVPrefixPaging(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:topiccfg:" + uniq("page") + "."
	var ops []queen.KVOp
	for i := 0; i < 5; i++ {
		ops = append(ops, kvPut(fmt.Sprintf("%s%d", p, i), i, nil))
	}
	ops = append(ops, kvPut(p[:len(p)-1]+"-outside", 0, nil))
	must[[]queen.KVResult](t)(c.KV(ctx, ops))
	var keys []string
	after := ""
	for page := 0; page < 5; page++ {
		r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: p, Limit: 2, After: after}}))[0]
		for _, row := range r.Rows {
			keys = append(keys, row.Key)
		}
		if !r.Truncated {
			if r.NextAfter != nil {
				t.Fatalf("last page with nextAfter %q", *r.NextAfter)
			}
			break
		}
		if r.NextAfter == nil || *r.NextAfter != r.Rows[len(r.Rows)-1].Key || len(r.Rows) != 2 {
			t.Fatalf("page %d: %+v", page, r)
		}
		after = *r.NextAfter
	}
	if strings.Join(keys, ",") != fmt.Sprintf("%s0,%s1,%s2,%s3,%s4", p, p, p, p, p) {
		t.Fatalf("paged keys %v", keys)
	}
	r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: p, KeysOnly: true, After: p + "2"}}))[0]
	if len(r.Rows) != 2 || r.Rows[0].Key != p+"3" || !isNull(r.Rows[0].Value) || r.Rows[0].Version == 0 {
		t.Fatalf("keysOnly after %s2: %+v", p, r)
	}
	for _, limit := range []string{"0", "-5", "5000"} {
		resp := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[{"op":"getPrefix","ns":"queen-kafka","prefix":"`+p+`","limit":`+limit+`}]}`)
		if resp.Status != 200 {
			t.Fatalf("limit %s refused: %d %s", limit, resp.Status, resp.Body)
		}
	}
	resp := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[{"op":"getPrefix","ns":"queen-kafka","prefix":"`+p+`","limit":0}]}`)
	if rows := resp.json(t)["results"].([]any)[0].(map[string]any)["rows"].([]any); len(rows) != 1 {
		t.Fatalf("limit 0 clamps to 1: %d rows", len(rows))
	}
}

// The 4 MiB read budget: rows past it are in neither rows nor missing, the
// straddling row is included, and the op says truncated.
func TestKVReadBudget(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:group:" + uniq("budget") + ":t:"
	val := strings.Repeat("v", 60000)
	var keys []string
	for i := 0; i < 80; i++ { // 80 × 60 kB = 4.8 MB > 4 MiB
		keys = append(keys, fmt.Sprintf("%s%02d", p, i))
	}
	for i := 0; i < len(keys); i += 20 {
		var ops []queen.KVOp
		for _, k := range keys[i : i+20] {
			ops = append(ops, kvPut(k, val, nil))
		}
		must[[]queen.KVResult](t)(c.KV(ctx, ops))
	}
	absent := p + "zz-absent"
	r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(append(keys, absent)...)}))[0]
	if !r.Truncated {
		t.Fatalf("4.8 MB read not truncated (%d rows)", len(r.Rows))
	}
	size := 0
	for _, row := range r.Rows {
		size += len(row.Value)
	}
	if size < 4<<20 || len(r.Rows) >= len(keys) {
		t.Fatalf("%d rows, %d bytes: the straddling row must be included and the rest cut", len(r.Rows), size)
	}
	for _, m := range r.Missing {
		if m != absent {
			t.Fatalf("a key cut by the budget is reported missing: %s", m)
		}
	}
	pr := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: p, Limit: 1000}}))[0]
	if !pr.Truncated || len(pr.Rows) >= len(keys) || pr.NextAfter == nil || *pr.NextAfter != pr.Rows[len(pr.Rows)-1].Key {
		t.Fatalf("getPrefix over budget: %d rows truncated %v", len(pr.Rows), pr.Truncated)
	}
}

// Expiry is mandatory, honoured at once, and never inherited.
func TestKVExpiry(t *testing.T) {
	c := shared.client(t, "")
	k := "qk:node:" + uniq("ttl") + ":1"
	r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: k, Value: rawJSON(1), TTLSeconds: 1, Expect: i64(0)}}))[0]
	if !r.Applied {
		t.Fatalf("%+v", r)
	}
	g := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(k)}))[0]
	if len(g.Rows) != 1 || g.Rows[0].ExpiresAt == nil {
		t.Fatalf("ttl row: %+v", g)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		g = must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(k)}))[0]
		if len(g.Rows) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a ttlSeconds:1 row is still live after 5 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(g.Missing) != 1 {
		t.Fatalf("expired row not reported missing: %+v", g)
	}
	// An expired row counts as absent: expect 0 wins, expect N is "absent".
	if r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(k, 2, i64(r.Version))}))[0]; r.Applied || r.Reason != queen.ReasonAbsent {
		t.Fatalf("expect N on expired: %+v", r)
	}
	if r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(k, 2, i64(0))}))[0]; !r.Applied {
		t.Fatalf("expect 0 on expired: %+v", r)
	}
	// The forever put replaced the ttl: it does not expire.
	if g := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(k)}))[0]; len(g.Rows) != 1 || g.Rows[0].ExpiresAt != nil {
		t.Fatalf("a put inherited the previous expiry: %+v", g)
	}
}

// Concurrent expect:0 claims: exactly one winner.
func TestKVClaimRace(t *testing.T) {
	c := shared.client(t, "")
	k := queen.TxnKey(uniq("race"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := c.KV(ctx, []queen.KVOp{kvPut(k, i, i64(0))})
			if err != nil {
				t.Error(err)
				return
			}
			if res[0].Applied {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d winners", wins)
	}
}

// Every validation code of §7.4, with nothing of the call written.
func TestKVValidation(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:group:" + uniq("val") + ":"
	witness := `{"op":"put","ns":"queen-kafka","key":"` + p + `w","value":1,"forever":true}`
	longKey := "qk:" + strings.Repeat("k", 510)
	bigValue := `"` + strings.Repeat("v", 65536) + `"`
	cases := []struct {
		name, op string
		status   int
		reason   string
	}{
		{"unknown op", `{"op":"frobnicate","ns":"queen-kafka","key":"qk:x"}`, 400, "kv_unknown_op"},
		{"op missing", `{"ns":"queen-kafka","key":"qk:x"}`, 400, "kv_unknown_op"},
		{"bad namespace", `{"op":"getMany","ns":"Queen","keys":["qk:x"]}`, 400, "kv_bad_namespace"},
		{"namespace missing", `{"op":"getMany","keys":["qk:x"]}`, 400, "kv_bad_namespace"},
		{"namespace too long", `{"op":"getMany","ns":"` + strings.Repeat("a", 65) + `","keys":["qk:x"]}`, 400, "kv_bad_namespace"},
		{"empty key", `{"op":"put","ns":"queen-kafka","key":"","value":1,"forever":true}`, 400, "kv_bad_key"},
		{"key missing", `{"op":"delete","ns":"queen-kafka"}`, 400, "kv_bad_key"},
		{"NUL in key", `{"op":"put","ns":"queen-kafka","key":"qk:a\u0000b","value":1,"forever":true}`, 400, "kv_bad_key"},
		{"NUL in getMany key", `{"op":"getMany","ns":"queen-kafka","keys":["qk:a\u0000"]}`, 400, "kv_bad_key"},
		{"tenant field", `{"op":"getMany","ns":"queen-kafka","keys":["qk:x"],"tenant":"t"}`, 400, "kv_tenant_not_an_input"},
		{"tenantId field", `{"op":"getMany","ns":"queen-kafka","keys":["qk:x"],"tenantId":"t"}`, 400, "kv_tenant_not_an_input"},
		{"_tenant field", `{"op":"getMany","ns":"queen-kafka","keys":["qk:x"],"_tenant":"t"}`, 400, "kv_tenant_not_an_input"},
		{"no expiry", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1}`, 400, "kv_expiry_not_specified"},
		{"forever false", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1,"forever":false}`, 400, "kv_expiry_not_specified"},
		{"both expiries", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1,"forever":true,"ttlSeconds":5}`, 400, "kv_expiry_not_specified"},
		{"ttl zero", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1,"ttlSeconds":0}`, 400, "kv_bad_ttl"},
		{"ttl negative", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1,"ttlSeconds":-1}`, 400, "kv_bad_ttl"},
		{"negative expect", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":1,"forever":true,"expect":-1}`, 400, "kv_bad_expect"},
		{"putIfAbsent expect", `{"op":"putIfAbsent","ns":"queen-kafka","key":"qk:x","value":1,"forever":true,"expect":3}`, 400, "kv_bad_expect"},
		{"prefix missing", `{"op":"getPrefix","ns":"queen-kafka"}`, 400, "kv_prefix_required"},
		{"prefix empty", `{"op":"getPrefix","ns":"queen-kafka","prefix":""}`, 400, "kv_prefix_required"},
		{"duplicate write", `{"op":"put","ns":"queen-kafka","key":"` + p + `w","value":2,"forever":true}`, 400, "kv_duplicate_key_in_call"},
		{"key too large", `{"op":"put","ns":"queen-kafka","key":"` + longKey + `","value":1,"forever":true}`, 413, "kv_key_too_large"},
		{"getMany key too large", `{"op":"getMany","ns":"queen-kafka","keys":["` + longKey + `"]}`, 413, "kv_key_too_large"},
		{"value too large", `{"op":"put","ns":"queen-kafka","key":"qk:x","value":` + bigValue + `,"forever":true}`, 413, "kv_value_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[`+witness+`,`+tc.op+`]}`)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			m := r.json(t)
			wantErr := "kv_bad_request"
			if tc.status == 413 {
				wantErr = "payload_too_large"
			}
			if m["error"] != wantErr || m["reason"] != tc.reason {
				t.Fatalf("body %s; want error %q reason %q", r.Body, wantErr, tc.reason)
			}
		})
	}
	// Whole-body refusals.
	for name, body := range map[string]string{
		"bad json": `{"operations":[`, "string": `"x"`, "number": `5`, "operations object": `{"operations":{}}`,
		"no operations": `{"ops":[]}`, "op not object": `{"operations":[5]}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/kv", "", body)
			if m := r.json(t); r.Status != 400 || m["error"] != "kv_bad_request" || m["reason"] != "kv_bad_body" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	// Limits: 257 ops, 1025 keys (getMany counts its keys; getPrefix its limit).
	ops := make([]string, 257)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"getMany","ns":"queen-kafka","keys":["qk:%d"]}`, i)
	}
	r := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[`+strings.Join(ops, ",")+`]}`)
	if m := r.json(t); r.Status != 400 || m["reason"] != "kv_too_many_ops" {
		t.Fatalf("257 ops: %d %s", r.Status, r.Body)
	}
	if r := shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[`+strings.Join(ops[:256], ",")+`]}`); r.Status != 200 {
		t.Fatalf("256 ops: %d", r.Status)
	}
	keys := make([]string, 1025)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"qk:%d"`, i)
	}
	r = shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[{"op":"getMany","ns":"queen-kafka","keys":[`+strings.Join(keys, ",")+`]}]}`)
	if m := r.json(t); r.Status != 400 || m["reason"] != "kv_too_many_keys" {
		t.Fatalf("1025 keys: %d %s", r.Status, r.Body)
	}
	r = shared.raw(t, "POST", "/api/v1/kv", "", `{"operations":[{"op":"getMany","ns":"queen-kafka","keys":[`+strings.Join(keys[:25], ",")+`]},{"op":"getPrefix","ns":"queen-kafka","prefix":"qk:","limit":1000}]}`)
	if m := r.json(t); r.Status != 400 || m["reason"] != "kv_too_many_keys" {
		t.Fatalf("25 keys + getPrefix limit 1000: %d %s", r.Status, r.Body)
	}
	// Nothing of any refused call was written.
	if g := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(p + "w")}))[0]; len(g.Rows) != 0 {
		t.Fatal("a refused call wrote its valid op")
	}
	// The typed client maps 400 and 413.
	_, err := c.KV(ctx, []queen.KVOp{kvPut(p+"x", 1, nil), kvPut(p+"x", 2, nil)})
	mustKind(t, err, queen.KindBadRequest)
	_, err = c.KV(ctx, []queen.KVOp{kvPut(longKey, 1, nil)})
	mustKind(t, err, queen.KindTooLarge)
}
