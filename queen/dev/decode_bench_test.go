package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// facadeItems are n items as the facade stages them: 1 KiB values in
// payload envelopes over 8 partitions of one topic, each with its dedup key
// (a producer's sequence per partition, as producer.DedupKeys numbers them).
func facadeItems(n int) []queen.PushItem {
	value := bytes.Repeat([]byte("q"), 1024)
	items := make([]queen.PushItem, n)
	for i := range items {
		rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: value, Timestamp: 1787824800123 + int64(i)}
		items[i] = queen.PushItem{
			Queue: "out", Partition: strconv.Itoa(i % 8), Payload: envelope.Append(nil, &rec),
			TransactionID: "kafka:7:0:" + strconv.Itoa(i/8),
		}
	}
	return items
}

// facadeTxnBody is a commit's body: one push operation with n records and
// the fence and an offset commit in the KV rider.
func facadeTxnBody(tb testing.TB, n int) []byte {
	tb.Helper()
	held := int64(3)
	body, err := json.Marshal(queen.TxnRequest{
		Operations: []queen.TxnOperation{{Type: "push", Items: facadeItems(n)}},
		KV: []queen.KVOp{
			{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:txn:bench", Value: json.RawMessage(`{"pid":7,"epoch":0,"state":"committed","seq":1}`), Forever: true, Expect: &held, Required: true},
			{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:group:billing:in:0", Value: json.RawMessage(`{"offset":18,"metadata":"","ts":1787824800200}`), Forever: true},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkDecodeTxn: queen-dev's decoding and validation of a
// transaction body as the facade sends it (n 1 KiB records), in process.
func BenchmarkDecodeTxn(b *testing.B) {
	for _, n := range []int{100, 4000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			body := facadeTxnBody(b, n)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := decodeTxn(body)
				if err != nil || len(req.items) != n || len(req.kv) != 2 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodePush: the push route's decoding and validation of a body
// as the facade's produce path sends it (100 1 KiB records), in process.
func BenchmarkDecodePush(b *testing.B) {
	body, err := json.Marshal(queen.PushRequest{Items: facadeItems(100)})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		raws, err := decodePushBody(nil, body)
		if err != nil || len(raws) != 100 {
			b.Fatal(err)
		}
		var parts tokenCache
		for i := range raws {
			if _, err := checkItem(i, &raws[i], false, &parts); err != nil {
				b.Fatal(err)
			}
		}
	}
}
