package queen

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The transaction body rendered without reflection means what
// encoding/json renders for the same request (no HTML escaping): random
// requests, push items with and without partitions, null payloads and
// dedup keys, names with characters JSON escapes, and kv riders; and the
// body Transaction sends (TxnRequest.pooledBody) is those bytes.
func TestTxnRequestBodyMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 23))
	name := func() string {
		const chars = "abcXYZ019._-\"\\<>&é\n\t"
		b := []rune{}
		for range 1 + rng.IntN(12) {
			b = append(b, []rune(chars)[rng.IntN(len([]rune(chars)))])
		}
		return string(b)
	}
	for i := range 500 {
		var req TxnRequest
		for range rng.IntN(3) {
			op := TxnOperation{Type: "push"}
			for range rng.IntN(5) {
				it := PushItem{Queue: name()}
				if rng.IntN(2) == 0 {
					it.Partition = strconv.Itoa(rng.IntN(100))
				}
				if rng.IntN(4) > 0 {
					// Some past minRefPayload: the call's body sends those
					// from their own memory.
					pad := strings.Repeat("x", []int{0, 200, 300}[rng.IntN(3)])
					it.Payload = json.RawMessage(`{"k":null,"v":"` + strconv.Itoa(rng.Int()) + pad + `","h":[{"k":"<a&b>","v":null}],"t":` + strconv.Itoa(rng.IntN(1e9)) + `}`)
				}
				if rng.IntN(2) == 0 {
					it.TransactionID = name()
				}
				op.Items = append(op.Items, it)
			}
			req.Operations = append(req.Operations, op)
		}
		if rng.IntN(3) > 0 {
			v := int64(rng.IntN(5))
			req.KV = append(req.KV, KVOp{Op: OpPut, NS: Namespace, Key: name(), Value: json.RawMessage(`{"s":"<x>"}`), Expect: &v, Required: true, Forever: true})
		}
		if req.Operations == nil {
			req.Operations = []TxnOperation{}
		}
		got, err := req.appendJSONErr(nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		want := req
		if want.KV == nil {
			want.KV = []KVOp{}
		}
		if err := enc.Encode(want); err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("request %d: not JSON: %v\n%s", i, err, got)
		}
		if err := json.Unmarshal(buf.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("request %d:\n got %s\nwant %s", i, got, buf.Bytes())
		}
		if bytes.Contains(got, []byte(`\u003c`)) {
			t.Fatalf("request %d: HTML-escaped: %s", i, got)
		}
		// The call's body (framing pooled, long payloads in place) is the
		// same bytes, of the size it declares.
		pb, err := req.pooledBody()
		if err != nil {
			t.Fatal(err)
		}
		if sent := bytes.Join(pb.segments(), nil); !bytes.Equal(sent, got) || pb.size() != int64(len(got)) {
			t.Fatalf("request %d: the call's body (%d bytes declared)\n%s\nis not\n%s", i, pb.size(), sent, got)
		}
		pb.release()
	}
}
