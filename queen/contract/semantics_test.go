package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// §3 retention: retentionEnabled + retentionSeconds raises logStartOffset,
// never renumbers; retentionEnabled false keeps everything whatever
// retentionSeconds says.
func TestRetention(t *testing.T) {
	c := shared.client(t, "")
	kept, swept := uniq("kept"), uniq("swept")
	must[*queen.ConfigureResult](t)(c.Configure(ctx, kept, map[string]any{"retentionEnabled": false, "retentionSeconds": 1}))
	must[*queen.ConfigureResult](t)(c.Configure(ctx, swept, map[string]any{"retentionEnabled": true, "retentionSeconds": 1}))
	pushN(t, c, kept, "0", 3)
	pushN(t, c, swept, "0", 3)
	deadline := time.Now().Add(8 * time.Second)
	var f queen.FetchResult
	for {
		f = fetchOne(t, c, swept, "0", 3)
		if f.LogStartOffset > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retentionSeconds 1 swept nothing in 8 s: %+v", f)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if f.HighWatermark != 3 || f.LogStartOffset > 3 {
		t.Fatalf("bounds after the sweep: %+v", f)
	}
	if old := fetchOne(t, c, swept, "0", 0); f.LogStartOffset > 0 && (old.Error != queen.FetchErrOutOfRange || old.LogStartOffset != f.LogStartOffset || old.HighWatermark != 3) {
		t.Fatalf("read below logStartOffset: %+v", old)
	}
	if off := pushN(t, c, swept, "0", 1); off[0] != 3 {
		t.Fatalf("offset renumbered after retention: %d", off[0])
	}
	if k := fetchOne(t, c, kept, "0", 0); k.LogStartOffset != 0 || len(k.Records) != 3 {
		t.Fatalf("retentionEnabled false expired records: %+v", k)
	}
}

// Fetch ts is the commit time of the push: §0 format, near now, never
// decreasing along a partition.
func TestFetchRecordTime(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("ts")
	before := time.Now().Add(-2 * time.Second)
	pushN(t, c, q, "0", 2)
	time.Sleep(20 * time.Millisecond)
	pushN(t, c, q, "0", 1)
	after := time.Now().Add(2 * time.Second)
	f := fetchOne(t, c, q, "0", 0)
	var prev time.Time
	for _, r := range f.Records {
		ts := queen.ParseTS(r.TS)
		if !tsFormat.MatchString(r.TS) || ts.Before(before) || ts.After(after) || ts.Before(prev) {
			t.Fatalf("record %d ts %q (window %v–%v, previous %v)", r.Offset, r.TS, before, after, prev)
		}
		prev = ts
	}
	if f.Records[0].TS != f.Records[1].TS || f.Records[2].TS == f.Records[0].TS {
		t.Fatalf("ts must be per push: %q %q %q", f.Records[0].TS, f.Records[1].TS, f.Records[2].TS)
	}
	// A record without t takes ts as its timestamp through DecodePayload.
	rec := envelope.DecodePayload(f.Records[2].Payload, queen.ParseTS(f.Records[2].TS))
	if rec.Timestamp != queen.ParseTS(f.Records[2].TS).UnixMilli() {
		t.Fatalf("timestamp %d", rec.Timestamp)
	}
}

// The remaining KV shapes: get (found / not found), repeated read keys,
// a delete and a put of one key in one call.
func TestKVGetAndRepeats(t *testing.T) {
	c := shared.client(t, "")
	k := "qk:groups:" + uniq("get")
	v := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(k, "x", nil)}))[0].Version
	res := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{
		{Op: queen.OpGet, NS: queen.Namespace, Key: k},
		{Op: queen.OpGet, NS: queen.Namespace, Key: k + "-absent"},
		kvGet(k, k, k+"-absent"),
	}))
	if res[0].Found == nil || !*res[0].Found || res[0].Key != k || res[0].Version != v || string(res[0].Value) != `"x"` {
		t.Fatalf("get found: %+v", res[0])
	}
	if res[1].Found == nil || *res[1].Found {
		t.Fatalf("get absent: %+v", res[1])
	}
	if len(res[2].Missing) == 0 || len(res[2].Rows) == 0 {
		t.Fatalf("repeated read keys: %+v", res[2])
	}
	_, err := c.KV(ctx, []queen.KVOp{kvPut(k, "y", nil), {Op: queen.OpDelete, NS: queen.Namespace, Key: k}})
	mustKind(t, err, queen.KindBadRequest)
	// The same key in two namespaces is two keys.
	must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(k, 1, nil), {Op: queen.OpPut, NS: "other-ns", Key: k, Value: rawJSON(2), Forever: true}}))
}

// §8 item forms: a push op without items is itself one item, "data" is an
// alias of "payload", an explicit "" partition is not defaulted, and a
// missing operations list is fine when kv is non-empty.
func TestTransactionItemForms(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("forms")
	body := `{"operations":[
	  {"type":"push","queue":"` + q + `","partition":"0","payload":{"single":1}},
	  {"type":"push","items":[{"queue":"` + q + `","partition":"0","data":{"data":2}},{"queue":"` + q + `","partition":"","payload":3},{"queue":"` + q + `","payload":4}]}],
	 "kv":[]}`
	r := shared.raw(t, "POST", "/api/v1/transaction", "", body)
	if m := r.json(t); r.Status != 200 || m["success"] != true || len(m["results"].([]any)) != 4 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	f := fetchOne(t, c, q, "0", 0)
	if len(f.Records) != 2 || string(f.Records[0].Payload) != `{"single":1}` || string(f.Records[1].Payload) != `{"data":2}` {
		t.Fatalf("partition 0: %+v", f)
	}
	if e := fetchOne(t, c, q, "", 0); len(e.Records) != 1 || string(e.Records[0].Payload) != "3" {
		t.Fatalf(`explicit "" partition: %+v`, e)
	}
	if d := fetchOne(t, c, q, "Default", 0); len(d.Records) != 1 || string(d.Records[0].Payload) != "4" {
		t.Fatalf("Default partition: %+v", d)
	}
	r = shared.raw(t, "POST", "/api/v1/transaction", "", `{"kv":[{"op":"put","ns":"queen-kafka","key":"qk:txn:`+q+`","value":1,"forever":true}]}`)
	if m := r.json(t); r.Status != 200 || m["success"] != true {
		t.Fatalf("kv without operations: %d %s", r.Status, r.Body)
	}
	r = shared.raw(t, "POST", "/api/v1/transaction", "", `{"operations":[],"kv":[{"op":"getMany","ns":"queen-kafka","keys":["qk:x"],"tenant":"t"}]}`)
	if r.Status != 400 || r.json(t)["success"] != false {
		t.Fatalf("tenant field in the rider: %d %s", r.Status, r.Body)
	}
}

// §3: an option refusal is 400 with "invalid" naming the option.
func TestConfigureOptionRefusal(t *testing.T) {
	q := uniq("optref")
	r := shared.raw(t, "POST", "/api/v1/configure", "", `{"queue":"`+q+`","retentionSeconds":"forever"}`)
	if m := r.json(t); r.Status != 400 || m["invalid"] != "retentionSeconds" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// Fetch maxBytes is clamped to [1, 8 MiB], never refused; minBytes < 0 is 0.
func TestFetchMaxBytesClamp(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("clamp")
	pushN(t, c, q, "0", 3)
	for _, mb := range []string{"-5", "0", "999999999999"} {
		r := shared.raw(t, "POST", "/api/v1/fetch", "", `{"entries":[{"queue":"`+q+`","partition":"0","offset":0,"maxBytes":`+mb+`}],"minBytes":-3}`)
		if r.Status != 200 {
			t.Fatalf("maxBytes %s: %d %s", mb, r.Status, r.Body)
		}
		n := len(r.json(t)["entries"].([]any)[0].(map[string]any)["records"].([]any))
		// An explicit 0 or negative clamps to 1 (the first record is still
		// delivered); only an absent maxBytes means the 1 MiB default.
		if (mb == "999999999999" && n != 3) || (mb != "999999999999" && n != 1) {
			t.Fatalf("maxBytes %s: %d records", mb, n)
		}
	}
}

// SIGTERM: the process exits 0 promptly even with a fetch parked.
func TestGracefulSIGTERM(t *testing.T) {
	p := startDev(t, "", nil)
	c := p.client(t, "")
	q := uniq("term")
	pushN(t, c, q, "0", 1)
	parked := make(chan error, 1)
	go func() {
		_, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q, Partition: "0", Offset: 1}}, MaxWaitMs: 30000, MinBytes: 1})
		parked <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if msg := p.stop(); msg != "" {
		t.Fatal(msg)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("SIGTERM took %v with a parked fetch", el)
	}
	if code := p.ExitCode(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Out.String())
	}
	select {
	case <-parked:
	case <-time.After(5 * time.Second):
		t.Fatal("parked fetch never answered")
	}
	if !strings.Contains(p.Out.String(), "listening") {
		t.Fatalf("no boot line:\n%s", p.Out.String())
	}
}
