package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// TestListOffsetsSentinels: MAX_TIMESTAMP (-3) is the earliest offset
// holding the largest append time, with that time, even when the last two
// pushes share it; -4 is the log start and -5 is -1/-1, as Kafka answers
// without tiered storage; an empty partition has no max and an unknown
// topic is refused, at every version that carries the sentinel.
func TestListOffsetsSentinels(t *testing.T) {
	t0 := time.UnixMilli(1787824800123)
	clock := &brokerClock{t: t0}
	e := newDataEnv(t, dev.Options{Now: clock.now}, nil)
	e.createTopic("orders")
	for i := 0; i < 10; i++ {
		clock.set(t0.Add(time.Duration(i) * 10 * time.Second))
		// CreateTime 5 everywhere: the answer is on the append clock.
		e.produce("orders", 0, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()}.Encode(t))
	}
	// Partition 1: two pushes in the same millisecond end the log.
	clock.set(t0)
	e.produce("orders", 1, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()[:1]}.Encode(t))
	clock.set(t0.Add(time.Second))
	e.produce("orders", 1, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()[:2]}.Encode(t))
	e.produce("orders", 1, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()}.Encode(t))
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

	for v := int16(7); v <= 10; v++ {
		before := e.fetches.Load()
		resp := e.listOffsets(v,
			offsetQuery{"orders", 0, -3},
			offsetQuery{"orders", 1, -3},
			offsetQuery{"orders", 2, -3}, // never written
			offsetQuery{"orders", 0, -4},
			offsetQuery{"orders", 0, -5},
			offsetQuery{"orders", 1, -1},
		)
		calls := e.fetches.Load() - before
		ps := resp.Topics[0].Partitions
		want := []struct{ off, ts int64 }{
			{27, ms(90 * time.Second)},
			{1, ms(time.Second)},
			{-1, -1},
			{0, -1},
			{-1, -1},
			{6, -1},
		}
		for i, w := range want {
			require.Equal(t, int16(0), ps[i].ErrorCode, "v%d query %d", v, i)
			require.Equal(t, w.off, ps[i].Offset, "v%d query %d offset", v, i)
			require.Equal(t, w.ts, ps[i].Timestamp, "v%d query %d timestamp", v, i)
			require.Equal(t, int32(-1), ps[i].LeaderEpoch, "v%d query %d epoch", v, i)
		}
		// Bounds, the last record of each, then ceil(log2(30)) rounds.
		require.LessOrEqual(t, calls, int64(1+1+5), "v%d", v)

		resp = e.listOffsets(v, offsetQuery{"absent", 0, -3}, offsetQuery{"absent", 0, -4}, offsetQuery{"absent", 0, -5})
		for _, p := range resp.Topics[0].Partitions {
			require.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode, "v%d", v)
		}
		resp = e.listOffsets(v, offsetQuery{"orders", 9, -3})
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode, "v%d", v)
	}
}
