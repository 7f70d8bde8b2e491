package node

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

type epochQuery struct {
	topic          string
	partition      int32
	epoch, current int32
}

func (e *dataEnv) offsetForLeaderEpoch(version int16, replica int32, qs ...epochQuery) *kmsg.OffsetForLeaderEpochResponse {
	e.t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = version, replica
	for _, q := range qs {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != q.topic {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = q.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = q.partition, q.epoch, q.current
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp, err := e.n.handleOffsetForLeaderEpoch(context.Background(), e.c, req)
	require.NoError(e.t, err)
	return resp.(*kmsg.OffsetForLeaderEpochResponse)
}

// TestOffsetForLeaderEpochEveryVersion: epoch -1, the only one, ends at the
// high watermark (0 for an empty partition); any other epoch is undefined;
// current_leader_epoch is not fenced and replica_id changes nothing; an
// unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION.
func TestOffsetForLeaderEpochEveryVersion(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	e.createTopic("orders")
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	e.produce("orders", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t))
	for v := int16(0); v <= 4; v++ {
		for _, replica := range []int32{-1, -2, 3} {
			resp := e.offsetForLeaderEpoch(v, replica,
				epochQuery{"orders", 0, -1, -1},
				epochQuery{"orders", 0, -1, 7}, // not fenced
				epochQuery{"orders", 1, -1, -1},
				epochQuery{"orders", 0, 0, -1},
				epochQuery{"orders", 0, 5, 5},
				epochQuery{"orders", 9, -1, -1},
				epochQuery{"absent", 0, -1, -1},
			)
			require.Len(t, resp.Topics, 2)
			ps := append(resp.Topics[0].Partitions, resp.Topics[1].Partitions...)
			want := []struct {
				code int16
				end  int64
			}{
				{0, 6}, {0, 6}, {0, 0}, {0, -1}, {0, -1},
				{kerr.UnknownTopicOrPartition.Code, -1},
				{kerr.UnknownTopicOrPartition.Code, -1},
			}
			require.Len(t, ps, len(want))
			for i, w := range want {
				require.Equal(t, w.code, ps[i].ErrorCode, "v%d replica %d query %d", v, replica, i)
				require.Equal(t, w.end, ps[i].EndOffset, "v%d replica %d query %d", v, replica, i)
				require.Equal(t, int32(-1), ps[i].LeaderEpoch, "v%d query %d", v, i)
			}
		}
	}
	e.fault(map[string]any{"route": "fetch", "status": 403, "count": 1})
	p := e.offsetForLeaderEpoch(4, -1, epochQuery{"orders", 0, -1, -1}).Topics[0].Partitions[0]
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, p.ErrorCode)
	e.fault(map[string]any{"route": "fetch", "status": 429, "count": 1})
	resp := e.offsetForLeaderEpoch(4, -1, epochQuery{"orders", 0, -1, -1})
	require.Equal(t, kerr.LeaderNotAvailable.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int32(1000), resp.ThrottleMillis)
	require.Equal(t, int64(6), e.offsetForLeaderEpoch(4, -1, epochQuery{"orders", 0, -1, -1}).Topics[0].Partitions[0].EndOffset)
}

// TestLeaderEpochIsMinusOneEverywhere: through franz-go, every leader epoch
// a client can see is -1 — Metadata's, a fetched record's, a committed
// offset's, ListOffsets' — and OffsetForLeaderEpoch of that epoch, at each
// version a client can pin, answers the end offset.
func TestLeaderEpochIsMinusOneEverywhere(t *testing.T) {
	e, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.createTopic("epochs")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"epochs": {0: kgo.NewOffset().AtStart()}}),
		kgo.DefaultProduceTopic("epochs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte{byte(i)}}).FirstErr())
	}
	var got []*kgo.Record
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		got = append(got, fs.Records()...)
	}
	for _, r := range got {
		require.Equal(t, int32(-1), r.LeaderEpoch, "record %d", r.Offset)
	}
	adm := newAdmin(cl)
	md, err := adm.Metadata(ctx, "epochs")
	require.NoError(t, err)
	for _, p := range md.Topics["epochs"].Partitions {
		require.Equal(t, int32(-1), p.LeaderEpoch, "metadata partition %d", p.Partition)
	}
	ends, err := adm.ListEndOffsets(ctx, "epochs")
	require.NoError(t, err)
	end, _ := ends.Lookup("epochs", 0)
	require.Equal(t, int64(3), end.Offset)
	require.Equal(t, int32(-1), end.LeaderEpoch)
	_, err = adm.CommitOffsets(ctx, "epochs-g", offsetsFromRecords(*got[2]))
	require.NoError(t, err)
	committed, err := adm.FetchOffsets(ctx, "epochs-g")
	require.NoError(t, err)
	c, _ := committed.Lookup("epochs", 0)
	require.Equal(t, int64(3), c.At)
	require.Equal(t, int32(-1), c.LeaderEpoch)

	for v := int16(0); v <= 4; v++ {
		adm := pinned(t, addr, kmsg.OffsetForLeaderEpoch, v)
		mark := obs.mark()
		var req leaderEpochRequest
		req.Add("epochs", 0, -1)
		req.Add("epochs", 1, -1)
		req.Add("epochs", 2, 4)
		rs, err := adm.OffsetForLeaderEpoch(ctx, req)
		require.NoError(t, err, "v%d", v)
		for p, want := range map[int32]int64{0: 3, 1: 0, 2: -1} {
			r := rs["epochs"][p]
			require.NoError(t, r.Err, "v%d partition %d", v, p)
			require.Equal(t, want, r.EndOffset, "v%d partition %d", v, p)
			require.Equal(t, int32(-1), r.LeaderEpoch, "v%d partition %d", v, p)
		}
		require.Equal(t, []int16{v}, obs.versionsSeen(kmsg.OffsetForLeaderEpoch, mark), "negotiated version")
	}
}
