package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// fetchPart is one partition of a fetch request.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	max       int32
}

func fetchReq(version int16, waitMs, minBytes, maxBytes int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, -1, waitMs, minBytes, maxBytes
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = p.partition, p.offset, p.max, -1
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return req
}

func (e *dataEnv) fetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	e.t.Helper()
	resp, err := e.n.handleFetch(context.Background(), e.c, req)
	require.NoError(e.t, err)
	return resp.(*kmsg.FetchResponse)
}

// readBatch decodes the single batch of a partition answer.
func readBatch(t *testing.T, raw []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(raw))
	require.Equal(t, int(rb.Length)+recordbatch.LengthBase, len(raw), "one batch per partition")
	return rb, batchtest.Records(t, rb.Records, rb.NumRecords)
}

func TestFetchReturnsRecordsAsProduced(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	e.produce("orders", 2, batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1787824800123, Records: batchtest.SampleRecords()}.Encode(t))
	e.produce("orders", 2, batchtest.Batch{Codec: recordbatch.CodecGzip, FirstTS: 1787824801000, Records: batchtest.SampleRecords()[:1]}.Encode(t))

	resp := e.fetch(fetchReq(6, 0, 1, 1<<20, fetchPart{"orders", 2, 1, 1 << 20}))
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(4), p.HighWatermark)
	require.Equal(t, int64(4), p.LastStableOffset)
	require.Equal(t, int64(0), p.LogStartOffset)
	rb, recs := readBatch(t, p.RecordBatches)
	require.Equal(t, int64(1), rb.FirstOffset)
	require.Equal(t, int32(2), rb.LastOffsetDelta)
	require.Equal(t, int64(-1), rb.ProducerID)
	require.Equal(t, int32(-1), rb.PartitionLeaderEpoch)
	require.Equal(t, int16(0), rb.Attributes, "uncompressed, CreateTime")
	require.Len(t, recs, 3)
	require.Nil(t, recs[0].Key)
	require.Equal(t, []byte{0xff, 0x00, 0x80}, recs[0].Value)
	require.Equal(t, int64(1787824800128), rb.FirstTimestamp+recs[0].TimestampDelta64)
	require.Equal(t, []byte{}, recs[1].Key)
	require.Nil(t, recs[1].Value)
	require.Equal(t, []byte("order-42"), recs[2].Key)
	require.Equal(t, []kmsg.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "null-header"}}, recs[2].Headers)
	require.Equal(t, int64(1787824801000), rb.FirstTimestamp+recs[2].TimestampDelta64)
	require.Equal(t, int64(1787824801000), rb.MaxTimestamp)
}

// TestFetchNativePayload: a record a native Queen producer wrote is served
// with no key, its JSON text as the value and its append time.
func TestFetchNativePayload(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	_, err := e.q.Push(context.Background(), []queen.PushItem{{Queue: "native", Partition: "0", Payload: json.RawMessage(`{"order":42}`)}})
	require.NoError(t, err)
	p := e.fetch(fetchReq(6, 0, 1, 1<<20, fetchPart{"native", 0, 0, 1 << 20})).Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	rb, recs := readBatch(t, p.RecordBatches)
	require.Nil(t, recs[0].Key)
	require.Equal(t, `{"order":42}`, string(recs[0].Value))
	require.InDelta(t, time.Now().UnixMilli(), rb.FirstTimestamp, 60_000)
}

func TestFetchBoundaries(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	resp := e.fetch(fetchReq(5, 0, 0, 1<<20,
		fetchPart{"orders", 0, 3, 1 << 20}, // at the high watermark
		fetchPart{"orders", 1, 0, 1 << 20}, // never written
		fetchPart{"orders", 9, 0, 1 << 20}, // past the width
		fetchPart{"absent", 0, 0, 1 << 20},
		fetchPart{"__consumer_offsets", 0, 0, 1 << 20},
	))
	ps := resp.Topics[0].Partitions
	require.Equal(t, int16(0), ps[0].ErrorCode)
	require.Empty(t, ps[0].RecordBatches)
	require.Equal(t, int64(3), ps[0].HighWatermark)
	require.Equal(t, int16(0), ps[1].ErrorCode)
	require.Equal(t, int64(0), ps[1].HighWatermark)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[2].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[2].Partitions[0].ErrorCode)

	// A partition named twice in one fetch is one partition (Kafka reads
	// them into a map), so the offsets out of range are fetches of their own.
	past := e.fetch(fetchReq(5, 0, 0, 1<<20, fetchPart{"orders", 0, 4, 1 << 20})).Topics[0].Partitions[0]
	require.Equal(t, kerr.OffsetOutOfRange.Code, past.ErrorCode)
	require.Equal(t, int64(3), past.HighWatermark, "real bounds with the error")
	negative := e.fetch(fetchReq(5, 0, 0, 1<<20, fetchPart{"orders", 0, -1, 1 << 20})).Topics[0].Partitions[0]
	require.Equal(t, kerr.OffsetOutOfRange.Code, negative.ErrorCode)
}

// TestFetchByteBudgets: partitions fill in request order; the first record
// of the response is whole whatever the budgets, later partitions get only
// what fits and are otherwise empty reads with real watermarks.
func TestFetchByteBudgets(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("t")
	big := make([]byte, 50_000)
	for p := int32(0); p < 3; p++ {
		// A batch each: the response's first batch comes whole past the
		// budgets (TestFetchFirstBatchWhole), which these are not about.
		for _, v := range [][]byte{big, big, []byte("small")} {
			e.produce("t", p, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: v}}}.Encode(t))
		}
	}
	resp := e.fetch(fetchReq(6, 0, 1, 1<<20,
		fetchPart{"t", 0, 0, 1000},    // first: one oversized record, whole
		fetchPart{"t", 1, 0, 1000},    // not first: nothing fits
		fetchPart{"t", 2, 2, 1 << 20}, // fits
	))
	ps := resp.Topics[0].Partitions
	_, recs := readBatch(t, ps[0].RecordBatches)
	require.Equal(t, 1, len(recs))
	require.Equal(t, 50_000, len(recs[0].Value))
	require.Empty(t, ps[1].RecordBatches)
	require.Equal(t, int64(3), ps[1].HighWatermark)
	_, recs = readBatch(t, ps[2].RecordBatches)
	require.Equal(t, 1, len(recs))

	// The response budget: 100,150 bytes hold the first partition's two big
	// records (bounded at 61 + 2 x 50,041) but not its small third one, and
	// nothing of the next partition.
	resp = e.fetch(fetchReq(6, 0, 1, 100_150, fetchPart{"t", 0, 0, 1 << 20}, fetchPart{"t", 1, 0, 1 << 20}))
	ps = resp.Topics[0].Partitions
	_, recs = readBatch(t, ps[0].RecordBatches)
	require.Equal(t, 2, len(recs))
	require.Empty(t, ps[1].RecordBatches)
	require.Equal(t, int64(3), ps[1].HighWatermark)
	require.LessOrEqual(t, len(ps[0].RecordBatches), 100_150)
}

// TestFetchResponsesShareTheNodeBudget: the batches of fetch responses
// built and not yet written are paid on the node's budget, given back once
// the connection writes them. A response finding the node's budget spent
// takes no further partition (an empty read with real watermarks), but its
// first record always: every consumer progresses.
func TestFetchResponsesShareTheNodeBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("t")
	big := make([]byte, 50_000)
	for p := int32(0); p < 2; p++ {
		recs := []kmsg.Record{{Value: big}, {Value: big}}
		e.produce("t", p, batchtest.Batch{FirstTS: 1, Records: recs}.Encode(t))
	}
	e.n.fetchMem = budget.New(150_000)
	both := func() []kmsg.FetchResponseTopicPartition {
		return e.fetch(fetchReq(6, 0, 1, 1<<20, fetchPart{"t", 0, 0, 1 << 20}, fetchPart{"t", 1, 0, 1 << 20})).Topics[0].Partitions
	}

	ps := both()
	_, recs := readBatch(t, ps[0].RecordBatches)
	require.Equal(t, 2, len(recs), "the first partition fits the node's budget")
	require.Empty(t, ps[1].RecordBatches, "the second does not")
	require.Equal(t, int64(2), ps[1].HighWatermark, "real watermarks with the empty read")
	held := int64(len(ps[0].RecordBatches))
	require.Equal(t, 150_000-held, e.n.fetchMem.Free(), "held until written")

	// Another consumer's fetch meanwhile: the budget is spent, so its
	// response takes its first record only, unpaid.
	ps = both()
	_, recs = readBatch(t, ps[0].RecordBatches)
	require.Equal(t, 1, len(recs))
	require.Empty(t, ps[1].RecordBatches)
	require.Equal(t, 150_000-held, e.n.fetchMem.Free())

	e.c.ReleaseAnswer() // the connection wrote its answers
	require.Equal(t, int64(150_000), e.n.fetchMem.Free())
}

// TestFetchLongPollWokenByProduce: a fetch parked at the high watermark
// answers as soon as a produce lands, not at max_wait_ms.
func TestFetchLongPollWokenByProduce(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	done := make(chan *kmsg.FetchResponse, 1)
	start := time.Now()
	go func() {
		resp, err := e.n.handleFetch(context.Background(), testConn(t, e.n), fetchReq(6, 25_000, 1, 1<<20, fetchPart{"orders", 0, 0, 1 << 20}))
		if err != nil {
			done <- nil
			return
		}
		done <- resp.(*kmsg.FetchResponse)
	}()
	time.Sleep(200 * time.Millisecond)
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	resp := <-done
	require.NotNil(t, resp)
	_, recs := readBatch(t, resp.Topics[0].Partitions[0].RecordBatches)
	require.Len(t, recs, 3)
	require.Less(t, time.Since(start), 20*time.Second, "woken by the write, not by the wait running out")
}

func TestFetchQueenFaults(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	req := func() *kmsg.FetchRequest { return fetchReq(6, 0, 1, 1<<20, fetchPart{"orders", 0, 0, 1 << 20}) }
	three := 3
	e.fault(map[string]any{"route": "fetch", "status": 429, "retryAfter": three, "count": 1})
	resp := e.fetch(req())
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int32(3000), resp.ThrottleMillis)
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(-1), p.HighWatermark)
	require.Equal(t, int64(-1), p.LogStartOffset)
	require.Empty(t, p.RecordBatches)

	e.fault(map[string]any{"route": "fetch", "status": 403, "count": 1})
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, e.fetch(req()).Topics[0].Partitions[0].ErrorCode)
	e.fault(map[string]any{"route": "fetch", "status": 503, "count": 1})
	require.Equal(t, kerr.NotLeaderForPartition.Code, e.fetch(req()).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int16(0), e.fetch(req()).Topics[0].Partitions[0].ErrorCode)
}

// TestFetchChunksPastQueenLimit: more than 1,024 partitions are read in
// calls of at most 1,024 entries, answered in request order.
func TestFetchChunksPastQueenLimit(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "1100"})
	e.createTopic("wide")
	e.produce("wide", 1099, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	var parts []fetchPart
	for p := int32(0); p < 1100; p++ {
		parts = append(parts, fetchPart{"wide", p, 0, 1 << 20})
	}
	before := e.fetches.Load()
	resp := e.fetch(fetchReq(6, 0, 1, 1<<20, parts...))
	require.Equal(t, int64(2), e.fetches.Load()-before)
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 1100)
	for i, p := range ps {
		require.Equal(t, int32(i), p.Partition)
		require.Equal(t, int16(0), p.ErrorCode, fmt.Sprint(i))
	}
	_, recs := readBatch(t, ps[1099].RecordBatches)
	require.Len(t, recs, 3)
}

// TestFetchErrorAnswersAtOnce: a partition refused before Queen is asked
// (here: past the width) makes the fetch answer without parking, and
// read_committed gets an empty aborted-transactions list.
func TestFetchErrorAnswersAtOnce(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	req := fetchReq(6, 20_000, 1, 1<<20, fetchPart{"orders", 0, 0, 1 << 20}, fetchPart{"orders", 9, 0, 1 << 20})
	req.IsolationLevel = 1
	start := time.Now()
	resp := e.fetch(req)
	require.Less(t, time.Since(start), 10*time.Second, "answered at once, not after max_wait_ms")
	ps := resp.Topics[0].Partitions
	require.Equal(t, int16(0), ps[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[1].ErrorCode)
	require.NotNil(t, ps[0].AbortedTransactions)
	require.NotNil(t, ps[0].RecordBatches, "an empty record set, never a null one")
}

// TestFetchResponseCeiling: whatever max_bytes asks, a response stops at
// 32 MiB; the partitions past it are empty reads with real watermarks.
func TestFetchResponseCeiling(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "8"})
	e.createTopic("huge")
	rr := incrementalAlter(t, e.n, e.c, "huge", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp("8388608"))
	require.Equal(t, int16(0), rr.ErrorCode, "max.message.bytes of a native topic is the facade's to set")
	value := make([]byte, 5<<20)
	var parts []fetchPart
	for p := int32(0); p < 7; p++ {
		require.Equal(t, int16(0), e.produce("huge", p, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: value}}}.Encode(t)).ErrorCode)
		parts = append(parts, fetchPart{"huge", p, 0, 8 << 20})
	}
	resp := e.fetch(fetchReq(6, 0, 1, 100<<20, parts...))
	total := 0
	for i, p := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), p.ErrorCode)
		require.Equal(t, int64(1), p.HighWatermark)
		total += len(p.RecordBatches)
		if i < 6 {
			require.NotEmpty(t, p.RecordBatches, "partition %d fits", i)
		} else {
			require.Empty(t, p.RecordBatches, "partition %d is past 32 MiB", i)
		}
	}
	require.LessOrEqual(t, total, fetchread.MaxResponse)
}
