package txn

import (
	"context"
	"encoding/json"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Batch is one partition's record batch of a transactional Produce,
// decoded into payload envelopes by the node.
type Batch struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Topic           string
	Partition       int32
	Payloads        []json.RawMessage // copied by the stage
	// Bytes is what the records weigh against the byte caps: their keys,
	// values and headers as the producer sent them, not the envelopes.
	Bytes int64
	// Seq is the batch's check against its producer's sequence window,
	// run under the transaction's lock; nil checks nothing.
	Seq Sequence
}

// Sequence is a batch's idempotence check. Decide says whether the batch
// repeats one already staged (then it is answered again and staged once)
// or is refused with code; Staged remembers it once it is in the stage.
type Sequence interface {
	Decide() (dup bool, code int16)
	Staged()
}

// Produce stages one partition's batch of a transactional Produce, which
// writes nothing (the partition is answered base_offset -1): the producer
// must hold the transactional id at this epoch (PRODUCER_FENCED for an
// older one), the partition must have been added (INVALID_TXN_STATE
// otherwise, as Kafka's partition verification answers), and the batch
// must be in sequence. Past QUEEN_KAFKA_TXN_MAX_RECORDS, _MAX_BYTES or the
// process's _MAX_STAGED_BYTES the batch is MESSAGE_TOO_LARGE and the
// transaction abortable: waiting does not make it fit.
func (m *Manager) Produce(ctx context.Context, cl Client, b *Batch) (code int16, msg string) {
	t, code := m.held(cl, b.TransactionalID, b.ProducerID, b.ProducerEpoch, kerr.ProducerFenced.Code)
	if t == nil {
		return code, "this producer does not hold the transaction (" + kerr.ErrorForCode(code).Error() + ")"
	}
	defer t.mu.Unlock()
	switch {
	case t.state == stateCommitting:
		return kerr.InvalidTxnState.Code, "the transaction is committing"
	case t.state == stateAbortable:
		return kerr.InvalidTxnState.Code, "the transaction is past a cap or its timeout and must be aborted"
	case !t.partitions[topicPartition{b.Topic, b.Partition}]:
		return kerr.InvalidTxnState.Code, "the partition was not added to the transaction (AddPartitionsToTxn)"
	}
	if b.Seq != nil {
		dup, code := b.Seq.Decide()
		switch {
		case code != 0:
			return code, ""
		case dup:
			return 0, ""
		}
	}
	n := int64(len(b.Payloads))
	switch {
	case t.records+int(n) > m.lim.MaxRecords:
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_RECORDS")
		return kerr.MessageTooLarge.Code, "the transaction is past QUEEN_KAFKA_TXN_MAX_RECORDS; abort it"
	case t.bytes+b.Bytes > m.lim.MaxBytes:
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_BYTES")
		return kerr.MessageTooLarge.Code, "the transaction is past QUEEN_KAFKA_TXN_MAX_BYTES; abort it"
	}
	if m.staged.Add(b.Bytes) > m.lim.MaxStagedBytes {
		m.staged.Add(-b.Bytes)
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES")
		return kerr.MessageTooLarge.Code, "this process holds as many staged transactional records as QUEEN_KAFKA_TXN_MAX_STAGED_BYTES allows; abort the transaction"
	}
	if err := t.stage.AddRecords(ctx, b.Topic, b.Partition, b.Payloads); err != nil {
		m.staged.Add(-b.Bytes)
		m.log.Warn("staging transactional records failed", "transactional_id", t.key.ID, "err", err)
		return kerr.RequestTimedOut.Code, "the records could not be staged; retry"
	}
	t.records += int(n)
	t.bytes += b.Bytes
	if b.Seq != nil {
		b.Seq.Staged()
	}
	return 0, ""
}
