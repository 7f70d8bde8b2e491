package fetchread

import (
	"fmt"
	"math/rand/v2"
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

// pushed is Queen's answer from offset of pushes, each n records of size
// value bytes sharing its own commit time (§6: a push shares its ts).
func pushed(offset int64, size int, pushes ...int) *queen.FetchResult {
	r := &queen.FetchResult{HighWatermark: offset}
	for p, n := range pushes {
		ts := fmt.Sprintf("2026-01-01T00:00:%02d.000000Z", p)
		for range n {
			rec := envelope.Record{Value: make([]byte, size), Timestamp: 1}
			r.Records = append(r.Records, queen.FetchRecord{Offset: r.HighWatermark, Payload: envelope.Append(nil, &rec), TS: ts})
			r.HighWatermark++
		}
	}
	return r
}

// The response's first record comes with the rest of its push past every
// budget (KIP-74: the first batch whole), up to its topic's largest batch,
// and nothing of the push after it; a later partition takes no push whole.
func TestFillFirstPushWhole(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 4, 10
	f := New(req, recordbatch.NewEncoder(), nil)
	a, b := slot(1), slot(1)
	a.Batch, b.Batch = 1<<20, 1<<20
	f.Answer(&a, pushed(5, 100, 4, 3))
	require.Equal(t, int64(9), a.Next, "the first push, whole")
	require.False(t, a.more, "Queen answered past the push")
	require.True(t, f.Spent())
	f.Answer(&b, pushed(0, 1, 3))
	require.Empty(t, b.Resp.RecordBatches, "the budget is spent")

	// firstPush fills one slot of the given largest batch from r and
	// returns the slot.
	firstPush := func(batch int, r *queen.FetchResult) Slot {
		s := slot(1)
		s.Batch = batch
		New(req, recordbatch.NewEncoder(), nil).Answer(&s, r)
		return s
	}

	// Bounded by the topic's largest batch: 3 records of 136 bytes at most.
	require.Equal(t, int64(3), firstPush(500, pushed(0, 100, 10)).Next)

	// A gap (retention) ends the push; so does a missing ts.
	r := pushed(0, 10, 5)
	r.Records[3].Offset, r.Records[4].Offset = 7, 8
	require.Equal(t, int64(3), firstPush(1<<20, r).Next)
	r = pushed(0, 10, 5)
	for i := range r.Records {
		r.Records[i].TS = ""
	}
	require.Equal(t, int64(1), firstPush(1<<20, r).Next)

	// Queen's answer ended inside the push, short of its high watermark:
	// the slot asks to be read again for the push's whole length.
	r = pushed(0, 10, 5)
	r.Records = r.Records[:2]
	a = firstPush(1<<20, r)
	require.Equal(t, int64(2), a.Next)
	require.True(t, a.more)
}

// For any pushes, budgets and bound, a fill takes a prefix of Queen's
// records: within the budgets, or the first record, or records of the
// first record's push within the bound; never a record of a later push
// past a budget, and the first push whole when Queen answered it and the
// bound allows.
func TestFillFirstPushProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 74))
	for range 2000 {
		pushes := make([]int, 1+rng.IntN(4))
		for i := range pushes {
			pushes[i] = 1 + rng.IntN(12)
		}
		size := rng.IntN(300)
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes = 4, int32(rng.IntN(4000))
		f := New(req, recordbatch.NewEncoder(), nil)
		s := slot(1 + rng.IntN(4000))
		s.Batch = rng.IntN(6000)
		r := pushed(0, size, pushes...)
		f.Answer(&s, r)

		taken := int(s.Next)
		require.GreaterOrEqual(t, taken, 1, "the first record, always")
		est := recordBound(&envelope.Record{Value: make([]byte, size)})
		within := func(n int) bool { // n records fit both budgets
			return recordbatch.HeaderLen+n*est <= min(s.Max, int(req.MaxBytes))
		}
		bounded := func(n int) bool { return recordbatch.HeaderLen+n*est <= s.Batch }
		if taken > 1 && !within(taken) {
			require.Equal(t, r.Records[0].TS, r.Records[taken-1].TS, "past the budgets only the first push: %v size %d max %d/%d batch %d taken %d", pushes, size, s.Max, req.MaxBytes, s.Batch, taken)
			require.True(t, bounded(taken), "the push within its bound")
		}
		if taken < len(r.Records) && r.Records[taken].TS == r.Records[0].TS {
			require.False(t, within(taken+1) || bounded(taken+1), "the first push stops only at its bound")
		}
		if taken < len(r.Records) && r.Records[taken].TS != r.Records[0].TS {
			require.False(t, within(taken+1), "a later push stops at the budgets")
		}
	}
}
