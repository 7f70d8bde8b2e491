package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestKgoProduceConsumeAllCodecs drives a served node with franz-go at its
// defaults (idempotent producer, so InitProducerId and sequence windows are
// in play) through every codec, and reads the records back by timestamp
// lookup and fetch: keys (null and empty), values, headers, timestamps.
func TestKgoProduceConsumeAllCodecs(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	serveTestNode(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	ts := time.UnixMilli(1787824800123)
	for name, codec := range codecs {
		topic := "kgo-" + name
		prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(codec), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		var sent []*kgo.Record
		for i := 0; i < 20; i++ {
			r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("value-%d-%s", i, name)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
			switch i % 3 {
			case 0:
				r.Key = []byte(fmt.Sprintf("key-%d", i))
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "empty", Value: []byte{}}}
			case 1:
				r.Key = []byte{}
			}
			sent = append(sent, r)
		}
		require.NoError(t, prod.ProduceSync(ctx, sent...).FirstErr(), name)
		for i, r := range sent {
			require.Equal(t, int64(i), r.Offset, "%s: real offsets", name)
		}
		prod.Close()

		cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(time.Second))
		require.NoError(t, err)
		var got []*kgo.Record
		for len(got) < len(sent) && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			require.Empty(t, fs.Errors(), name)
			got = append(got, fs.Records()...)
		}
		cons.Close()
		require.Len(t, got, len(sent), name)
		for i, r := range got {
			w := sent[i]
			require.Equal(t, w.Offset, r.Offset)
			require.Equal(t, w.Value, r.Value)
			require.Equal(t, w.Key == nil, r.Key == nil, "%s %d: null key", name, i)
			require.Equal(t, string(w.Key), string(r.Key))
			require.Equal(t, w.Timestamp.UnixMilli(), r.Timestamp.UnixMilli())
			require.Equal(t, len(w.Headers), len(r.Headers))
		}
	}
}

// TestKgoIdempotentProducerSurvivesFacadeRestart: after a restart the
// facade holds no window and accepts the producer's next sequence, as
// Apache Kafka 3.9 does (issue 9; this test pinned seed 001's refusal and
// franz-go's epoch bump before): franz-go carries on at its epoch with no
// error, and every record lands exactly once.
func TestKgoIdempotentProducerSurvivesFacadeRestart(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	e.createTopic("restart")
	_, stop := serveStoppable(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(100*time.Millisecond))
	require.NoError(t, err)
	defer prod.Close()
	send := func(from int) {
		for i := from; i < from+10; i++ {
			r := &kgo.Record{Topic: "restart", Partition: 0, Value: []byte(fmt.Sprint(i))}
			require.NoError(t, prod.ProduceSync(ctx, r).FirstErr(), "record %d", i)
			require.Equal(t, int64(i), r.Offset)
		}
	}
	send(0)
	stop()
	e.n = e.node(env)
	_, stop = serveStoppable(t, e.n)
	defer stop()
	send(10)
	ps := e.producerState(0)
	require.NotNil(t, ps, "the restarted facade met producer 0")
	require.Equal(t, int16(0), ps.epoch, "carried on without an epoch bump")
	_, recs := e.stored("restart", 0)
	require.Len(t, recs, 20)
	for i, r := range recs {
		require.Equal(t, fmt.Sprint(i), string(r.Value))
	}
}
