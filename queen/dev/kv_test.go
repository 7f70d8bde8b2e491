package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

func i64(v int64) *int64 { return &v }

func put(key, value string) queen.KVOp {
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: json.RawMessage(value), Forever: true}
}

// The §7 example exchange: versions follow ascending key order.
func TestKVContractExample(t *testing.T) {
	e := newEnv(t, Options{})
	e.b.mu.Lock()
	e.b.st.kvSeq = 91003
	e.b.mu.Unlock()
	if _, err := e.qc.KV(ctx(t), []queen.KVOp{put("qk:fence:billing", `{"node":1}`)}); err != nil {
		t.Fatal(err)
	}
	st, raw := e.post("/api/v1/kv", `{"operations":[
 {"op":"put","ns":"queen-kafka","key":"qk:fence:billing","value":{"node":2,"incarnation":"3f2a","generation":7,"ts":1787824800123},"forever":true,"expect":91004,"required":true},
 {"op":"put","ns":"queen-kafka","key":"qk:group:billing:orders:3","value":{"offset":43,"metadata":"","ts":1787824800123},"forever":true},
 {"op":"getMany","ns":"queen-kafka","keys":["qk:group:billing:orders:3","qk:group:billing:orders:4"]}]}`)
	v := wantStatus(t, st, raw, 200)
	r := field(v, "results")
	if field(r, 0, "applied") != true || num(field(r, 0, "version")) != 91005 || field(r, 0, "key") != "qk:fence:billing" || field(r, 0, "op") != "put" {
		t.Errorf("result 0: %v", field(r, 0))
	}
	if num(field(r, 1, "version")) != 91006 || num(field(r, 1, "index")) != 1 {
		t.Errorf("result 1: %v", field(r, 1))
	}
	if num(field(r, 2, "rows", 0, "version")) != 91006 || field(r, 2, "rows", 0, "expiresAt") != nil ||
		field(r, 2, "missing", 0) != "qk:group:billing:orders:4" || field(r, 2, "truncated") != false {
		t.Errorf("result 2: %v", field(r, 2))
	}
	if !strings.Contains(string(raw), `"value":{"offset":43,"metadata":"","ts":1787824800123},"version":91006,"expiresAt":null,"updatedAt":"`) {
		t.Errorf("row shape: %s", raw)
	}
}

func TestKVBareArrayAndEmpty(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/kv", `[{"op":"put","ns":"a","key":"k","value":null,"ttlSeconds":5}]`)
	v := wantStatus(t, st, raw, 200)
	if field(v, "results", 0, "applied") != true || field(v, "results", 0, "value") != nil {
		t.Errorf("bare array: %s", raw)
	}
	for _, body := range []string{`[]`, `{"operations":[]}`} {
		st, raw = e.post("/api/v1/kv", body)
		if st != 200 || string(raw) != `{"results":[]}` {
			t.Errorf("%s: %d %s", body, st, raw)
		}
	}
}

func TestKVRefusals(t *testing.T) {
	long := strings.Repeat("k", 513)
	big := `"` + strings.Repeat("v", kvMaxValue) + `"`
	w := func(extra string) string {
		return `{"op":"put","ns":"queen-kafka","key":"k","value":1,"forever":true` + extra + `}`
	}
	manyOps := make([]string, kvMaxOps+1)
	for i := range manyOps {
		manyOps[i] = fmt.Sprintf(`{"op":"get","ns":"a","key":"k%d"}`, i)
	}
	keys := make([]string, 1025)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d"`, i)
	}
	cases := []struct {
		name, body   string
		status       int
		code, reason string
	}{
		{"malformed", `{"operations":[`, 400, "kv_bad_request", "kv_bad_body"},
		{"operations missing", `{}`, 400, "kv_bad_request", "kv_bad_body"},
		{"operations object", `{"operations":{}}`, 400, "kv_bad_request", "kv_bad_body"},
		{"scalar body", `5`, 400, "kv_bad_request", "kv_bad_body"},
		{"op not object", `[5]`, 400, "kv_bad_request", "kv_bad_body"},
		{"unknown op", `[{"op":"upsert","ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_unknown_op"},
		{"op missing", `[{"ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_unknown_op"},
		{"bad ns upper", `[{"op":"get","ns":"Queen","key":"k"}]`, 400, "kv_bad_request", "kv_bad_namespace"},
		{"bad ns empty", `[{"op":"get","ns":"","key":"k"}]`, 400, "kv_bad_request", "kv_bad_namespace"},
		{"bad ns long", `[{"op":"get","ns":"` + strings.Repeat("a", 65) + `","key":"k"}]`, 400, "kv_bad_request", "kv_bad_namespace"},
		{"tenant", `[` + w(`,"tenant":"x"`) + `]`, 400, "kv_bad_request", "kv_tenant_not_an_input"},
		{"tenantId", `[` + w(`,"tenantId":"x"`) + `]`, 400, "kv_bad_request", "kv_tenant_not_an_input"},
		{"_tenant", `[{"op":"get","ns":"a","key":"k","_tenant":1}]`, 400, "kv_bad_request", "kv_tenant_not_an_input"},
		{"key empty", `[{"op":"get","ns":"a","key":""}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"key NUL", `[{"op":"get","ns":"a","key":"a\u0000b"}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"key missing", `[{"op":"delete","ns":"a"}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"key number", `[{"op":"get","ns":"a","key":5}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"getMany key bad", `[{"op":"getMany","ns":"a","keys":["a",""]}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"getMany keys missing", `[{"op":"getMany","ns":"a"}]`, 400, "kv_bad_request", "kv_bad_key"},
		{"no expiry", `[{"op":"put","ns":"a","key":"k","value":1}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
		{"forever false", `[{"op":"put","ns":"a","key":"k","value":1,"forever":false}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
		{"two expiries", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true,"ttlSeconds":5}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
		{"incr no expiry", `[{"op":"incr","ns":"a","key":"k","delta":1}]`, 400, "kv_bad_request", "kv_expiry_not_specified"},
		{"ttl zero", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":0}]`, 400, "kv_bad_request", "kv_bad_ttl"},
		{"ttl float", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":1.5}]`, 400, "kv_bad_request", "kv_bad_ttl"},
		{"expect negative", `[` + w(`,"expect":-1`) + `]`, 400, "kv_bad_request", "kv_bad_expect"},
		{"expect string", `[` + w(`,"expect":"3"`) + `]`, 400, "kv_bad_request", "kv_bad_expect"},
		{"putIfAbsent expect 3", `[{"op":"putIfAbsent","ns":"a","key":"k","value":1,"forever":true,"expect":3}]`, 400, "kv_bad_request", "kv_bad_expect"},
		{"incr with expect", `[{"op":"incr","ns":"a","key":"k","delta":1,"forever":true,"expect":0}]`, 400, "kv_bad_request", "kv_bad_expect"},
		{"check without expect", `[{"op":"check","ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_bad_expect"},
		{"prefix missing", `[{"op":"getPrefix","ns":"a"}]`, 400, "kv_bad_request", "kv_prefix_required"},
		{"prefix empty", `[{"op":"getPrefix","ns":"a","prefix":""}]`, 400, "kv_bad_request", "kv_prefix_required"},
		{"value missing", `[{"op":"put","ns":"a","key":"k","forever":true}]`, 400, "kv_bad_request", "kv_bad_body"},
		{"dup write", `[` + w(``) + `,{"op":"delete","ns":"queen-kafka","key":"k"}]`, 400, "kv_bad_request", "kv_duplicate_key_in_call"},
		{"too many ops", `[` + strings.Join(manyOps, ",") + `]`, 400, "kv_bad_request", "kv_too_many_ops"},
		{"too many keys", `[{"op":"getMany","ns":"a","keys":[` + strings.Join(keys, ",") + `]}]`, 400, "kv_bad_request", "kv_too_many_keys"},
		{"prefix limits count", `[` + strings.Repeat(`{"op":"getPrefix","ns":"a","prefix":"p","limit":1000},`, 2) + `{"op":"get","ns":"a","key":"k"}]`, 400, "kv_bad_request", "kv_too_many_keys"},
		{"key too long", `[{"op":"get","ns":"a","key":"` + long + `"}]`, 413, "payload_too_large", "kv_key_too_large"},
		{"getMany key too long", `[{"op":"getMany","ns":"a","keys":["` + long + `"]}]`, 413, "payload_too_large", "kv_key_too_large"},
		{"value too large", `[{"op":"put","ns":"a","key":"k","value":` + big + `,"forever":true}]`, 413, "payload_too_large", "kv_value_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			before := e.b.Mutations()
			// A valid write first in the call proves nothing is partly written.
			body := c.body
			if strings.HasPrefix(body, "[{") && !strings.Contains(body, `"key":"zz-first"`) {
				body = `[{"op":"put","ns":"a","key":"zz-first","value":1,"forever":true},` + body[1:]
			}
			st, raw := e.post("/api/v1/kv", body)
			v := wantStatus(t, st, raw, c.status)
			if field(v, "error") != c.code || field(v, "reason") != c.reason {
				t.Errorf("got %s, want error %s reason %s", raw, c.code, c.reason)
			}
			if d, _ := field(v, "detail").(string); d == "" {
				t.Errorf("no detail: %s", raw)
			}
			if e.b.Mutations() != before {
				t.Errorf("refused call wrote something")
			}
		})
	}
}

func TestKVLimitsAtCeiling(t *testing.T) {
	e := newEnv(t, Options{})
	ops := make([]queen.KVOp, kvMaxOps)
	for i := range ops {
		ops[i] = put(fmt.Sprintf("k%03d", i), `1`)
	}
	if _, err := e.qc.KV(ctx(t), ops); err != nil {
		t.Fatalf("256 ops: %v", err)
	}
	val := `"` + strings.Repeat("v", kvMaxValue-2) + `"`
	key := strings.Repeat("k", 512)
	if _, err := e.qc.KV(ctx(t), []queen.KVOp{put(key, val)}); err != nil {
		t.Fatalf("512-byte key with 65536-byte value: %v", err)
	}
	// The value limit counts the serialized (compacted) value.
	spaced := `[ 1,   2 ]` + strings.Repeat(" ", kvMaxValue)
	if _, err := e.qc.KV(ctx(t), []queen.KVOp{put("sp", spaced)}); err != nil {
		t.Fatalf("whitespace must not count: %v", err)
	}
}

func TestKVExpectSemantics(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	res, err := e.qc.KV(c, []queen.KVOp{put("a", `"v1"`)})
	if err != nil {
		t.Fatal(err)
	}
	v1 := res[0].Version
	op := func(o queen.KVOp, expect *int64) queen.KVOp { o.Expect = expect; return o }
	del := queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: "a"}
	cases := []struct {
		name    string
		op      queen.KVOp
		applied bool
		reason  string
		value   string
		version int64 // -1: new version (> v1)
	}{
		{"expect0 exists", op(put("a", `"x"`), i64(0)), false, "exists", `"v1"`, v1},
		{"expectN absent", op(put("b", `"x"`), i64(5)), false, "absent", "", 0},
		{"expectN wrong", op(put("a", `"x"`), i64(v1+100)), false, "version", `"v1"`, v1},
		{"expect0 absent creates", op(put("b", `"b1"`), i64(0)), true, "", `"b1"`, -1},
		{"putIfAbsent exists", queen.KVOp{Op: queen.OpPutIfAbsent, NS: queen.Namespace, Key: "a", Value: json.RawMessage(`1`), Forever: true}, false, "exists", `"v1"`, v1},
		{"delete expect0 on live", op(del, i64(0)), false, "exists", `"v1"`, v1},
		{"delete expectN wrong", op(del, i64(v1+1)), false, "version", `"v1"`, v1},
		{"delete absent", queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: "zz"}, false, "absent", "", 0},
		{"delete expect0 absent", queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: "zz", Expect: i64(0)}, true, "", "", 0},
		{"check ok", queen.KVOp{Op: queen.OpCheck, NS: queen.Namespace, Key: "a", Expect: i64(v1)}, true, "", `"v1"`, v1},
		{"check wrong", queen.KVOp{Op: queen.OpCheck, NS: queen.Namespace, Key: "a", Expect: i64(0)}, false, "exists", `"v1"`, v1},
		{"expectN matches", op(put("a", `"v2"`), i64(v1)), true, "", `"v2"`, -1},
	}
	for _, cs := range cases {
		res, err := e.qc.KV(c, []queen.KVOp{cs.op})
		if err != nil {
			t.Fatalf("%s: %v", cs.name, err)
		}
		r := res[0]
		if r.Applied != cs.applied || r.Reason != cs.reason || string(r.Value) != cs.value && !(cs.value == "" && string(r.Value) == "null") {
			t.Errorf("%s: applied %v reason %q value %s", cs.name, r.Applied, r.Reason, r.Value)
		}
		if (cs.version >= 0 && r.Version != cs.version) || (cs.version < 0 && r.Version <= v1) {
			t.Errorf("%s: version %d", cs.name, r.Version)
		}
	}
	// delete with the live version removes and echoes the removed row.
	get, _ := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "a"}})
	res, err = e.qc.KV(c, []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: "a", Expect: i64(get[0].Version)}})
	if err != nil || !res[0].Applied || string(res[0].Value) != `"v2"` || res[0].Version != get[0].Version {
		t.Fatalf("delete expectN: %+v %v", res, err)
	}
	get, _ = e.qc.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "a"}})
	if get[0].Found == nil || *get[0].Found {
		t.Errorf("deleted key still found: %+v", get[0])
	}
}

// Raw shape of a verdict: applied:false, reason, current value/version.
func TestKVVerdictShape(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/kv", `[{"op":"put","ns":"a","key":"k","value":1,"forever":true,"expect":7}]`)
	wantStatus(t, st, raw, 200)
	want := `{"results":[{"index":0,"op":"put","applied":false,"key":"k","value":null,"version":0,"reason":"absent"}]}`
	if string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}
}

func TestKVRequiredRollsBackWholeCall(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	res, err := e.qc.KV(c, []queen.KVOp{put("fence", `{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	fv := res[0].Version
	before := e.b.Mutations()
	lost := put("fence", `{"n":2}`)
	lost.Expect, lost.Required = i64(fv+1), true
	_, err = e.qc.KV(c, []queen.KVOp{put("a-first", `1`), put("zz-last", `2`), lost, {Op: queen.OpDelete, NS: queen.Namespace, Key: "fence-other"}})
	var pe *queen.PreconditionError
	if !errors.As(err, &pe) {
		t.Fatalf("want PreconditionError, got %v", err)
	}
	if pe.Index != 2 || pe.KVReason != "version" || pe.Version != fv || string(pe.Value) != `{"n":1}` {
		t.Errorf("precondition %+v", pe)
	}
	if e.b.Mutations() != before {
		t.Errorf("rolled-back call left mutations")
	}
	got, _ := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{"a-first", "zz-last"}}})
	if len(got[0].Rows) != 0 {
		t.Errorf("rolled-back writes visible: %+v", got[0].Rows)
	}
	// The raw body: no results key, ok:false.
	st, raw := e.post("/api/v1/kv", `[{"op":"put","ns":"queen-kafka","key":"fence","value":1,"forever":true,"expect":0,"required":true}]`)
	wantStatus(t, st, raw, 200)
	want := fmt.Sprintf(`{"reason":"kv_precondition","ok":false,"failedIndex":0,"kvReason":"exists","version":%d,"value":{"n":1}}`, fv)
	if string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}
	// A version issued inside a rolled-back call is never seen, and the next
	// applied write still gets a fresh one.
	res, _ = e.qc.KV(c, []queen.KVOp{put("n", `1`)})
	if res[0].Version <= fv {
		t.Errorf("version %d not after %d", res[0].Version, fv)
	}
}

// Single-key ops apply in (ns, key) byte order, reads last and see the
// call's writes; results come back by input position.
func TestKVApplyOrder(t *testing.T) {
	e := newEnv(t, Options{})
	res, err := e.qc.KV(ctx(t), []queen.KVOp{
		{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{"c", "a", "b"}},
		put("c", `3`), put("a", `1`),
		{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "b"},
		{Op: queen.OpPut, NS: "aaa", Key: "z", Value: json.RawMessage(`0`), Forever: true},
		put("b", `2`),
	})
	if err != nil {
		t.Fatal(err)
	}
	// ns "aaa" < "queen-kafka", then keys a < b < c.
	if !(res[4].Version < res[2].Version && res[2].Version < res[5].Version && res[5].Version < res[1].Version) {
		t.Errorf("versions not in key order: aaa/z %d a %d b %d c %d", res[4].Version, res[2].Version, res[5].Version, res[1].Version)
	}
	if len(res[0].Rows) != 3 || res[0].Rows[0].Key != "a" || res[0].Rows[2].Key != "c" || len(res[0].Missing) != 0 {
		t.Errorf("getMany before writes in input order must see them: %+v", res[0])
	}
	if len(res[3].Rows) != 1 || res[3].Rows[0].Key != "b" {
		t.Errorf("getPrefix: %+v", res[3])
	}
}

func TestKVExpiry(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	c := ctx(t)
	ttl := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: "node", Value: json.RawMessage(`1`), TTLSeconds: 10}
	res, err := e.qc.KV(c, []queen.KVOp{ttl})
	if err != nil {
		t.Fatal(err)
	}
	st, raw := e.post("/api/v1/kv", `[{"op":"getMany","ns":"queen-kafka","keys":["node"]}]`)
	v := wantStatus(t, st, raw, 200)
	if field(v, "results", 0, "rows", 0, "expiresAt") != "2026-08-28T09:15:10.123456Z" {
		t.Errorf("expiresAt: %s", raw)
	}
	clk.Advance(9 * time.Second)
	got, _ := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "node"}})
	if !*got[0].Found {
		t.Fatal("expired early")
	}
	clk.Advance(time.Second)
	got, _ = e.qc.KV(c, []queen.KVOp{
		{Op: queen.OpGet, NS: queen.Namespace, Key: "node"},
		{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{"node"}},
		{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "no"},
	})
	if *got[0].Found || len(got[1].Rows) != 0 || len(got[1].Missing) != 1 || len(got[2].Rows) != 0 {
		t.Errorf("expired row returned: %+v", got)
	}
	// An expired row counts as absent: expect 0 wins, expect N is "absent".
	old := ttl
	old.Expect = i64(res[0].Version)
	got, _ = e.qc.KV(c, []queen.KVOp{old})
	if got[0].Applied || got[0].Reason != "absent" {
		t.Errorf("expect N on expired: %+v", got[0])
	}
	claim := ttl
	claim.Expect = i64(0)
	got, _ = e.qc.KV(c, []queen.KVOp{claim})
	if !got[0].Applied {
		t.Errorf("expect 0 on expired: %+v", got[0])
	}
	// A put never inherits the previous expiry.
	if _, err := e.qc.KV(c, []queen.KVOp{put("node", `2`)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	got, _ = e.qc.KV(c, []queen.KVOp{{Op: queen.OpGet, NS: queen.Namespace, Key: "node"}})
	if !*got[0].Found {
		t.Error("forever put inherited a ttl")
	}
	e.b.Sweep()
}

func TestKVGetPrefixPaging(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	var ops []queen.KVOp
	for i := 0; i < 25; i++ {
		ops = append(ops, put(fmt.Sprintf("qk:p:%02d", i), fmt.Sprintf(`%d`, i)))
	}
	ops = append(ops, put("qk:o:x", `0`), put("qk:q:x", `0`))
	if _, err := e.qc.KV(c, ops); err != nil {
		t.Fatal(err)
	}
	var keys []string
	after := ""
	for page := 0; page < 10; page++ {
		res, err := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "qk:p:", Limit: 10, After: after}})
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		for _, row := range r.Rows {
			keys = append(keys, row.Key)
		}
		if !r.Truncated {
			if r.NextAfter != nil {
				t.Errorf("nextAfter %q on the last page", *r.NextAfter)
			}
			break
		}
		if r.NextAfter == nil || *r.NextAfter != r.Rows[len(r.Rows)-1].Key {
			t.Fatalf("page %d nextAfter %v", page, r.NextAfter)
		}
		after = *r.NextAfter
	}
	if len(keys) != 25 || keys[0] != "qk:p:00" || keys[24] != "qk:p:24" {
		t.Errorf("paged keys %v", keys)
	}
	// keysOnly rows carry no value; limit clamps, never refuses.
	st, raw := e.post("/api/v1/kv", `[{"op":"getPrefix","ns":"queen-kafka","prefix":"qk:p:","keysOnly":true,"limit":0},{"op":"getPrefix","ns":"queen-kafka","prefix":"qk:p:","limit":5000}]`)
	v := wantStatus(t, st, raw, 200)
	if rows := field(v, "results", 0, "rows").([]any); len(rows) != 1 || field(rows[0], "value") != nil || field(v, "results", 0, "nextAfter") != "qk:p:00" {
		t.Errorf("keysOnly/limit 0: %s", raw)
	}
	if rows := field(v, "results", 1, "rows").([]any); len(rows) != 25 || field(v, "results", 1, "truncated") != false {
		t.Errorf("limit 5000: %d rows", len(rows))
	}
}

// At most 4 MiB of values per call: the straddling row is included, later
// rows are cut (in neither rows nor missing) and the op says truncated.
func TestKVReadBudget(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	val := `"` + strings.Repeat("v", 60000) + `"`
	var ops []queen.KVOp
	for i := 0; i < 80; i++ { // 80 × 60 KB = 4.8 MB
		ops = append(ops, put(fmt.Sprintf("r%02d", i), val))
	}
	if _, err := e.qc.KV(c, ops); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 80)
	for i := range keys {
		keys[i] = fmt.Sprintf("r%02d", i)
	}
	res, err := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: keys}, {Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(res[0].Rows)
	want := (kvReadBudget + 60001) / 60002
	if n != want || !res[0].Truncated || len(res[0].Missing) != 0 {
		t.Errorf("getMany: %d rows (want %d) truncated %v missing %d", n, want, res[0].Truncated, len(res[0].Missing))
	}
	if len(res[1].Rows) != 0 || !res[1].Truncated || res[1].NextAfter != nil {
		t.Errorf("getPrefix after the budget: %d rows truncated %v", len(res[1].Rows), res[1].Truncated)
	}
}

func TestKVIncr(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/kv", `[{"op":"incr","ns":"a","key":"n","delta":5,"forever":true}]`)
	v := wantStatus(t, st, raw, 200)
	if num(field(v, "results", 0, "value")) != 5 {
		t.Fatalf("incr absent: %s", raw)
	}
	st, raw = e.post("/api/v1/kv", `[{"op":"incr","ns":"a","key":"n","delta":-3,"forever":true,"min":0}]`)
	v = wantStatus(t, st, raw, 200)
	if num(field(v, "results", 0, "value")) != 2 {
		t.Fatalf("incr: %s", raw)
	}
	st, raw = e.post("/api/v1/kv", `[{"op":"incr","ns":"a","key":"n","delta":-3,"forever":true,"min":0}]`)
	v = wantStatus(t, st, raw, 200)
	if field(v, "results", 0, "applied") != false || field(v, "results", 0, "reason") != "bounds" || num(field(v, "results", 0, "value")) != 2 {
		t.Fatalf("incr below min: %s", raw)
	}
}

// A huge ttl does not overflow into "already expired".
func TestKVHugeTTL(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/kv", `[{"op":"put","ns":"a","key":"k","value":1,"ttlSeconds":9000000000000},{"op":"get","ns":"a","key":"k"}]`)
	v := wantStatus(t, st, raw, 200)
	if field(v, "results", 1, "found") != true {
		t.Errorf("huge ttl: %s", raw)
	}
}
