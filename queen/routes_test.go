package queen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

var bg = context.Background()

func TestRequestHeadersAndAs(t *testing.T) {
	f := newFake(t, answer(200, `{"queues":[]}`))
	base := f.client(t, "cfg-token")
	if _, err := base.Queues(bg); err != nil {
		t.Fatal(err)
	}
	r := f.last(t)
	if r.Method != "GET" || r.Path != "/api/v1/resources/queues" || r.RawPath != "/api/v1/resources/queues" {
		t.Fatalf("request %s %s (trailing slash of the URL must be stripped, no query)", r.Method, r.RawPath)
	}
	if r.Auth != "Bearer cfg-token" || r.ContentType != "application/json" {
		t.Fatalf("auth %q content-type %q", r.Auth, r.ContentType)
	}
	conn := base.As("conn-token", "tenant-a.example.com")
	if _, err := conn.Queues(bg); err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Auth != "Bearer conn-token" || r.Host != "tenant-a.example.com" {
		t.Fatalf("As: auth %q host %q", r.Auth, r.Host)
	}
	// The parent is unchanged and a second derivation keeps the configured token.
	if _, err := base.As("", "").Queues(bg); err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Auth != "Bearer cfg-token" || strings.Contains(r.Host, "example.com") {
		t.Fatalf("parent changed by As: auth %q host %q", r.Auth, r.Host)
	}
	if conn.hc != base.hc {
		t.Fatal("As must share the connection pool")
	}
	anon := f.client(t, "")
	if anon.Authenticated() {
		t.Fatal("no token, yet Authenticated")
	}
	if _, err := anon.Queues(bg); err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Auth != "" {
		t.Fatalf("Authorization sent without a token: %q", r.Auth)
	}
}

func TestParseURL(t *testing.T) {
	good := map[string]string{"http://h:1/": "http://h:1", "https://h//": "https://h", " http://h/base ": "http://h/base"}
	for in, want := range good {
		if got, err := ParseURL(in); err != nil || got != want {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://h", "localhost:6632", "http://", "::"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}

func TestTransportPool(t *testing.T) {
	c, err := New(Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	tr := c.hc.Transport.(*http.Transport)
	if tr.MaxIdleConnsPerHost < 256 || tr.MaxConnsPerHost != 0 || tr.DisableKeepAlives {
		t.Fatalf("pool not sized for many concurrent calls: idle/host %d max/host %d", tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost)
	}
	if tr.TLSHandshakeTimeout != ConnectTimeout || c.timeout != RequestTimeout {
		t.Fatalf("budgets: tls %v request %v", tr.TLSHandshakeTimeout, c.timeout)
	}
}

func TestFetchBudgetExtendsByMaxWait(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		time.Sleep(150 * time.Millisecond)
		answer(200, `{"entries":[{"queue":"q","partition":"0","records":[],"highWatermark":0,"logStartOffset":0}]}`)(w, r, "")
	})
	c := f.clientTimeout(t, 50*time.Millisecond)
	req := FetchRequest{Entries: []FetchEntry{{Queue: "q", Partition: "0"}}, MaxWaitMs: 2000, MinBytes: 1}
	if _, err := c.Fetch(bg, req); err != nil {
		t.Fatalf("fetch with maxWaitMs 2000 must get request timeout + 2 s: %v", err)
	}
	req.MaxWaitMs = 0
	_, err := c.Fetch(bg, req)
	mustKind(t, err, KindTimeout)
	req.MaxWaitMs = -5 // clamped to 0
	_, err = c.Fetch(bg, req)
	mustKind(t, err, KindTimeout)
}

func TestInt64NeverThroughFloat(t *testing.T) {
	const big = int64(1)<<53 + 1 // not representable as float64
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body string) {
		switch r.URL.Path {
		case "/api/v1/push":
			fmt.Fprintf(w, `[{"index":0,"status":"queued","offset":%d}]`, big)
		case "/api/v1/fetch":
			fmt.Fprintf(w, `{"entries":[{"queue":"q","partition":"0","records":[{"offset":%d,"payload":1,"ts":"x"}],"highWatermark":%d,"logStartOffset":%d}]}`, big, big+1, big)
		case "/api/v1/kv":
			fmt.Fprintf(w, `{"results":[{"index":0,"op":"put","applied":true,"version":%d}]}`, big)
		}
	})
	c := f.client(t, "")
	pr, err := c.Push(bg, []PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`1`)}})
	if err != nil || *pr[0].Offset != big {
		t.Fatalf("push offset %v, %v", pr, err)
	}
	fr, err := c.Fetch(bg, FetchRequest{Entries: []FetchEntry{{Queue: "q", Partition: "0", Offset: big}}})
	if err != nil || fr[0].Records[0].Offset != big || fr[0].HighWatermark != big+1 {
		t.Fatalf("fetch %+v, %v", fr, err)
	}
	if !strings.Contains(f.last(t).Body, fmt.Sprintf(`"offset":%d`, big)) {
		t.Fatalf("request offset not exact: %s", f.last(t).Body)
	}
	kr, err := c.KV(bg, []KVOp{{Op: OpPut, NS: Namespace, Key: "qk:a", Value: json.RawMessage(`1`), Forever: true, Expect: ptr(big)}})
	if err != nil || kr[0].Version != big {
		t.Fatalf("kv version %+v, %v", kr, err)
	}
	if !strings.Contains(f.last(t).Body, fmt.Sprintf(`"expect":%d`, big)) {
		t.Fatalf("expect not exact: %s", f.last(t).Body)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPushBodyAndAlignment(t *testing.T) {
	items := []PushItem{
		{Queue: "orders", Partition: "3", Payload: json.RawMessage(`{"h":[{"k":"<a&b>","v":null}],"k":null,"v":"eA=="}`)},
		{Queue: "orders", Partition: "3", Payload: json.RawMessage(`{"k":null,"v":"eQ=="}`)},
	}
	ok := `[{"index":1,"message_id":"m2","transaction_id":"m2","queueName":"orders","status":"queued","offset":42},
	        {"index":0,"message_id":"m1","transaction_id":"m1","queueName":"orders","status":"queued","offset":41}]`
	f := newFake(t, answer(201, ok))
	res, err := f.client(t, "").Push(bg, items)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Index != 0 || *res[0].Offset != 41 || res[1].MessageID != "m2" || *res[1].Offset != 42 {
		t.Fatalf("results not put in item order: %+v", res)
	}
	want := `{"items":[{"queue":"orders","partition":"3","payload":{"h":[{"k":"<a&b>","v":null}],"k":null,"v":"eA=="}},{"queue":"orders","partition":"3","payload":{"k":null,"v":"eQ=="}}]}`
	if got := f.last(t).Body; got != want {
		t.Fatalf("push body\n got %s\nwant %s", got, want)
	}

	bad := map[string]string{
		"missing index":      `[{"index":0,"status":"queued","offset":1},{"status":"queued","offset":2}]`,
		"repeated index":     `[{"index":0,"status":"queued","offset":1},{"index":0,"status":"queued","offset":2}]`,
		"index out of range": `[{"index":0,"status":"queued","offset":1},{"index":2,"status":"queued","offset":2}]`,
		"too few":            `[{"index":0,"status":"queued","offset":1}]`,
		"too many":           `[{"index":0,"status":"queued","offset":1},{"index":1,"status":"queued","offset":2},{"index":2,"status":"queued","offset":3}]`,
		"queued no offset":   `[{"index":0,"status":"queued","offset":1},{"index":1,"status":"queued"}]`,
		"dup no offset":      `[{"index":0,"status":"queued","offset":1},{"index":1,"status":"duplicate"}]`,
		"negative offset":    `[{"index":0,"status":"queued","offset":-1},{"index":1,"status":"queued","offset":2}]`,
		"float offset":       `[{"index":0,"status":"queued","offset":1.5},{"index":1,"status":"queued","offset":2}]`,
		"string offset":      `[{"index":0,"status":"queued","offset":"1"},{"index":1,"status":"queued","offset":2}]`,
		"object not array":   `{"index":0}`,
		"not json":           `<html>`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, answer(201, body))
			_, err := f.client(t, "").Push(bg, items)
			mustKind(t, err, KindProtocol)
		})
	}
	// buffered/error/failed carry no offset and are passed to the caller as they are.
	f = newFake(t, answer(201, `[{"index":0,"status":"buffered"},{"index":1,"status":"failed"}]`))
	res, err = f.client(t, "").Push(bg, items)
	if err != nil || res[0].Status != StatusBuffered || res[1].Status != StatusFailed || res[0].Offset != nil {
		t.Fatalf("non-stored statuses: %+v, %v", res, err)
	}
	if res, err := f.client(t, "").Push(bg, nil); res != nil || err != nil || f.count() != 1 {
		t.Fatal("an empty push makes no call")
	}
	// A lone result without "index" must not pass for index 0.
	f = newFake(t, answer(201, `[{"status":"queued","offset":7}]`))
	_, err = f.client(t, "").Push(bg, items[:1])
	mustKind(t, err, KindProtocol)
}

func TestFetchAlignment(t *testing.T) {
	req := FetchRequest{Entries: []FetchEntry{{Queue: "orders", Partition: "3", Offset: 41}, {Queue: "orders", Partition: "9"}}, MaxWaitMs: 500, MinBytes: 1}
	entry9 := `{"queue":"orders","partition":"9","records":[],"highWatermark":0,"logStartOffset":0}`
	good := `{"entries":[{"queue":"orders","partition":"3","records":[{"offset":41,"transactionId":"a","payload":{"k":null,"v":"eA=="},"ts":"2026-08-28T09:15:00.123456Z"},{"offset":44,"payload":null,"ts":"2026-08-28T09:15:00.123456Z"}],"highWatermark":45,"logStartOffset":0,"extra":1},` + entry9 + `]}`
	f := newFake(t, answer(200, good))
	res, err := f.client(t, "").Fetch(bg, req)
	if err != nil || len(res) != 2 || res[0].Records[1].Offset != 44 || string(res[0].Records[1].Payload) != "null" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := f.last(t).Body; got != `{"entries":[{"queue":"orders","partition":"3","offset":41},{"queue":"orders","partition":"9","offset":0}],"maxWaitMs":500,"minBytes":1}` {
		t.Fatalf("fetch body %s", got)
	}
	bad := map[string]string{
		"count":          `{"entries":[` + entry9 + `]}`,
		"swapped":        `{"entries":[` + entry9 + `,{"queue":"orders","partition":"3","records":[],"highWatermark":0,"logStartOffset":0}]}`,
		"wrong queue":    `{"entries":[{"queue":"other","partition":"3","records":[]},` + entry9 + `]}`,
		"below request":  `{"entries":[{"queue":"orders","partition":"3","records":[{"offset":40,"payload":1}]},` + entry9 + `]}`,
		"not ascending":  `{"entries":[{"queue":"orders","partition":"3","records":[{"offset":42,"payload":1},{"offset":42,"payload":1}]},` + entry9 + `]}`,
		"float hwm":      `{"entries":[{"queue":"orders","partition":"3","records":[],"highWatermark":1e3},` + entry9 + `]}`,
		"entries absent": `{}`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, answer(200, body))
			_, err := f.client(t, "").Fetch(bg, req)
			mustKind(t, err, KindProtocol)
		})
	}
}

func TestKVAlignmentAndVerdicts(t *testing.T) {
	ops := []KVOp{
		{Op: OpPut, NS: Namespace, Key: "qk:fence:billing", Value: json.RawMessage(`{"node":2}`), Forever: true, Expect: ptr(int64(0)), Required: true},
		{Op: OpGetMany, NS: Namespace, Keys: []string{"qk:a", "qk:b"}},
	}
	good := `{"results":[{"index":1,"op":"getMany","rows":[{"key":"qk:a","value":{"offset":3},"version":9,"expiresAt":null,"updatedAt":"x"}],"missing":["qk:b"],"truncated":false},
	                     {"index":0,"op":"put","applied":false,"key":"qk:fence:billing","value":null,"version":0,"reason":"absent"}]}`
	f := newFake(t, answer(200, good))
	res, err := f.client(t, "").KV(bg, ops)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Op != OpPut || res[0].Reason != ReasonAbsent || res[1].Rows[0].Version != 9 || res[1].Missing[0] != "qk:b" {
		t.Fatalf("%+v", res)
	}
	wantBody := `{"operations":[{"op":"put","ns":"queen-kafka","key":"qk:fence:billing","value":{"node":2},"forever":true,"expect":0,"required":true},{"op":"getMany","ns":"queen-kafka","keys":["qk:a","qk:b"]}]}`
	if got := f.last(t).Body; got != wantBody {
		t.Fatalf("kv body\n got %s\nwant %s", got, wantBody)
	}
	bad := map[string]string{
		"missing index":  `{"results":[{"op":"put"},{"index":1,"op":"getMany"}]}`,
		"repeated index": `{"results":[{"index":0,"op":"put"},{"index":0,"op":"put"}]}`,
		"out of range":   `{"results":[{"index":0,"op":"put"},{"index":5,"op":"getMany"}]}`,
		"short":          `{"results":[{"index":0,"op":"put"}]}`,
		"wrong op echo":  `{"results":[{"index":0,"op":"delete"},{"index":1,"op":"getMany"}]}`,
		"float version":  `{"results":[{"index":0,"op":"put","version":1.5},{"index":1,"op":"getMany"}]}`,
		"no results":     `{}`,
		"array body":     `[]`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, answer(200, body))
			_, err := f.client(t, "").KV(bg, ops)
			mustKind(t, err, KindProtocol)
		})
	}
	t.Run("precondition", func(t *testing.T) {
		f := newFake(t, answer(200, `{"ok":false,"reason":"kv_precondition","failedIndex":0,"kvReason":"version","version":91004,"value":{"node":1}}`))
		_, err := f.client(t, "").KV(bg, ops)
		var pe *PreconditionError
		if !errors.As(err, &pe) || pe.Index != 0 || pe.KVReason != ReasonVersion || pe.Version != 91004 || string(pe.Value) != `{"node":1}` {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("precondition nulls", func(t *testing.T) {
		f := newFake(t, answer(200, `{"ok":false,"reason":"kv_precondition","failedIndex":null,"kvReason":null,"version":null,"value":null}`))
		_, err := f.client(t, "").KV(bg, ops)
		var pe *PreconditionError
		if !errors.As(err, &pe) || pe.KVReason != "" || pe.Version != 0 || pe.Value != nil {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("lone result without index", func(t *testing.T) {
		f := newFake(t, answer(200, `{"results":[{"op":"getMany","rows":[]}]}`))
		_, err := f.client(t, "").KV(bg, ops[1:])
		mustKind(t, err, KindProtocol)
	})
	t.Run("putIfAbsent echoed as put", func(t *testing.T) {
		f := newFake(t, answer(200, `{"results":[{"index":0,"op":"put","applied":true,"version":3}]}`))
		if _, err := f.client(t, "").KV(bg, []KVOp{{Op: OpPutIfAbsent, NS: Namespace, Key: "qk:a", Value: json.RawMessage(`1`), Forever: true}}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTransaction(t *testing.T) {
	req := TxnRequest{
		Operations: []TxnOperation{{Type: "push", Items: []PushItem{{Queue: "out", Partition: "0", Payload: json.RawMessage(`{"k":null,"v":"QQ==","t":1787824800123}`)}}}},
		KV: []KVOp{
			{Op: OpPut, NS: Namespace, Key: "qk:txn:tx-1", Value: json.RawMessage(`{"pid":7}`), Forever: true, Expect: ptr(int64(90101)), Required: true},
			{Op: OpPut, NS: Namespace, Key: "qk:groups:billing", Value: json.RawMessage(`{"pt":"consumer"}`), Forever: true},
		},
	}
	good := `{"transactionId":"t","success":true,"results":[
	  {"index":2,"opIndex":1,"type":"kv","op":"put","applied":true,"key":"qk:groups:billing","version":90109},
	  {"index":0,"type":"push","success":true,"transactionId":"m","messageId":"m","queueName":"out"},
	  {"index":1,"opIndex":0,"type":"kv","op":"put","applied":true,"key":"qk:txn:tx-1","version":90110}]}`
	f := newFake(t, answer(200, good))
	res, err := f.client(t, "").Transaction(bg, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Version != 90110 || res[1].Key != "qk:groups:billing" {
		t.Fatalf("kv rider results not in rider order: %+v", res)
	}
	bad := map[string]string{
		"push echo missing":  `{"success":true,"results":[{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"push echo repeated": `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":0,"type":"push","success":true},{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"push echo failed":   `{"success":true,"results":[{"index":0,"type":"push","success":false},{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"push no index":      `{"success":true,"results":[{"type":"push","success":true},{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"kv missing":         `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":1,"opIndex":0,"type":"kv","op":"put"}]}`,
		"kv no opIndex":      `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":1,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"kv flat mismatch":   `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":2,"opIndex":0,"type":"kv","op":"put"},{"index":1,"opIndex":1,"type":"kv","op":"put"}]}`,
		"kv repeated":        `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":1,"opIndex":0,"type":"kv","op":"put"}]}`,
		"kv no index":        `{"success":true,"results":[{"index":0,"type":"push","success":true},{"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"}]}`,
		"unknown type":       `{"success":true,"results":[{"index":0,"type":"push","success":true},{"index":1,"opIndex":0,"type":"kv","op":"put"},{"index":2,"opIndex":1,"type":"kv","op":"put"},{"index":3,"type":"timer"}]}`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, answer(200, body))
			_, err := f.client(t, "").Transaction(bg, req)
			mustKind(t, err, KindProtocol)
		})
	}
	t.Run("fenced", func(t *testing.T) {
		f := newFake(t, answer(200, `{"transactionId":"t","success":false,"reason":"kv_precondition","error":"kv_precondition_failed","results":[],"ok":false,"failedIndex":1,"kvReason":"version","version":90200,"value":{"pid":7,"epoch":1}}`))
		_, err := f.client(t, "").Transaction(bg, req)
		var te *TxnError
		if !errors.As(err, &te) || !te.Fenced() || te.KVIndex != 0 || te.KVReason != ReasonVersion || te.Version != 90200 || string(te.Value) != `{"pid":7,"epoch":1}` {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("rolled back other", func(t *testing.T) {
		f := newFake(t, answer(200, `{"transactionId":"t","success":false,"reason":"duplicate","error":"dup\u001b[1m","results":[]}`))
		_, err := f.client(t, "").Transaction(bg, req)
		var te *TxnError
		if !errors.As(err, &te) || te.Fenced() || te.Reason != "duplicate" || te.Message != "dup" {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("kv only body", func(t *testing.T) {
		f := newFake(t, answer(200, `{"success":true,"results":[{"index":0,"opIndex":0,"type":"kv","op":"put","applied":true}]}`))
		_, err := f.client(t, "").Transaction(bg, TxnRequest{KV: req.KV[:1]})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.last(t).Body; !strings.HasPrefix(got, `{"operations":[],"kv":[{"op":"put"`) {
			t.Fatalf("operations must be sent as []: %s", got)
		}
	})
	t.Run("empty makes no call", func(t *testing.T) {
		f := newFake(t, answer(500, ``))
		if res, err := f.client(t, "").Transaction(bg, TxnRequest{}); res != nil || err != nil || f.count() != 0 {
			t.Fatalf("%v %v %d", res, err, f.count())
		}
	})
}

func TestConfigure(t *testing.T) {
	f := newFake(t, answer(200, `{"configured":true,"queue":"orders","namespace":"","task":"","options":{"retentionSeconds":604800}}`))
	res, err := f.client(t, "").Configure(bg, "orders", map[string]any{"retentionEnabled": true, "retentionSeconds": 604800, "queue": "ignored"})
	if err != nil || !res.Configured {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(f.last(t).Body), &body); err != nil || body["queue"] != "orders" || body["retentionEnabled"] != true || body["options"] != nil {
		t.Fatalf("options must be spread at the top level: %s", f.last(t).Body)
	}
	for name, reply := range map[string]string{
		"not configured":   `{"configured":false}`,
		"absent":           `{"queue":"orders"}`,
		"error inside 200": `{"configured":true,"error":"configure failed"}`,
		"error object":     `{"configured":true,"error":{"x":1}}`,
		"string true":      `{"configured":"true"}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, answer(200, reply))
			_, err := f.client(t, "").Configure(bg, "orders", nil)
			mustKind(t, err, KindProtocol)
		})
	}
	f = newFake(t, answer(200, `{"configured":true,"error":null}`))
	if _, err := f.client(t, "").Configure(bg, "orders", nil); err != nil {
		t.Fatalf("a null error is no error: %v", err)
	}
	if got := f.last(t).Body; got != `{"queue":"orders"}` {
		t.Fatalf("auto-create body %s", got)
	}
}

func TestDeleteQueue(t *testing.T) {
	f := newFake(t, answer(200, `{"deleted":true,"existed":true}`))
	res, err := f.client(t, "").DeleteQueue(bg, "a b:c@d~e.f_g-h/é")
	if err != nil || !res.Deleted {
		t.Fatalf("%+v %v", res, err)
	}
	r := f.last(t)
	if r.Method != "DELETE" || r.RawPath != "/api/v1/resources/queues/a%20b%3Ac%40d~e.f_g-h%2F%C3%A9" || r.Body != "" {
		t.Fatalf("%s %s body %q", r.Method, r.RawPath, r.Body)
	}
	f = newFake(t, answer(200, `{"deleted":false,"existed":false,"message":"Queue not found, nothing was deleted"}`))
	if res, err := f.client(t, "").DeleteQueue(bg, "x"); err != nil || res.Deleted {
		t.Fatalf("%+v %v", res, err)
	}
	f = newFake(t, answer(200, `{"deleted":true,"error":"delete failed: x"}`))
	_, err = f.client(t, "").DeleteQueue(bg, "x")
	mustKind(t, err, KindProtocol)
}

func TestAuthMe(t *testing.T) {
	cases := map[string]string{
		`{"user_id":"standalone","acting_cluster":{"id":"local","slug":"local"},"clusters":[]}`: "local",
		`{"acting_cluster":{"id":"  t-1.a_b:c  "}}`:                                             "t-1.a_b:c",
		`{"acting_cluster":{"id":"` + strings.Repeat("a", 128) + `"}}`:                          strings.Repeat("a", 128),
		`{"acting_cluster":{"id":"` + strings.Repeat("a", 129) + `"}}`:                          "",
		`{"acting_cluster":{"id":""}}`:                                                          "",
		`{"acting_cluster":{"id":"a/b"}}`:                                                       "",
		`{"acting_cluster":{"id":"a b"}}`:                                                       "",
		`{"acting_cluster":{"id":"é"}}`:                                                         "",
		`{"acting_cluster":{"id":42}}`:                                                          "",
		`{"acting_cluster":{"slug":"x"}}`:                                                       "",
		`{"acting_cluster":null}`:                                                               "",
		`{"acting_cluster":"local"}`:                                                            "",
		`{"tenant_slug":"local"}`:                                                               "",
		`not json`:                                                                              "",
		`[]`:                                                                                    "",
	}
	for body, want := range cases {
		f := newFake(t, answer(200, body))
		got, err := f.client(t, "tok").AuthMe(bg)
		if err != nil || got != want {
			t.Errorf("AuthMe(%s) = %q, %v; want %q", body, got, err, want)
		}
		if r := f.last(t); r.Path != "/auth/me" || r.Method != "GET" || r.Auth != "Bearer tok" {
			t.Errorf("request %s %s %q", r.Method, r.Path, r.Auth)
		}
	}
	f := newFake(t, answer(401, `{"error":"auth_required","code":"auth_required"}`))
	_, err := f.client(t, "tok").AuthMe(bg)
	mustKind(t, err, KindUnauthorized)
	f = newFake(t, answer(503, ``))
	_, err = f.client(t, "tok").AuthMe(bg)
	mustKind(t, err, KindTransient)
}

func TestPushBodyEncoding(t *testing.T) {
	f := newFake(t, answer(201, `[{"index":0,"status":"queued","offset":0},{"index":1,"status":"queued","offset":1}]`))
	_, err := f.client(t, "").Push(bg, []PushItem{
		{Queue: "q\"\\", Payload: nil, TransactionID: "tx\n1"},
		{Queue: "q", Partition: "0", Payload: json.RawMessage(`{"a": [1, 2.50]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"items":[{"queue":"q\"\\","payload":null,"transactionId":"tx\n1"},{"queue":"q","partition":"0","payload":{"a": [1, 2.50]}}]}`
	if got := f.last(t).Body; got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	var decoded PushRequest
	if err := json.Unmarshal([]byte(f.last(t).Body), &decoded); err != nil || decoded.Items[0].TransactionID != "tx\n1" || decoded.Items[0].Queue != "q\"\\" {
		t.Fatalf("body does not decode back: %v %+v", err, decoded)
	}
}
