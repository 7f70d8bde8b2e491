package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// rdkafkaLogs drains a librdkafka client's log channel into a buffer that
// is printed if t fails (librdkafka writes to stderr otherwise).
func rdkafkaLogs(t *testing.T, name string, logs chan kafka.LogEvent) {
	buf := &testsupport.LogBuffer{}
	go func() {
		for e := range logs {
			fmt.Fprintf(buf, "%s %s|%d|%s: %s\n", e.Timestamp.Format("15:04:05.000"), name, e.Level, e.Tag, e.Message)
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- librdkafka %s log ----\n%s", name, testsupport.Tail(buf.String(), 32<<10))
		}
	})
}

// TestTxnLibrdkafka: librdkafka's transactional API through
// confluent-kafka-go, in a consume-transform-produce shape. A group
// consumer reads the input; the producer runs InitTransactions,
// BeginTransaction, produces a copy of each record, SendOffsetsToTransaction
// with the consumer's group metadata (TxnOffsetCommit v3's generation and
// member id), and CommitTransaction: the output holds the copies and the
// group's committed offsets are the input's end. Then an
// AbortTransaction of staged records and of an offset that would move the
// group back leaves the log end offset and the committed offsets unmoved.
func TestTxnLibrdkafka(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	seeds := []string{fac.addr}
	tg := target{seeds, dev}
	const parts = 2
	in, out, group := uniq("rdk-txn-in"), uniq("rdk-txn-out"), uniq("g-rdk-txn")
	createTopic(t, tg, in, parts, nil)
	createTopic(t, tg, out, parts, nil)
	input := produceRound(t, tg, in, parts, 3, "rdk", 0)

	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": fac.addr, "group.id": group, "auto.offset.reset": "earliest",
		"enable.auto.commit": false, "isolation.level": "read_committed",
		"go.logs.channel.enable": true, "debug": "cgrp",
	})
	require.NoError(t, err)
	rdkafkaLogs(t, "consumer", c.Logs())
	defer c.Close()
	require.NoError(t, c.SubscribeTopics([]string{in}, nil))
	var consumed []*kafka.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(consumed) < len(input) && time.Now().Before(deadline) {
		m, err := c.ReadMessage(500 * time.Millisecond)
		if err != nil {
			if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrTimedOut {
				t.Logf("consumer: %v", err)
			}
			continue
		}
		consumed = append(consumed, m)
	}
	require.Len(t, consumed, len(input), "records the librdkafka consumer read")

	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": fac.addr, "transactional.id": uniq("tid-rdk"), "transaction.timeout.ms": 60000,
		"go.logs.channel.enable": true, "debug": "eos",
	})
	require.NoError(t, err)
	rdkafkaLogs(t, "producer", p.Logs())
	defer p.Close()
	ctx := ctxT(t, 60*time.Second)
	require.NoError(t, p.InitTransactions(ctx))

	produce := func(msgs []*kafka.Message) {
		t.Helper()
		dr := make(chan kafka.Event, len(msgs))
		for _, m := range msgs {
			require.NoError(t, p.Produce(m, dr))
		}
		for range msgs {
			select {
			case e := <-dr:
				m := e.(*kafka.Message)
				assert.NoError(t, m.TopicPartition.Error, "delivery of %s", m.Value)
			case <-ctx.Done():
				t.Fatalf("delivery reports: %v", ctx.Err())
			}
		}
	}
	copyOf := func(m *kafka.Message) *kafka.Message {
		return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &out, Partition: m.TopicPartition.Partition},
			Key: m.Key, Value: append([]byte("copy:"), m.Value...)}
	}
	// offsets are the next offset to read per partition, as a consumer
	// commits them.
	offsets := func(next map[int32]int64) []kafka.TopicPartition {
		var tps []kafka.TopicPartition
		for p, o := range next {
			tps = append(tps, kafka.TopicPartition{Topic: &in, Partition: p, Offset: kafka.Offset(o)})
		}
		return tps
	}
	md, err := c.GetConsumerGroupMetadata()
	require.NoError(t, err)

	require.NoError(t, p.BeginTransaction())
	var copies []*kafka.Message
	next := map[int32]int64{}
	var want []string
	for _, m := range consumed {
		copies = append(copies, copyOf(m))
		next[m.TopicPartition.Partition] = max(next[m.TopicPartition.Partition], int64(m.TopicPartition.Offset)+1)
		want = append(want, "copy:"+string(m.Value))
	}
	produce(copies)
	require.NoError(t, p.SendOffsetsToTransaction(ctx, offsets(next), md))
	require.NoError(t, p.CommitTransaction(ctx))

	got := valuesOf(readToEnd(t, seeds, out, kgo.ReadCommitted()))
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got, "the output after the commit")
	assertCommitted(t, tg, group, in, fill(parts, 3))

	before := endOffsets(t, seeds, out)
	require.NoError(t, p.BeginTransaction())
	produce([]*kafka.Message{copyOf(consumed[0]), copyOf(consumed[1]), copyOf(consumed[2])})
	require.NoError(t, p.SendOffsetsToTransaction(ctx, offsets(map[int32]int64{0: 1, 1: 1}), md))
	require.NoError(t, p.AbortTransaction(ctx))
	assert.Equal(t, before, endOffsets(t, seeds, out), "log end offsets across an aborted transaction")
	assertCommitted(t, tg, group, in, fill(parts, 3))
	got = valuesOf(readToEnd(t, seeds, out, kgo.ReadCommitted()))
	sort.Strings(got)
	assert.Equal(t, want, got, "the output after the abort")
}

// TestTxnSarama: sarama's transactional producer (Transaction.ID,
// Idempotent, MaxOpenRequests 1, protocol versions of Kafka 2.1, so EndTxn
// v1 and TxnOffsetCommit v2): one transaction carries copies of input records
// and AddMessageToTxn, a second AddOffsetsToTxn; both land with their
// offsets. An aborted one, with an offset that would move the group back,
// leaves the output and the group's offsets as they were.
func TestTxnSarama(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	seeds := []string{fac.addr}
	tg := target{seeds, dev}
	in, out, group := uniq("sarama-txn-in"), uniq("sarama-txn-out"), uniq("g-sarama-txn")
	createTopic(t, tg, in, 1, nil)
	createTopic(t, tg, out, 1, nil)
	input := produceRound(t, tg, in, 1, 4, "sr", 0)

	cons, err := sarama.NewConsumer(seeds, saramaConfig())
	require.NoError(t, err)
	defer cons.Close()
	pc, err := cons.ConsumePartition(in, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.Close()
	var msgs []*sarama.ConsumerMessage
	for len(msgs) < len(input) {
		select {
		case m := <-pc.Messages():
			msgs = append(msgs, m)
		case err := <-pc.Errors():
			t.Fatalf("sarama consumer: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatalf("sarama consumed %d of %d", len(msgs), len(input))
		}
	}

	c := saramaConfig()
	c.Producer.Idempotent = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Net.MaxOpenRequests = 1
	c.Producer.Transaction.ID = uniq("tid-sarama")
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	sp, err := sarama.NewSyncProducer(seeds, c)
	require.NoError(t, err)
	defer sp.Close()
	send := func(vs ...string) {
		t.Helper()
		for _, v := range vs {
			_, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: out, Partition: 0, Value: sarama.StringEncoder(v)})
			require.NoError(t, err, "transactional send %q", v)
		}
	}
	copyOf := func(ms ...*sarama.ConsumerMessage) []string {
		var vs []string
		for _, m := range ms {
			vs = append(vs, "copy:"+string(m.Value))
		}
		return vs
	}

	require.NoError(t, sp.BeginTxn())
	send(copyOf(msgs[:3]...)...)
	require.NoError(t, sp.AddMessageToTxn(msgs[2], group, nil))
	require.NoError(t, sp.CommitTxn())
	assert.Equal(t, copyOf(msgs[:3]...), valuesOf(readToEnd(t, seeds, out, kgo.ReadCommitted())))
	assertCommitted(t, tg, group, in, map[int32]int64{0: 3})

	require.NoError(t, sp.BeginTxn())
	send(copyOf(msgs[3])...)
	require.NoError(t, sp.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{in: {{Partition: 0, Offset: 4}}}, group))
	require.NoError(t, sp.CommitTxn())
	assert.Equal(t, copyOf(msgs...), valuesOf(readToEnd(t, seeds, out, kgo.ReadCommitted())))
	assertCommitted(t, tg, group, in, map[int32]int64{0: 4})

	require.NoError(t, sp.BeginTxn())
	send("aborted-1", "aborted-2")
	require.NoError(t, sp.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{in: {{Partition: 0, Offset: 1}}}, group))
	require.NoError(t, sp.AbortTxn())
	assert.Equal(t, sarama.ProducerTxnFlagReady, sp.TxnStatus(), "sarama's state after the abort")
	assert.Equal(t, map[int32]int64{0: 4}, endOffsets(t, seeds, out), "log end offset across an aborted transaction")
	assertCommitted(t, tg, group, in, map[int32]int64{0: 4})
	assert.Equal(t, copyOf(msgs...), storedValues(t, dev, out, 0), "what Queen holds")
}
