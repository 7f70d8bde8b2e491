package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// runRdkafkaEOSWorker is librdkafka's consume-transform-produce loop
// (confluent-kafka-go): a read_committed group consumer and a transactional
// producer copy each input record to the same partition of the output
// topic, SendOffsetsToTransaction committing the consumer's offsets in the
// same transaction. It prints the lines runEOSWorker prints. Errors follow
// librdkafka's documented pattern: a retriable one retries the call, one
// that requires an abort aborts the transaction and rewinds the consumer to
// its committed offsets, a fatal one ends the process.
func runRdkafkaEOSWorker(w eosWorker, say func(string, ...any)) int {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": w.bootstrap, "group.id": w.group, "auto.offset.reset": "earliest",
		"enable.auto.commit": false, "isolation.level": "read_committed",
		"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
	})
	if err != nil {
		say("FATAL consumer: %v", err)
		return 1
	}
	defer c.Close()
	if err := c.SubscribeTopics([]string{w.in}, nil); err != nil {
		say("FATAL subscribe: %v", err)
		return 1
	}
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": w.bootstrap, "transactional.id": w.txnID, "transaction.timeout.ms": 30000,
	})
	if err != nil {
		say("FATAL producer: %v", err)
		return 1
	}
	defer p.Close()
	go func() {
		for e := range p.Events() {
			if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				say("produce: %v", m.TopicPartition.Error)
			}
		}
	}()
	bg := context.Background()
	// retry runs call until it succeeds or fails with an error that is not
	// retriable, which it returns. A local timeout is retried too: a call
	// that asks the group's coordinator (Committed) times out while the
	// coordinator moves, the fault that made the transaction abort.
	retry := func(what string, call func(context.Context) error) error {
		for {
			ctx, cancel := context.WithTimeout(bg, 30*time.Second)
			err := call(ctx)
			cancel()
			ke, ok := err.(kafka.Error)
			if err == nil || !ok || !(ke.IsRetriable() || ke.Code() == kafka.ErrTimedOut) {
				return err
			}
			say("%s: retriable %v", what, err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := retry("init", p.InitTransactions); err != nil {
		say("FATAL init: %v", err)
		return 1
	}
	copied := 0
	for {
		var batch []*kafka.Message
		deadline := time.Now().Add(500 * time.Millisecond)
		for len(batch) < 40 && time.Now().Before(deadline) {
			m, err := c.ReadMessage(100 * time.Millisecond)
			if err != nil {
				if ke, ok := err.(kafka.Error); ok && ke.IsFatal() {
					say("FATAL consume: %v", err)
					return 1
				}
				continue
			}
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			continue
		}
		err := copyBatch(p, c, w.out, batch, retry)
		if err == nil {
			copied += len(batch)
			say("committed %d", copied)
			continue
		}
		ke, ok := err.(kafka.Error)
		if !ok || !ke.TxnRequiresAbort() {
			say("FATAL transaction: %v", err)
			return 1
		}
		say("aborting %d: %v", len(batch), err)
		if err := retry("abort", p.AbortTransaction); err != nil {
			say("FATAL abort: %v", err)
			return 1
		}
		if err := retry("rewind", func(context.Context) error { return rewindToCommitted(c) }); err != nil {
			say("FATAL rewind: %v", err)
			return 1
		}
	}
}

// copyBatch is one transaction: the copies of batch and the offsets past
// it, committed together.
func copyBatch(p *kafka.Producer, c *kafka.Consumer, out string, batch []*kafka.Message, retry func(string, func(context.Context) error) error) error {
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	next := map[int32]kafka.TopicPartition{}
	for _, m := range batch {
		tp := m.TopicPartition
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &out, Partition: tp.Partition},
			Key: m.Key, Value: m.Value}, nil); err != nil {
			return err
		}
		tp.Offset++
		next[tp.Partition] = tp
	}
	var offsets []kafka.TopicPartition
	for _, tp := range next {
		offsets = append(offsets, tp)
	}
	md, err := c.GetConsumerGroupMetadata()
	if err != nil {
		return fmt.Errorf("group metadata: %w", err)
	}
	if err := retry("send offsets", func(ctx context.Context) error { return p.SendOffsetsToTransaction(ctx, offsets, md) }); err != nil {
		return err
	}
	return retry("commit", p.CommitTransaction)
}

// rewindToCommitted seeks every partition assigned to c back to its
// committed offset (the start where none is committed), so an aborted
// batch is read again. A partition answered an error (UNSTABLE_OFFSET_COMMIT
// while another member's transaction holds its offset, KIP-447) has no
// offset to seek to: it is asked again, never taken for "none committed",
// which would rewind it to the start and copy its inputs twice.
func rewindToCommitted(c *kafka.Consumer) error {
	parts, err := c.Assignment()
	if err != nil {
		return err
	}
	var committed []kafka.TopicPartition
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if committed, err = c.Committed(parts, 10000); err != nil {
			return err
		}
		i := slices.IndexFunc(committed, func(tp kafka.TopicPartition) bool { return tp.Error != nil })
		if i < 0 {
			break
		}
		if time.Now().After(deadline) {
			return committed[i].Error
		}
	}
	for _, tp := range committed {
		if tp.Offset < 0 {
			tp.Offset = kafka.OffsetBeginning
		}
		if err := c.Seek(tp, 10000); err != nil {
			return err
		}
	}
	return nil
}
