package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// brokerClock is queen-dev's clock: every push commits at its time.
type brokerClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *brokerClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *brokerClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

type offsetQuery struct {
	topic     string
	partition int32
	ts        int64
}

func (e *dataEnv) listOffsets(version int16, qs ...offsetQuery) *kmsg.ListOffsetsResponse {
	e.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = version, -1
	for _, q := range qs {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != q.topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = q.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = q.partition, q.ts, -1
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp, err := e.n.handleListOffsets(context.Background(), e.c, req)
	require.NoError(e.t, err)
	return resp.(*kmsg.ListOffsetsResponse)
}

// TestListOffsetsTimestampOnAppendClock: pushes committed ten seconds
// apart; a timestamp is answered with the earliest offset appended at or
// after it and that record's append time, in O(log n) probes, every
// partition's probes sharing each call.
func TestListOffsetsTimestampOnAppendClock(t *testing.T) {
	t0 := time.UnixMilli(1787824800123)
	clock := &brokerClock{t: t0}
	e := newDataEnv(t, dev.Options{Now: clock.now}, nil)
	e.createTopic("orders")
	for i := 0; i < 10; i++ {
		clock.set(t0.Add(time.Duration(i) * 10 * time.Second))
		// The producer's CreateTime is deliberately unrelated: the search
		// runs on append time.
		require.Equal(t, int64(3*i), e.produce("orders", 0, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()}.Encode(t)).BaseOffset)
		if i%3 == 0 {
			e.produce("orders", 1, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()[:1]}.Encode(t))
		}
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

	before := e.fetches.Load()
	resp := e.listOffsets(5,
		offsetQuery{"orders", 0, -1},
		offsetQuery{"orders", 0, -2},
		offsetQuery{"orders", 0, ms(-time.Second)},
		offsetQuery{"orders", 0, ms(15 * time.Second)},
		offsetQuery{"orders", 0, ms(20 * time.Second)},
		offsetQuery{"orders", 0, ms(20*time.Second + time.Millisecond)},
		offsetQuery{"orders", 0, ms(90 * time.Second)},
		offsetQuery{"orders", 0, ms(91 * time.Second)},
		offsetQuery{"orders", 1, ms(31 * time.Second)},
		offsetQuery{"orders", 3, ms(0)}, // never written: no match
	)
	calls := e.fetches.Load() - before
	ps := resp.Topics[0].Partitions
	want := []struct{ off, ts int64 }{
		{30, -1},
		{0, -1},
		{0, ms(0)},
		{6, ms(20 * time.Second)},
		{6, ms(20 * time.Second)},
		{9, ms(30 * time.Second)},
		{27, ms(90 * time.Second)},
		{-1, -1},
		{2, ms(60 * time.Second)},
		{-1, -1},
	}
	for i, w := range want {
		require.Equal(t, int16(0), ps[i].ErrorCode, "query %d", i)
		require.Equal(t, w.off, ps[i].Offset, "query %d offset", i)
		require.Equal(t, w.ts, ps[i].Timestamp, "query %d timestamp", i)
		require.Equal(t, int32(-1), ps[i].LeaderEpoch)
	}
	// One bounds probe plus ceil(log2(30)) rounds at most, for all ten.
	require.LessOrEqual(t, calls, int64(1+5))
}

// TestListOffsetsLargeRecords: a probe whose record exceeds the probe's
// budget, behind another partition's entry in the same call, is asked
// again rather than read as "nothing there".
func TestListOffsetsLargeRecords(t *testing.T) {
	t0 := time.UnixMilli(1787824800000)
	clock := &brokerClock{t: t0}
	e := newDataEnv(t, dev.Options{Now: clock.now}, nil)
	e.createTopic("big")
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "big", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp("16777216")).ErrorCode)
	sizes := []int{10 << 10, 300 << 10, 9 << 20, 10}
	for i, n := range sizes {
		clock.set(t0.Add(time.Duration(i) * time.Second))
		e.produce("big", 0, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, 10)}}}.Encode(t))
		e.produce("big", 1, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, n)}}}.Encode(t))
	}
	for i := range sizes {
		target := t0.Add(time.Duration(i) * time.Second).UnixMilli()
		resp := e.listOffsets(5, offsetQuery{"big", 0, target}, offsetQuery{"big", 1, target})
		for _, p := range resp.Topics[0].Partitions {
			require.Equal(t, int16(0), p.ErrorCode)
			require.Equal(t, int64(i), p.Offset, "partition %d, target %d", p.Partition, i)
			require.Equal(t, target, p.Timestamp)
		}
	}
}

func TestListOffsetsRefusalsAndFaults(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	resp := e.listOffsets(1,
		offsetQuery{"orders", 7, -1},
		offsetQuery{"absent", 0, -1},
		offsetQuery{"__consumer_offsets", 0, -1},
	)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[2].Partitions[0].ErrorCode)

	e.fault(map[string]any{"route": "fetch", "status": 403, "count": 1})
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, e.listOffsets(5, offsetQuery{"orders", 0, -1}).Topics[0].Partitions[0].ErrorCode)
	e.fault(map[string]any{"route": "fetch", "status": 429, "count": 1})
	resp = e.listOffsets(5, offsetQuery{"orders", 0, -1})
	require.Equal(t, kerr.LeaderNotAvailable.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int32(1000), resp.ThrottleMillis)
	e.fault(map[string]any{"route": "fetch", "status": 502, "count": 1})
	require.Equal(t, kerr.NotLeaderForPartition.Code, e.listOffsets(5, offsetQuery{"orders", 0, -1}).Topics[0].Partitions[0].ErrorCode)
	p := e.listOffsets(5, offsetQuery{"orders", 0, -1}).Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(3), p.Offset)
}
