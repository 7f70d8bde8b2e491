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
// pushes share it; -4 is the log start and -5 and -6 are -1/-1, as Kafka
// answers without tiered storage; an empty partition has no max and an
// unknown topic is refused; below the version that introduced it a
// sentinel, and at any version a negative timestamp that is none, is
// UNSUPPORTED_VERSION, as Kafka answers.
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

	for v := int16(6); v <= 11; v++ {
		before := e.fetches.Load()
		queries := []offsetQuery{
			{"orders", 0, -3},
			{"orders", 1, -3},
			{"orders", 2, -3}, // never written
			{"orders", 0, -4},
			{"orders", 0, -5},
			{"orders", 0, -6},
			{"orders", 1, -1},
			{"orders", 0, -7}, // no sentinel
		}
		resp := e.listOffsets(v, queries...)
		calls := e.fetches.Load() - before
		ps := resp.Topics[0].Partitions
		want := []struct {
			off, ts int64
			since   int16 // the first version that carries the sentinel
		}{
			{27, ms(90 * time.Second), 7},
			{1, ms(time.Second), 7},
			{-1, -1, 7},
			{0, -1, 8},
			{-1, -1, 9},
			{-1, -1, 11},
			{6, -1, 1},
			{-1, -1, 99},
		}
		for i, w := range want {
			code := int16(0)
			if v < w.since {
				code = kerr.UnsupportedVersion.Code
			}
			wantOff, wantTS := w.off, w.ts
			if code != 0 {
				wantOff, wantTS = -1, -1
			}
			require.Equal(t, code, ps[i].ErrorCode, "v%d query %d (%d)", v, i, queries[i].ts)
			require.Equal(t, wantOff, ps[i].Offset, "v%d query %d offset", v, i)
			require.Equal(t, wantTS, ps[i].Timestamp, "v%d query %d timestamp", v, i)
			require.Equal(t, int32(-1), ps[i].LeaderEpoch, "v%d query %d epoch", v, i)
		}
		// Bounds, the last record of each, then ceil(log2(30)) rounds.
		require.LessOrEqual(t, calls, int64(1+1+5), "v%d", v)

		if v < 11 {
			continue
		}
		resp = e.listOffsets(v, offsetQuery{"absent", 0, -3}, offsetQuery{"absent", 0, -4}, offsetQuery{"absent", 0, -5}, offsetQuery{"absent", 0, -6})
		for _, p := range resp.Topics[0].Partitions {
			require.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode, "v%d", v)
		}
		resp = e.listOffsets(v, offsetQuery{"orders", 9, -3})
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode, "v%d", v)
	}
}
