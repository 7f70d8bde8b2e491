package dev

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// checkTxnScan: whenever the fast transaction decoder takes a body,
// decodeTxnJSON (encoding/json) answers the same request or the same
// refusal.
func checkTxnScan(t *testing.T, body []byte) {
	t.Helper()
	tb, ok := scanTxnBody(append([]byte(nil), body...))
	if !ok || tb.acks() {
		return // decodeTxn hands it to decodeTxnJSON
	}
	fast, ferr := tb.check()
	slow, serr := decodeTxnJSON(body)
	if (ferr == nil) != (serr == nil) || (ferr != nil && *ferr != *serr) {
		t.Fatalf("refusals differ on %q: fast %+v slow %+v", body, ferr, serr)
	}
	if ferr != nil {
		return
	}
	if len(fast.items) != len(slow.items) {
		t.Fatalf("%d items fast, %d slow: %q", len(fast.items), len(slow.items), body)
	}
	for i, f := range fast.items {
		s := slow.items[i]
		if f.queue != s.queue || f.part != s.part || f.txID != s.txID || !bytes.Equal(f.payload, s.payload) || (f.payload == nil) != (s.payload == nil) {
			t.Fatalf("item %d differs: fast %+v slow %+v in %q", i, f, s, body)
		}
	}
	if !slices.Equal(fast.slots, slow.slots) {
		t.Fatalf("slots differ: fast %+v slow %+v in %q", fast.slots, slow.slots, body)
	}
	if !reflect.DeepEqual(fast.kv, slow.kv) {
		t.Fatalf("kv differs: fast %+v slow %+v in %q", fast.kv, slow.kv, body)
	}
}

// The fast transaction decoder takes the facade's commit and the plain
// shapes around it, agreeing with encoding/json on each (requests and
// refusals alike), and hands everything unusual to it.
func TestScanTxnBodyMatchesEncodingJSON(t *testing.T) {
	accepted := []string{
		string(facadeTxnBody(t, 20)),
		`{"operations":[{"type":"push","items":[{"queue":"q","partition":"0","payload":{"k":null,"v":"eA=="},"transactionId":"t","traceId":"x"}]}],"kv":[]}`,
		` { "operations" : [ ] , "kv" : null , "timers" : [ ] , "requiredLeases" : null , "other" : [1,{"a":[true,false,null,-0.5e+3]}] } `,
		// An operation without items (absent or null) is its own one item;
		// with them, its own item fields are ignored.
		`{"operations":[{"type":"push","queue":"q","partition":"","data":{"x":1}},{"type":"push","items":null,"queue":"r","payload":2}]}`,
		`{"operations":[{"queue":"ignored","type":"push","items":[{"queue":"q","data":1},{"queue":"q","payload":2,"data":3}]}]}`,
		`{"operations":[{"type":"push","items":[{"queue":"q\u00e9\n","payload":"\ud83d\ude00","partition":null,"transactionId":null}]}]}`,
		`{"operations":[{"type":"pu\u0073h","items":[{"queue":"q","payload":1}]}]}`,
		// Duplicate keys: the last wins, as in encoding/json.
		`{"operations":null,"operations":[{"type":"ack","type":"push","items":[],"items":[{"queue":"q","payload":1}]}],"kv":[1],"kv":null}`,
		`{"operations":[{"type":"push","items":[{"queue":"q","payload":1}],"items":null,"queue":"s","payload":9}]}`,
		"{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"\xff\",\"payload\":\"\xfe\"}]}]}",
		// Refusals: each the same as encoding/json's.
		`{}`, `{"operations":null}`, `{"operations":[],"kv":[]}`,
		`{"operations":[{"type":"push","items":[{"payload":1}]}]}`,
		`{"operations":[{"type":"push","items":[{"queue":"q"}]}]}`,
		`{"operations":[{"type":"ack"}]}`, `{"operations":[{"type":"kv"}]}`, `{"operations":[{"type":"timer"}]}`,
		`{"operations":[{"type":null}]}`, `{"operations":[{}]}`, `{"operations":[{"type":"Push"}]}`,
		`{"operations":[{"type":"push","items":[{"queue":"q","payload":1}]},{"type":"nope"}]}`,
		`{"operations":[{"type":"push","items":[{"queue":"q\u0001","payload":1}]}]}`,
		`{"operations":[{"type":"push","items":[{"queue":"q","partition":"a\u0000","payload":1}]}]}`,
		`{"timers":[{"at":1}]}`, `{"requiredLeases":["x"],"timers":[]}`,
		`{"kv":[{"op":"get","ns":"queen-kafka","key":"k"}]}`,
		`{"operations":[],"kv":[null]}`, `{"operations":[],"kv":[{"op":"getPrefix","ns":"queen-kafka","prefix":"k"}]}`,
		`{"operations":[],"kv":[{"op":"put","ns":"n","key":"k","value":1,"forever":true},{"op":"put","ns":"n","key":"k","value":2,"forever":true}]}`,
	}
	for _, body := range accepted {
		if _, ok := scanTxnBody([]byte(body)); !ok {
			t.Errorf("fast path refused %q", body)
		}
		checkTxnScan(t, []byte(body))
	}
	fallback := []string{
		`{"OPERATIONS":[]}`, `{"operations":[{"Type":"push"}]}`, `{"operations":[{"type":"push","ITEMS":[]}]}`,
		`{"operations":[null]}`, `{"operations":[5]}`, `{"operations":{}}`, `{"operations":[{"type":"push","items":[null]}]}`,
		`{"operations":[{"type":5}]}`, `{"operations":[{"type":"push","items":5}]}`, `{"kv":{}}`, `{"timers":1}`,
		`{"operations":[{"type":"push","queue":5,"payload":1}]}`, `{"operations":[{"type":"push","items":[{"Queue":"q"}]}]}`,
		`{"operations":[{"type":"push","items":[{"DATA":1}]}]}`,
		`{"oper\u0061tions":[]}`, `{"operations":[]} x`, `{"operations":[],}`, `[]`, ``, `null`,
		`{"operations":[{"type":"push","items":[{"queue":"q","payload":01}]}]}`,
	}
	for _, body := range fallback {
		if _, ok := scanTxnBody([]byte(body)); ok {
			t.Errorf("fast path took %q", body)
		}
		checkTxnScan(t, []byte(body))
	}
}

// FuzzTxnScan: the fast transaction decoder never disagrees with
// encoding/json on a body it takes.
func FuzzTxnScan(f *testing.F) {
	f.Add([]byte(`{"operations":[{"type":"push","items":[{"queue":"q","partition":"0","payload":{"k":null,"v":"eA=="},"transactionId":"t"}]}],"kv":[{"op":"put","ns":"queen-kafka","key":"k","value":1,"forever":true,"expect":7,"required":true}]}`))
	f.Add([]byte(`{"operations":[{"type":"push","queue":"q","data":1},{"type":"push","items":null,"payload":2}],"timers":[],"requiredLeases":null}`))
	f.Add(facadeTxnBody(f, 3))
	f.Fuzz(func(t *testing.T, body []byte) { checkTxnScan(t, body) })
}
