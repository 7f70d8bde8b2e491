package node

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// benchRecords is n records of size-byte incompressible-ish values with a
// key and a header, the shape of the throughput benchmark's records.
func benchRecords(n, size int) []kmsg.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]kmsg.Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + rng.IntN(16)) // compressible like text, not a run
		}
		recs[i] = kmsg.Record{Key: []byte("key-" + strconv.Itoa(i)), Value: v, TimestampDelta64: int64(i), Headers: []kmsg.Header{{Key: "trace", Value: []byte("abc")}}}
	}
	return recs
}

// BenchmarkProduceDecodeEnvelope is the facade's CPU on the produce hot
// path for one lz4 batch of 100 x 1 KiB records: framing and CRC,
// decompression, record walk and envelopes (the push body is rendered by
// the Queen client and measured in BenchmarkProduceVsDirectPush).
func BenchmarkProduceDecodeEnvelope(b *testing.B) {
	raw := testBatch{codec: codecLz4, firstTS: 1787824800123, records: benchRecords(100, 1024)}.encode(b)
	b.SetBytes(100 * 1024)
	b.ReportAllocs()
	var buf []byte
	var ends []int
	for b.Loop() {
		var rb kmsg.RecordBatch
		if f := parseProduceBatch(raw, &rb); f != nil {
			b.Fatal(f)
		}
		d := batchDecoders.Get().(*batchDecoder)
		var f *batchFault
		buf, ends, _, f = d.envelopes(&rb, buf[:0], ends[:0], maxDecompressed)
		d.release()
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
	for i, r := range benchRecords(100, 1024) {
		buf = queen.AppendEnvelope(buf[:0], &queen.Record{Key: r.Key, Value: r.Value, Timestamp: 1787824800123 + int64(i), Headers: []queen.Header{{Key: "trace", Value: []byte("abc")}}})
		stored = append(stored, queen.FetchRecord{Offset: int64(1000 + i), Payload: json.RawMessage(append([]byte(nil), buf...)), TS: "2026-08-28T09:15:00.123456Z"})
	}
	b.SetBytes(100 * 1024)
	b.ReportAllocs()
	var out []byte
	var recs []fetchedRecord
	for b.Loop() {
		recs = recs[:0]
		for _, fr := range stored {
			recs = append(recs, fetchedRecord{offset: fr.Offset, rec: queen.DecodePayload(fr.Payload, queen.ParseTS(fr.TS))})
		}
		out = appendFetchBatch(out[:0], recs)
	}
}

// BenchmarkProduceVsDirectPush compares, in one process against the same
// in-memory queen-dev, a Kafka produce through the handler (100 x 1 KiB,
// lz4, idempotent) with pushing the same envelopes directly: the ratio the
// issue's throughput target is about, without the network.
func BenchmarkProduceVsDirectPush(b *testing.B) {
	e := newDataEnv(b, dev.Options{}, nil)
	e.createTopic("bench")
	recs := benchRecords(100, 1024)
	pid := int64(1 << 40)
	b.Run("facade", func(b *testing.B) {
		b.SetBytes(100 * 1024)
		pid++ // each run of the function is a new producer
		seq := int32(0)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			raw := testBatch{codec: codecLz4, idem: true, pid: pid, firstSeq: seq, firstTS: time.Now().UnixMilli(), records: recs}.encode(b)
			b.StartTimer()
			resp, err := e.n.handleProduce(context.Background(), e.c, produceReq(9, -1, "bench", 0, raw))
			if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
				b.Fatal(err, resp)
			}
			seq += 100
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(100 * 1024)
		items := make([]queen.PushItem, len(recs))
		for i, r := range recs {
			items[i] = queen.PushItem{Queue: "bench", Partition: "1", Payload: queen.AppendEnvelope(nil, &queen.Record{Key: r.Key, Value: r.Value, Timestamp: 1})}
		}
		for b.Loop() {
			if _, err := e.q.Push(context.Background(), items); err != nil {
				b.Fatal(err)
			}
		}
	})
}
