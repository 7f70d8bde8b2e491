package txn

import (
	"time"

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
	// FirstSeq is the batch's base sequence: in cluster mode it names the
	// batch's rows in the stage, so that a retry rewrites them.
	FirstSeq int32
	Payloads []json.RawMessage // copied by the stage
	// Keys are the records' Queen transactionIds (producer.DedupKeys), one
	// per payload, or nil: committed with the records, they make a commit
	// whose records Queen already stored roll back as duplicate instead
	// of storing them twice.
	Keys []string
	// Bytes is what the records weigh against the byte caps: their keys,
	// values and headers as the producer sent them, not the envelopes.
	Bytes int64
	// Implicit is a Produce v12+ under transaction version 2 (KIP-890):
	// a partition not yet in the transaction is added, and the
	// transaction opened, by the batch itself.
	Implicit bool
}

// Admit is Produce's verdict on a batch before its sequence is checked,
// staging nothing: the producer must hold the transactional id at this
// epoch (PRODUCER_FENCED for an older one), and the partition must have
// been added to an open transaction (INVALID_TXN_STATE otherwise, as
// Kafka's partition verification answers). The node asks it first, so that
// a fenced producer is told it is fenced rather than out of sequence.
func (m *Manager) Admit(cl Client, b *Batch) (code int16, msg string) {
	t, code, msg := m.admit(context.Background(), cl, b)
	if t != nil {
		t.mu.Unlock()
	}
	return code, msg
}

// admit is Admit, returning the binding still locked when it admits.
func (m *Manager) admit(ctx context.Context, cl Client, b *Batch) (*binding, int16, string) {
	t, code := m.held(ctx, cl, b.TransactionalID, b.ProducerID, b.ProducerEpoch, kerr.ProducerFenced.Code)
	if t == nil {
		return nil, code, "this producer does not hold the transaction: " + kerr.ErrorForCode(code).Error()
	}
	msg := ""
	tp := topicPartition{b.Topic, b.Partition}
	switch {
	case t.state == stateCommitting:
		msg = "the transaction is committing"
	case t.state == stateAbortable:
		msg = "the transaction is past a cap or its timeout and must be aborted"
	case !t.partitions[tp] && b.Implicit && m.cfg.TransactionV2:
		if code, msg := m.addImplicitly(ctx, cl, t, tp); code != 0 {
			t.mu.Unlock()
			return nil, code, msg
		}
		t.took(cl)
		return t, 0, ""
	case !t.partitions[tp]:
		msg = "the partition was not added to the transaction (AddPartitionsToTxn)"
	default:
		t.took(cl)
		return t, 0, ""
	}
	t.mu.Unlock()
	return nil, kerr.InvalidTxnState.Code, msg
}

// addImplicitly adds tp to t's transaction for a Produce v12+ (KIP-890),
// opening the transaction when none is, as Kafka's partition leader asks
// its coordinator to; past MaxPartitions the transaction is abortable.
func (m *Manager) addImplicitly(ctx context.Context, cl Client, t *binding, tp topicPartition) (int16, string) {
	if len(t.partitions) >= MaxPartitions {
		m.poison(t, "more than 200 partitions")
		return kerr.MessageTooLarge.Code, "the transaction writes more than 200 partitions; abort it"
	}
	if t.state == stateEmpty {
		if code := m.begin(ctx, cl, t, m.clock.Now(), kerr.ProducerFenced.Code); code != 0 {
			return code, "the transaction could not be opened: " + kerr.ErrorForCode(code).Error()
		}
	}
	if t.partitions == nil {
		t.partitions = make(map[topicPartition]bool)
	}
	t.partitions[tp] = true
	return 0, ""
}

// Produce stages one partition's batch of a transactional Produce — once
// the node has found it in sequence — and writes nothing: the partition is
// answered base_offset -1. It admits the batch again (the transaction may
// have moved since Admit). Past QUEEN_KAFKA_TXN_MAX_RECORDS, _MAX_BYTES or
// the process's _MAX_STAGED_BYTES the batch is MESSAGE_TOO_LARGE and the
// transaction abortable: waiting does not make it fit. Past half the
// commit body's room the answer is held (stageHold), so that a fast
// producer slows before its transaction stops fitting.
func (m *Manager) Produce(ctx context.Context, cl Client, b *Batch) (code int16, msg string) {
	code, msg, hold := m.produce(ctx, cl, b)
	m.hold(ctx, hold)
	return code, msg
}

// ProduceAll stages the batches of one transactional Produce request in
// order (Produce each), and holds the answer once, for the longest hold
// any of them asked (stageHold).
func (m *Manager) ProduceAll(ctx context.Context, cl Client, bs []*Batch) []Outcome {
	out := make([]Outcome, len(bs))
	var hold time.Duration
	for i, b := range bs {
		var h time.Duration
		out[i].Code, out[i].Msg, h = m.produce(ctx, cl, b)
		hold = max(hold, h)
	}
	m.hold(ctx, hold)
	return out
}

// holdUnit is the shortest hold of a Produce answer (stageHold).
const holdUnit = 10 * time.Millisecond

// stageHold is how long the answer to a Produce that took a transaction's
// commit body to body (of room) is held; likewise for its bytes and
// records against their caps, which follow from the body's. A transaction commits as one
// Queen transaction, so its body can never pass room; a producer fast
// enough to stage past it within one transaction (Kafka Streams commits
// every 100 ms, and a 2-core facade stages 500,000 records/s, 70 MB in
// that time) would have its commit refused. Past half the room each
// answer is held, 10 ms and doubling at each further eighth up to 80 ms,
// so the producer's own backpressure (its records in flight) slows it
// while the transaction is still committable; a held answer is a slow
// broker to the client, as a quota's throttle is.
func stageHold(body, room int64) time.Duration {
	if room <= 0 || 2*body < room {
		return 0
	}
	band := min(int((float64(body)/float64(room)-0.5)*8), 3)
	return holdUnit << band
}

// capsHold is the hold of a Produce answer for a transaction (or, in
// cluster mode, one node's part of it) at body, bytes and records:
// stageHold against whichever cap it is nearest to.
func (lim Limits) capsHold(body, bytes int64, records int) time.Duration {
	return max(stageHold(body, lim.bodyRoom()), stageHold(bytes, lim.MaxBytes), stageHold(int64(records), int64(lim.MaxRecords)))
}

// hold waits d, or until ctx ends; m.cfg.hold replaces it in tests.
func (m *Manager) hold(ctx context.Context, d time.Duration) { holdAnswer(ctx, d, m.cfg.hold) }

// holdAnswer waits d, or until ctx ends; seam, when not nil, is called
// instead (tests see the hold asked instead of waiting it).
func holdAnswer(ctx context.Context, d time.Duration, seam func(time.Duration)) {
	if d <= 0 {
		return
	}
	if seam != nil {
		seam(d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// produce is Produce without the hold, which it returns.
func (m *Manager) produce(ctx context.Context, cl Client, b *Batch) (code int16, msg string, hold time.Duration) {
	t, code, msg := m.admit(ctx, cl, b)
	if t == nil {
		return code, msg, 0
	}
	defer t.mu.Unlock()
	n := len(b.Payloads)
	body := batchBody(b)
	switch {
	case t.records+n > m.lim.MaxRecords:
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_RECORDS")
		return kerr.MessageTooLarge.Code, "the transaction is past QUEEN_KAFKA_TXN_MAX_RECORDS; abort it", 0
	case t.bytes+b.Bytes > m.lim.MaxBytes:
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_BYTES")
		return kerr.MessageTooLarge.Code, "the transaction is past QUEEN_KAFKA_TXN_MAX_BYTES; abort it", 0
	case t.body+body > m.lim.bodyRoom():
		m.poison(t, "QUEEN_KAFKA_QUEEN_MAX_BODY_BYTES")
		return kerr.MessageTooLarge.Code, "the transaction's commit would pass Queen's body ceiling (QUEEN_KAFKA_QUEEN_MAX_BODY_BYTES); abort it", 0
	}
	if m.staged.Add(b.Bytes) > m.lim.MaxStagedBytes {
		m.staged.Add(-b.Bytes)
		m.poison(t, "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES")
		return kerr.MessageTooLarge.Code, "this process holds as many staged transactional records as QUEEN_KAFKA_TXN_MAX_STAGED_BYTES allows; abort the transaction", 0
	}
	if err := t.stage.AddRecords(ctx, b.Topic, b.Partition, b.Payloads, b.Keys); err != nil {
		m.staged.Add(-b.Bytes)
		m.log.Warn("staging transactional records failed", "transactional_id", t.key.ID, "err", err)
		return kerr.RequestTimedOut.Code, "the records could not be staged; retry", 0
	}
	t.records += n
	t.bytes += b.Bytes
	t.body += body
	return 0, "", m.lim.capsHold(t.body, t.bytes, t.records)
}

// batchBody is what b's records add to the commit body.
func batchBody(b *Batch) int64 {
	var n int64
	for i, p := range b.Payloads {
		key := ""
		if b.Keys != nil {
			key = b.Keys[i]
		}
		n += itemBytes(b.Topic, p, key)
	}
	return n
}
