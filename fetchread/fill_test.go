package fetchread

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// result is Queen's answer of n records of size value bytes from offset.
func result(offset int64, n, size int) *queen.FetchResult {
	r := &queen.FetchResult{HighWatermark: offset + int64(n), LogStartOffset: 0}
	for i := range n {
		rec := envelope.Record{Value: make([]byte, size), Timestamp: 1}
		r.Records = append(r.Records, queen.FetchRecord{Offset: offset + int64(i), Payload: envelope.Append(nil, &rec), TS: "2026-01-01T00:00:00Z"})
	}
	return r
}

func slot(max int) Slot {
	sp := kmsg.NewFetchResponseTopicPartition()
	return Slot{Resp: &sp, Max: max, Codec: recordbatch.CodecNone}
}

// The response's first record is taken whole past every budget, and a
// later partition whose records do not fit is an empty read with its real
// watermarks, after which no further chunk is asked.
func TestFillFirstRecordWhole(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 4, 10
	f := New(req, recordbatch.NewEncoder(), nil)
	a, b := slot(1), slot(1<<20)
	f.Answer(&a, result(5, 3, 1000))
	require.NotEmpty(t, a.Resp.RecordBatches)
	require.Equal(t, int64(6), a.Next, "one record, whole")
	require.True(t, f.Spent())
	f.Answer(&b, result(0, 1, 10))
	require.Empty(t, b.Resp.RecordBatches)
	require.Equal(t, int64(1), b.Resp.HighWatermark)
}

// The node's budget is paid per batch and handed back without a
// connection; past it only the response's first record is taken, unpaid,
// and a later partition is an empty read with its real watermarks.
func TestFillNodeBudget(t *testing.T) {
	mem := budget.New(500)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 4, 1<<20
	f := New(req, recordbatch.NewEncoder(), mem)
	a := slot(1 << 20)
	f.Answer(&a, result(0, 1, 10))
	require.Less(t, mem.Free(), int64(500), "paid")
	f.HandOver(nil)
	require.Equal(t, int64(500), mem.Free(), "given back without a connection")

	require.True(t, mem.TryAcquire(100)) // another response's batches
	f = New(req, recordbatch.NewEncoder(), mem)
	a, b := slot(1<<20), slot(1<<20)
	f.Answer(&a, result(0, 3, 1000))
	require.Equal(t, int64(1), a.Next, "the first record, whatever the node holds")
	f.Answer(&b, result(0, 1, 1000))
	require.Empty(t, b.Resp.RecordBatches, "the node's budget is spent")
	require.Equal(t, int64(1), b.Resp.HighWatermark)
	require.True(t, f.Spent())
	f.HandOver(nil)
	require.Equal(t, int64(400), mem.Free(), "the first record was taken unpaid")
}
