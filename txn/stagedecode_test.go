package txn

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// checkStageDecode: whatever the fast stage decoders take, encoding/json
// takes too and decodes alike.
func checkStageDecode(t *testing.T, b []byte) {
	t.Helper()
	if fast, ok := scanStageRecords(b); ok {
		slow, err := unmarshalStageRecords(b)
		if err != nil {
			t.Fatalf("row %q: fast took it, encoding/json: %v", b, err)
		}
		if fast.Topic != slow.Topic || fast.Partition != slow.Partition || fast.Bytes != slow.Bytes || fast.Chunks != slow.Chunks ||
			!bytes.Equal(fast.Data, slow.Data) || (fast.Data == nil) != (slow.Data == nil) ||
			!bytes.Equal(fast.Pairs, slow.Pairs) || (fast.Pairs == nil) != (slow.Pairs == nil) {
			t.Fatalf("row %q: fast %+v, encoding/json %+v", b, fast, slow)
		}
	}
	if keys, payloads, ok := scanPairs(b); ok {
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(b, &pairs); err != nil {
			t.Fatalf("array %q: fast took it, encoding/json: %v", b, err)
		}
		if len(pairs) != len(keys) || len(pairs) != len(payloads) {
			t.Fatalf("array %q: %d pairs fast, %d slow", b, len(keys), len(pairs))
		}
		for i, p := range pairs {
			var key string
			if err := json.Unmarshal(p[0], &key); err != nil || key != keys[i] || !bytes.Equal(p[1], payloads[i]) {
				t.Fatalf("array %q pair %d: fast %q %q, encoding/json %q %q (%v)", b, i, keys[i], payloads[i], key, p[1], err)
			}
		}
	}
}

// What recordRows writes is read back by the fast decoders, record for
// record; and odd texts are left to encoding/json.
func TestStageDecodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := rng.IntN(40)
		b := &Batch{Topic: "t." + strconv.Itoa(round), Partition: rng.Int32N(1000), FirstSeq: rng.Int32(), Bytes: rng.Int64N(1 << 40)}
		if rng.IntN(4) > 0 {
			b.Keys = make([]string, n)
		}
		for i := range n {
			size := rng.IntN(3000)
			if rng.IntN(40) == 0 {
				size = 45_000 + rng.IntN(10_000) // past a row of the array form
			}
			rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: make([]byte, size), Timestamp: rng.Int64N(1 << 45)}
			for j := range rec.Value {
				rec.Value[j] = byte(rng.IntN(256))
			}
			if rng.IntN(3) == 0 {
				rec.Headers = []envelope.Header{{Key: "h\"\\\u2028", Value: []byte{0, 1, 2}}}
			}
			b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
			if b.Keys != nil {
				b.Keys[i] = "qk:7:" + strconv.Itoa(i)
			}
		}
		for _, write := range []func(string, *Batch, int64) ([]queen.KVOp, error){recordRows, base64RecordRows} {
			ops, err := write("qk:txnstage:x:", b, 60)
			if err != nil {
				t.Fatal(err)
			}
			var a batchAssembly
			var items []queen.PushItem
			for c, op := range ops {
				checkStageDecode(t, op.Value)
				v, ok := scanStageRecords(op.Value)
				if !ok || v.Topic != b.Topic || v.Partition != b.Partition || v.Chunks != len(ops) || (c == 0 && v.Bytes != b.Bytes) || (c > 0 && v.Bytes != 0) {
					t.Fatalf("row %d of %d: fast decoder %v: %+v", c, len(ops), ok, v)
				}
				if items, err = a.add(items, "b", c, v); err != nil {
					t.Fatal(err)
				}
			}
			if len(items) != n || a.id != "" {
				t.Fatalf("%d records read back of %d (assembly left %q)", len(items), n, a.id)
			}
			for i, it := range items {
				want := ""
				if b.Keys != nil {
					want = b.Keys[i]
				}
				if it.TransactionID != want || !bytes.Equal(it.Payload, b.Payloads[i]) || it.Queue != b.Topic || it.Partition != strconv.Itoa(int(b.Partition)) {
					t.Fatalf("record %d: %+v", i, it)
				}
			}
		}
	}
	for _, s := range []string{
		`{"q":"a","p":1,"n":1,"d":null}`, `{"q":"\u0061","p":1,"n":1,"d":""}`, `{"p":1,"q":"a","n":1,"d":""}`, `{"q":"a","p":1.0,"n":1,"d":""}`,
		`{"q":"a","p":1,"n":1,"d":"eA="}`, `{"q":"a","p":99999999999,"n":1,"d":""}`, `{"q":"a","p":1,"n":1,"d":"eA=="} `,
		`[["k",1,2]]`, `[["k"]]`, `[[null,1]]`, `[["\u006b",1]]`, `[["k",1],]`, `[["k",01]]`, "[[\"\xff\",1]]",
	} {
		if _, ok := scanStageRecords([]byte(s)); ok {
			t.Errorf("fast row decoder took %q", s)
		}
		if _, _, ok := scanPairs([]byte(s)); ok {
			t.Errorf("fast array decoder took %q", s)
		}
		checkStageDecode(t, []byte(s))
	}
	for _, s := range []string{`{"q":"a","p":-3,"n":2,"d":""}`, `{"q":"a","p":1,"b":9,"n":1,"d":[["k",{"v":null}]]}`, `{"q":"a","p":1,"n":3,"d":[]}`, `{"q":"a","p":0,"b":-0,"n":0,"d":"eHh4"}`, `[]`, ` [ [ "k" , {"a":[1]} ] , ["",null] ] `} {
		checkStageDecode(t, []byte(s))
		_, ok1 := scanStageRecords([]byte(s))
		_, _, ok2 := scanPairs([]byte(s))
		if !ok1 && !ok2 {
			t.Errorf("neither fast decoder took %q", s)
		}
	}
}

func FuzzStageDecode(f *testing.F) {
	f.Add([]byte(`{"q":"out","p":3,"b":1024,"n":1,"d":"W1sicWs6NzowOjEiLHsidiI6ImVBPT0ifV1d"}`))
	f.Add([]byte(`[["qk:7:0:1",{"k":"MQ==","t":1,"v":"eA=="}],["",{"v":"eA=="}]]`))
	f.Add([]byte(`{"q":"out","p":3,"b":1024,"n":1,"d":[["qk:7:0:1",{"v":"eA=="}]]}`))
	f.Fuzz(checkStageDecode)
}
