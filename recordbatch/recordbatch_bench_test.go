package recordbatch_test

import (
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// BenchmarkProduceDecodeEnvelope is the facade's CPU on the produce hot
// path for one lz4 batch of 100 x 1 KiB records: framing and CRC,
// decompression, record walk and envelopes (the push body is rendered by
// the Queen client and measured in node's BenchmarkProduceVsDirectPush).
func BenchmarkProduceDecodeEnvelope(b *testing.B) {
	raw := batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1787824800123, Records: batchtest.BenchRecords(100, 1024)}.Encode(b)
	b.SetBytes(100 * 1024)
	b.ReportAllocs()
	var buf []byte
	var ends []int
	for b.Loop() {
		var rb kmsg.RecordBatch
		if f := recordbatch.ParseProduce(raw, &rb); f != nil {
			b.Fatal(f)
		}
		d := pool.GetUnpaid()
		var f *recordbatch.Fault
		buf, ends, _, f = d.EnvelopesWithin(&rb, buf[:0], ends[:0], maxDecompressed)
		d.Release()
		if f != nil {
			b.Fatal(f)
		}
	}
}

// BenchmarkFetchEncode is the fetch hot path for 100 x 1 KiB stored
// envelopes: envelope decode and re-encoding as one RecordBatch v2.
func BenchmarkFetchEncode(b *testing.B) {
	var stored []queen.FetchRecord
	var buf []byte
	for i, r := range batchtest.BenchRecords(100, 1024) {
		buf = envelope.Append(buf[:0], &envelope.Record{Key: r.Key, Value: r.Value, Timestamp: 1787824800123 + int64(i), Headers: []envelope.Header{{Key: "trace", Value: []byte("abc")}}})
		stored = append(stored, queen.FetchRecord{Offset: int64(1000 + i), Payload: json.RawMessage(append([]byte(nil), buf...)), TS: "2026-08-28T09:15:00.123456Z"})
	}
	b.SetBytes(100 * 1024)
	b.ReportAllocs()
	var out []byte
	var recs []recordbatch.Fetched
	for b.Loop() {
		recs = recs[:0]
		for _, fr := range stored {
			recs = append(recs, recordbatch.Fetched{Offset: fr.Offset, Record: envelope.DecodePayload(fr.Payload, queen.ParseTS(fr.TS))})
		}
		out = recordbatch.AppendFetchBatch(out[:0], recs)
	}
}
