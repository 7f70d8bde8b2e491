package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// TestFetchFirstBatchWhole (issue 20, item 5; KIP-74): a fetch whose
// budgets are spent by the first record still answers the rest of the
// producer batch it came in, as Kafka answers the first batch whole, and
// nothing of the batch produced after it. The batch's records are larger
// than Queen's answer to the small budget holds, so the facade asks Queen
// again for the whole push. Before, the answer was the first record alone
// (segmentio/kafka-go's Conn found its batch of 10 cut after one).
func TestFetchFirstBatchWhole(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("kip74")
	first := batchtest.BenchRecords(10, 1000)
	e.produce("kip74", 0, batchtest.Batch{FirstTS: 1787824800123, Records: first}.Encode(t))
	e.produce("kip74", 0, batchtest.Batch{FirstTS: 1787824801000, Records: batchtest.BenchRecords(10, 1000)}.Encode(t))

	for _, tc := range []struct {
		name               string
		version            int16
		maxBytes, partMax  int32
		offset, firstTaken int64
	}{
		{"partition_max_bytes below one record", 6, 1 << 20, 1500, 0, 0},
		{"max_bytes below one record", 6, 1500, 1 << 20, 0, 0},
		{"both below two records", 4, 2500, 2500, 0, 0},
		{"from inside the batch", 11, 1500, 1500, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.fetch(fetchReq(tc.version, 0, 1, tc.maxBytes, fetchPart{"kip74", 0, tc.offset, tc.partMax}))
			p := resp.Topics[0].Partitions[0]
			require.Equal(t, int16(0), p.ErrorCode)
			require.Equal(t, int64(20), p.HighWatermark)
			rb, recs := readBatch(t, p.RecordBatches)
			require.Equal(t, tc.firstTaken, rb.FirstOffset)
			require.Equal(t, int(10-tc.firstTaken), len(recs), "the rest of the first batch, and nothing of the second")
			for i, r := range recs {
				require.Equal(t, first[int(tc.firstTaken)+i].Value, r.Value)
			}
		})
	}

	// Past the first batch the budgets apply as before: a fetch from the
	// second batch's start is that batch whole, and a fetch of two
	// partitions takes nothing of the second once the first is past them.
	resp := e.fetch(fetchReq(6, 0, 1, 1500, fetchPart{"kip74", 0, 10, 1500}, fetchPart{"kip74", 1, 0, 1500}))
	rb, recs := readBatch(t, resp.Topics[0].Partitions[0].RecordBatches)
	require.Equal(t, int64(10), rb.FirstOffset)
	require.Equal(t, 10, len(recs))
	require.Empty(t, resp.Topics[0].Partitions[1].RecordBatches)
}

// TestWatchedFetchFirstBatchWhole: a watched fetch (a session wider than
// one Queen call, its partitions parked at Queen) answers the first batch
// whole too, whichever way its records reached it.
func TestWatchedFetchFirstBatchWhole(t *testing.T) {
	const parts = 1100
	e, _ := watchEnv(t, parts)
	id := e.fetch(sessionReq(12, 0, 0, wideParts(parts)...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics, "nothing yet; the session's partitions parked")

	e.produce("wide", 700, batchtest.Batch{FirstTS: 1, Records: batchtest.BenchRecords(10, 1000)}.Encode(t))
	e.produce("wide", 700, batchtest.Batch{FirstTS: 2, Records: batchtest.BenchRecords(10, 1000)}.Encode(t))
	req := waitingReq(id, 2, 5000)
	req.MaxBytes = 1500
	require.Equal(t, map[string]int{"wide/700": 10}, answered(t, e.fetch(req)), "the first batch, whole")
}
