package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// TestTopicConfigsClients: compression.type and max.message.bytes with
// franz-go and librdkafka (confluent-kafka-go) against the shared facade
// (and the compressed answers read by sarama and kafka-go too).
// A consumer of a gzip, snappy, lz4 or zstd topic is answered compressed
// batches (asserted on a raw Fetch's batch attributes; zstd only from
// Fetch v10, uncompressed below) and both clients read the records as
// produced; a 2 MiB record is refused MESSAGE_TOO_LARGE by both producers
// until max.message.bytes is raised; DescribeConfigs, through kadm and
// through librdkafka's admin client, reports both configs and their
// sources.
func TestTopicConfigsClients(t *testing.T) {
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	for _, codec := range []struct {
		name string
		id   int16
	}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}} {
		t.Run("fetch-"+codec.name, func(t *testing.T) {
			t.Parallel()
			topic := uniq("cfg-" + codec.name)
			createTopic(t, tg, topic, 1, map[string]*string{"compression.type": kmsg.StringPtr(codec.name)})
			want := make([]rec, 40)
			for i := range want {
				want[i] = rec{offset: int64(i), key: []byte(fmt.Sprint("key-", i)), value: bytes.Repeat([]byte(fmt.Sprintf("value %d, compressible; ", i)), 40), ts: time.UnixMilli(1787824800000 + int64(i))}
			}
			produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), want)

			// The raw answer at Fetch v6 (a client capped at Kafka 1.0) and
			// at the highest version both sides have.
			plain := 0
			for _, w := range want {
				plain += len(w.key) + len(w.value)
			}
			versions := map[int16]bool{}
			for _, cl := range []*kgo.Client{newKgo(t, tg.bootstrap, kgo.MaxVersions(kversion.V1_0_0())), newKgo(t, tg.bootstrap)} {
				req := fetchP0(topic, 6, 0)
				if len(versions) > 0 {
					req.Version = 12
				}
				resp, err := cl.SeedBrokers()[0].Request(ctxT(t, 15*time.Second), req)
				if err != nil {
					t.Fatal(err)
				}
				fr := resp.(*kmsg.FetchResponse)
				versions[fr.Version] = true
				p := fr.Topics[0].Partitions[0]
				var rb kmsg.RecordBatch
				if p.ErrorCode != 0 || rb.ReadFrom(p.RecordBatches) != nil {
					t.Fatalf("fetch v%d: error %d, %d bytes", fr.Version, p.ErrorCode, len(p.RecordBatches))
				}
				wantCodec := codec.id
				if codec.name == "zstd" && fr.Version < 10 {
					wantCodec = 0 // decided: uncompressed below v10, where Kafka refuses
				}
				if got := rb.Attributes & 0x07; got != wantCodec {
					t.Errorf("fetch v%d of a %s topic: batch codec %d, want %d", fr.Version, codec.name, got, wantCodec)
				}
				if rb.NumRecords != int32(len(want)) {
					t.Errorf("fetch v%d: %d records in the batch, want %d", fr.Version, rb.NumRecords, len(want))
				}
				if wantCodec != 0 && len(p.RecordBatches) >= plain/2 {
					t.Errorf("fetch v%d: a %s batch of %d bytes for %d bytes of records", fr.Version, codec.name, len(p.RecordBatches), plain)
				}
			}
			newest := int16(0)
			for v := range versions {
				newest = max(newest, v)
			}
			if !versions[6] || newest < 10 {
				t.Errorf("fetched at versions %v, want 6 and one at v10 or later", versions)
			}

			assertRecords(t, "franz-go read of "+codec.name, want, consumeKgo(t, tg.bootstrap, topic, 1, len(want)), exact)
			got := consumeRdkafka(t, tg.bootstrap[0], topic, len(want))
			for i, w := range want {
				if i >= len(got) || got[i].offset != w.offset || !bytes.Equal(got[i].key, w.key) || !bytes.Equal(got[i].value, w.value) {
					t.Fatalf("librdkafka read of %s, record %d: %v, want %v", codec.name, i, got, w)
				}
			}
			// And the two other consumer libraries of the codec matrix.
			assertRecords(t, "sarama read of "+codec.name, want, consumeSarama(t, tg.bootstrap, topic, 1, len(want)), exact)
			assertRecords(t, "kafka-go read of "+codec.name, want, consumeKafkaGo(t, tg.bootstrap, topic, want), recOpts{timestamps: true})
			assertStoredEnvelopes(t, tg, topic, want)
		})
	}

	t.Run("max-message-bytes", func(t *testing.T) {
		t.Parallel()
		topic := uniq("cfg-max")
		createTopic(t, tg, topic, 1, nil)
		// Incompressible and sent uncompressed: Kafka counts the batch as
		// sent, so a compressible 2 MiB record would fit.
		big := make([]byte, 2<<20)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(big)
		kp := newKgo(t, tg.bootstrap, kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(2))
		rp := newRdkProducer(t, tg.bootstrap[0])
		err := kp.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Value: big}).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("franz-go produce of 2 MiB under the default max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
		}
		if err := produceRdk(t, rp, topic, big); err == nil || err.(kafka.Error).Code() != kafka.ErrMsgSizeTooLarge {
			t.Fatalf("librdkafka produce of 2 MiB under the default max.message.bytes: %v, want MSG_SIZE_TOO_LARGE", err)
		}

		adm := newAdmin(t, tg.bootstrap)
		ctx := ctxT(t, 30*time.Second)
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("4194304")}}, topic)
		if err != nil || rs[0].Err != nil {
			t.Fatalf("alter max.message.bytes: %v %v", err, rs)
		}
		if err := kp.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: big}).FirstErr(); err != nil {
			t.Fatalf("franz-go produce of 2 MiB after raising max.message.bytes: %v", err)
		}
		if err := produceRdk(t, rp, topic, big); err != nil {
			t.Fatalf("librdkafka produce of 2 MiB after raising max.message.bytes: %v", err)
		}

		// kadm's DescribeConfigs: values and sources.
		dc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil || dc[0].Err != nil {
			t.Fatalf("describe: %v %v", err, dc)
		}
		seen := map[string]string{}
		for _, c := range dc[0].Configs {
			seen[c.Key] = fmt.Sprintf("%s/%s", c.MaybeValue(), c.Source)
		}
		if seen["max.message.bytes"] != "4194304/DYNAMIC_TOPIC_CONFIG" || seen["compression.type"] != "producer/DEFAULT_CONFIG" {
			t.Errorf("kadm DescribeConfigs: %v", seen)
		}

		// librdkafka's admin client reads the same.
		ac, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": tg.bootstrap[0]})
		if err != nil {
			t.Fatal(err)
		}
		defer ac.Close()
		res, err := ac.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("librdkafka DescribeConfigs: %v %v", err, res)
		}
		mm, ct := res[0].Config["max.message.bytes"], res[0].Config["compression.type"]
		if mm.Value != "4194304" || mm.Source != kafka.ConfigSourceDynamicTopic || ct.Value != "producer" || ct.Source != kafka.ConfigSourceDefault {
			t.Errorf("librdkafka DescribeConfigs: max.message.bytes %+v, compression.type %+v", mm, ct)
		}
	})
}

// newRdkProducer is a librdkafka producer allowed 8 MiB messages, so the
// broker's limit is the one tested.
func newRdkProducer(t *testing.T, seed string) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": seed, "acks": "all", "message.max.bytes": 8 << 20, "linger.ms": 0,
		"message.timeout.ms": 30000, "go.logs.channel.enable": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rdkafkaLogs(t, "producer", p.Logs())
	t.Cleanup(p.Close)
	return p
}

// produceRdk sends one record to partition 0 and returns its delivery
// error.
func produceRdk(t *testing.T, p *kafka.Producer, topic string, value []byte) error {
	t.Helper()
	dr := make(chan kafka.Event, 1)
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: value}, dr); err != nil {
		return err
	}
	select {
	case e := <-dr:
		return e.(*kafka.Message).TopicPartition.Error
	case <-time.After(40 * time.Second):
		t.Fatal("librdkafka: no delivery report in 40 s")
		return nil
	}
}

// consumeRdkafka reads n records of partition 0 of topic from its start
// with a librdkafka consumer (assigned, no group protocol).
func consumeRdkafka(t *testing.T, seed, topic string, n int) []rec {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": seed, "group.id": uniq("rdk-cfg"), "enable.auto.commit": false,
		"auto.offset.reset": "earliest", "go.logs.channel.enable": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rdkafkaLogs(t, "consumer", c.Logs())
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []rec
	for len(out) < n && ctx.Err() == nil {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if e, ok := err.(kafka.Error); ok && e.IsTimeout() {
				continue
			}
			t.Fatalf("librdkafka read: %v", err)
		}
		out = append(out, rec{partition: m.TopicPartition.Partition, offset: int64(m.TopicPartition.Offset), key: m.Key, value: m.Value, ts: m.Timestamp})
	}
	if len(out) < n {
		t.Fatalf("librdkafka read %d of %d records in 30 s", len(out), n)
	}
	return out
}

// TestClusterTopicConfigs: in cluster mode the configs are the topic
// record's in Queen KV, so every node applies the same ones. An alter
// through node 1 is described at once by node 3 (DescribeConfigs reads the
// record afresh) and applied by node 2's produce and node 3's fetch once
// their catalogues are refreshed (within the 3 s TTL; waited for, not
// timed).
func TestClusterTopicConfigs(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	topic := uniq("cluster-cfg")
	c.createTopic(t, topic, 1)
	big := make([]byte, 2<<20)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(big)
	batch := batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: big}}}.Encode(t)
	// Offset 0 is a compressible record, which a fetch from 0 answers alone
	// (the 2 MiB one is past its 1 MiB budget).
	small := batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: bytes.Repeat([]byte("compressible "), 200)}}}.Encode(t)
	if resp, err := c.pin(t, 1).Request(ctxT(t, 15*time.Second), produceRaw(topic, 0, 5000, small)); err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce the small record: %v %v", err, resp)
	}
	produceAt := func(id int) int16 {
		resp, err := c.pin(t, id).Request(ctxT(t, 15*time.Second), produceRaw(topic, 0, 5000, batch))
		if err != nil {
			t.Fatalf("produce at node %d: %v", id, err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produceAt(2); code != kerr.MessageTooLarge.Code {
		t.Fatalf("2 MiB at node 2 under the default: %d, want MESSAGE_TOO_LARGE", code)
	}
	adm := newAdmin(t, c.addrs(1))
	rs, err := adm.AlterTopicConfigs(ctxT(t, 15*time.Second), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("8388608")},
		{Op: kadm.SetConfig, Name: "compression.type", Value: kmsg.StringPtr("lz4")},
	}, topic)
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter at node 1: %v %v", err, rs)
	}
	dc, err := newAdmin(t, c.addrs(3)).DescribeTopicConfigs(ctxT(t, 15*time.Second), topic)
	if err != nil || dc[0].Err != nil {
		t.Fatalf("describe at node 3: %v %v", err, dc)
	}
	got := map[string]string{}
	for _, cfg := range dc[0].Configs {
		got[cfg.Key] = cfg.MaybeValue()
	}
	if got["max.message.bytes"] != "8388608" || got["compression.type"] != "lz4" {
		t.Fatalf("node 3 describes %v right after the alter at node 1", got)
	}
	eventually(t, 20*time.Second, "node 2 admits the 2 MiB batch", func() (bool, string) {
		code := produceAt(2)
		return code == 0, fmt.Sprint("error code ", code)
	})
	eventually(t, 20*time.Second, "node 3 answers lz4", func() (bool, string) {
		resp, err := c.pin(t, 3).Request(ctxT(t, 15*time.Second), fetchP0(topic, 12, 0))
		if err != nil {
			return false, err.Error()
		}
		p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		var rb kmsg.RecordBatch
		if p.ErrorCode != 0 || rb.ReadFrom(p.RecordBatches) != nil {
			return false, fmt.Sprintf("error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
		}
		return rb.Attributes&0x07 == 3, fmt.Sprint("codec ", rb.Attributes&0x07)
	})
}
