package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
)

var fuzzRoutes = []string{"/api/v1/push", "/api/v1/fetch", "/api/v1/kv", "/api/v1/transaction", "/api/v1/configure"}

// FuzzRequestDecoding throws arbitrary bodies at the decoders of push,
// fetch, kv, transaction and configure (route picks one). It asserts that
// nothing panics, every answer is JSON, and a refused body (4xx, a KV
// precondition body, a rolled-back transaction) changed nothing.
func FuzzRequestDecoding(f *testing.F) {
	seeds := []struct {
		route uint8
		body  string
	}{
		{0, `{"items":[{"queue":"q","partition":"0","payload":{"k":null,"v":"eA=="}},{"queue":"q","payload":1,"transactionId":"t"}]}`},
		{0, `{"items":[]}`},
		{1, `{"entries":[{"queue":"q","partition":0,"offset":0,"maxBytes":10},{"queue":"x","offset":5}],"maxWaitMs":10,"minBytes":1}`},
		{2, `{"operations":[{"op":"put","ns":"queen-kafka","key":"k","value":{"a":1},"forever":true,"expect":0,"required":true},{"op":"getPrefix","ns":"queen-kafka","prefix":"k","limit":3}]}`},
		{2, `[{"op":"incr","ns":"a","key":"n","delta":1.5,"ttlSeconds":3,"max":10},{"op":"getMany","ns":"a","keys":["n","m"]}]`},
		{3, `{"operations":[{"type":"push","items":[{"queue":"q","payload":1}]}],"kv":[{"op":"put","ns":"queen-kafka","key":"k","value":1,"forever":true,"expect":7,"required":true}]}`},
		{4, `{"queue":"q","options":{"retentionEnabled":true,"retentionSeconds":5},"mode":"replace"}`},
	}
	for _, s := range seeds {
		f.Add(s.route, []byte(s.body))
	}
	b, err := New(Options{SweepInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	b.Drain() // fetches answer without parking
	h := b.Handler()
	for _, body := range []string{
		`{"items":[{"queue":"q","partition":"0","payload":1},{"queue":"q","partition":"0","payload":2,"transactionId":"t"}]}`,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/push", bytes.NewReader([]byte(body))))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		switch path {
		case "/api/v1/push":
			checkPushScan(t, body)
		case "/api/v1/fetch":
			checkFetchScan(t, body)
		case "/api/v1/transaction":
			checkTxnScan(t, body)
		}
		before := b.Mutations()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if n := b.Panics(); n != 0 {
			t.Fatalf("%s panicked on %q", path, body)
		}
		out := rec.Body.Bytes()
		if !json.Valid(out) {
			t.Fatalf("%s answered %d with invalid JSON %q", path, rec.Code, out)
		}
		refused := rec.Code >= 400
		var verdict struct {
			OK      *bool `json:"ok"`
			Success *bool `json:"success"`
		}
		if rec.Code == 200 && json.Unmarshal(out, &verdict) == nil {
			if (verdict.OK != nil && !*verdict.OK) || (verdict.Success != nil && !*verdict.Success) {
				refused = true
			}
		}
		if refused && b.Mutations() != before {
			t.Fatalf("%s refused (%d %s) but wrote something; body %q", path, rec.Code, out, body)
		}
		switch rec.Code {
		case 200, 201, 400, 413:
		default:
			t.Fatalf("%s answered %d %s", path, rec.Code, out)
		}
	})
}

// checkPushScan: whenever the fast push decoder accepts a body, encoding/json
// accepts it too and decodes the same items, also into a reused slice
// holding another push's items (the push route's scratch).
func checkPushScan(t *testing.T, body []byte) {
	fast, ok := scanPushBody(nil, append([]byte(nil), body...))
	q := "stale"
	used := []rawItem{{Queue: &q, Partition: []byte(`"9"`), Payload: []byte("1"), Data: []byte("2"), TransactionID: &q}, {Queue: &q}}
	again, okAgain := scanPushBody(used[:0:2], append([]byte(nil), body...))
	if ok != okAgain || !reflect.DeepEqual(fast, again) {
		t.Fatalf("decoded into a reused slice: %v %+v, fresh: %v %+v", okAgain, again, ok, fast)
	}
	if !ok {
		return
	}
	var slow struct {
		Items *[]rawItem `json:"items"`
	}
	if err := json.Unmarshal(body, &slow); err != nil || slow.Items == nil {
		t.Fatalf("fast push decoder accepted %q, encoding/json: %v", body, err)
	}
	if len(fast) != len(*slow.Items) {
		t.Fatalf("%d items fast, %d slow: %q", len(fast), len(*slow.Items), body)
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return "=" + *p
	}
	for i, f := range fast {
		s := (*slow.Items)[i]
		if str(f.Queue) != str(s.Queue) || str(f.TransactionID) != str(s.TransactionID) ||
			!bytes.Equal(f.Partition, s.Partition) || !bytes.Equal(f.Payload, s.Payload) || (f.Payload == nil) != (s.Payload == nil) ||
			(f.Partition == nil) != (s.Partition == nil) || !bytes.Equal(f.Data, s.Data) || (f.Data == nil) != (s.Data == nil) {
			t.Fatalf("item %d differs: fast %+v slow %+v in %q", i, f, s, body)
		}
	}
}

// checkFetchScan: whenever the fast fetch decoder accepts a body,
// encoding/json accepts it too and decodes the same fields.
func checkFetchScan(t *testing.T, body []byte) {
	fast, ok := scanFetchBody(append([]byte(nil), body...))
	if !ok {
		return
	}
	var slow rawFetchBody
	if err := json.Unmarshal(body, &slow); err != nil {
		t.Fatalf("fast fetch decoder accepted %q, encoding/json: %v", body, err)
	}
	i64 := func(p *int64) string {
		if p == nil {
			return "<nil>"
		}
		return "=" + strconv.FormatInt(*p, 10)
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return "=" + *p
	}
	if i64(fast.MaxWaitMs) != i64(slow.MaxWaitMs) || i64(fast.MinBytes) != i64(slow.MinBytes) || (fast.Entries == nil) != (slow.Entries == nil) {
		t.Fatalf("fast %+v slow %+v in %q", fast, slow, body)
	}
	if fast.Entries == nil {
		return
	}
	if len(*fast.Entries) != len(*slow.Entries) {
		t.Fatalf("%d entries fast, %d slow: %q", len(*fast.Entries), len(*slow.Entries), body)
	}
	for i, f := range *fast.Entries {
		s := (*slow.Entries)[i]
		if str(f.Queue) != str(s.Queue) || i64(f.Offset) != i64(s.Offset) || i64(f.MaxBytes) != i64(s.MaxBytes) ||
			!bytes.Equal(f.Partition, s.Partition) || (f.Partition == nil) != (s.Partition == nil) {
			t.Fatalf("entry %d differs: fast %+v slow %+v in %q", i, f, s, body)
		}
	}
}
