package txn

import (
	"context"
	"github.com/queen-mq/queen-kafka/internal/codegrid"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionCheck is the node's verdict on a partition a transaction names:
// 0 when its topic is served and the partition lies inside the topic's
// width, else the code Apache Kafka refuses it with. It may read the
// catalogue, so it is asked before the transaction's lock is taken.
type PartitionCheck func(ctx context.Context, topic string, partition int32) int16

// AddPartitionsToTxn answers an AddPartitionsToTxn v0–v3: the partitions a
// transaction may write, and so the ones a transactional Produce may
// stage. The first opens the transaction and starts its deadline. As in
// Kafka the request is applied whole or not at all: a partition refused
// leaves every other one OPERATION_NOT_ATTEMPTED. Past MaxPartitions the
// partitions over the cap are MESSAGE_TOO_LARGE and the transaction is
// abortable: its producer must abort.
func (m *Manager) AddPartitionsToTxn(ctx context.Context, cl Client, req *kmsg.AddPartitionsToTxnRequest, served PartitionCheck) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codes := codegrid.New(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) int { return len(t.Partitions) })
	defer func() {
		for i, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()
	fill := func(code int16) *kmsg.AddPartitionsToTxnResponse {
		codes.Fill(code)
		return resp
	}

	refused := false
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if c := served(ctx, t.Topic, p); c != 0 {
				codes[i][j], refused = c, true
			}
		}
	}
	if refused {
		return fill(kerr.OperationNotAttempted.Code)
	}

	fenced := fencedCode(req.Version >= 2)
	t, code := m.held(ctx, cl, req.TransactionalID, req.ProducerID, req.ProducerEpoch, fenced)
	if t == nil {
		return fill(code)
	}
	defer t.mu.Unlock()
	if code := t.writable(); code != 0 {
		return fill(code)
	}
	fresh := map[topicPartition]bool{}
	over := false
	for i, rt := range req.Topics {
		for j, p := range rt.Partitions {
			tp := topicPartition{rt.Topic, p}
			if t.partitions[tp] || fresh[tp] {
				continue
			}
			if len(t.partitions)+len(fresh) >= MaxPartitions {
				codes[i][j], over = kerr.MessageTooLarge.Code, true
				continue
			}
			fresh[tp] = true
		}
	}
	if over {
		m.poison(t, "more than 200 partitions")
		return fill(kerr.OperationNotAttempted.Code)
	}
	if t.state == stateEmpty {
		if code := m.begin(ctx, cl, t, m.clock.Now(), fenced); code != 0 {
			return fill(code)
		}
	}
	t.took(cl)
	if t.partitions == nil {
		t.partitions = make(map[topicPartition]bool, len(fresh))
	}
	for tp := range fresh {
		t.partitions[tp] = true
	}
	return resp
}

// AddOffsetsToTxn answers an AddOffsetsToTxn v0–v3: the consumer group
// whose offsets this transaction commits. It opens the transaction when
// none is (a consume-only loop commits offsets and produces nothing). In
// cluster mode the group is another node's, which checks it at
// TxnOffsetCommit, as Kafka's group coordinator does.
func (m *Manager) AddOffsetsToTxn(ctx context.Context, cl Client, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if !m.cfg.Cluster {
		if code, _ := m.cfg.Groups.TxnCommitCheck(m.groupClient(cl), req.Group, "", nil, -1, 0); code != 0 {
			resp.ErrorCode = code
			return resp
		}
	}
	fenced := fencedCode(req.Version >= 2)
	t, code := m.held(ctx, cl, req.TransactionalID, req.ProducerID, req.ProducerEpoch, fenced)
	if t == nil {
		resp.ErrorCode = code
		return resp
	}
	defer t.mu.Unlock()
	if code := t.writable(); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if t.state == stateEmpty {
		if code := m.begin(ctx, cl, t, m.clock.Now(), fenced); code != 0 {
			resp.ErrorCode = code
			return resp
		}
	}
	t.took(cl)
	t.group(req.Group)
	return resp
}

// writable is 0 when the transaction may take more, else why not: a commit
// in doubt is CONCURRENT_TRANSACTIONS (Kafka's answer while a commit is
// completing), an abortable one INVALID_TXN_STATE.
func (t *binding) writable() int16 {
	switch t.state {
	case stateCommitting:
		return kerr.ConcurrentTransactions.Code
	case stateAbortable:
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// group is the transaction's entry for a consumer group, added if new.
func (t *binding) group(id string) *txnGroup {
	if t.groups == nil {
		t.groups = make(map[string]*txnGroup)
	}
	g := t.groups[id]
	if g == nil {
		g = &txnGroup{}
		t.groups[id] = g
	}
	return g
}

// poison makes t abortable after a cap refused part of its transaction:
// what it staged is dropped (it can never commit now), and the producer
// must abort before it begins another.
func (m *Manager) poison(t *binding, why string) {
	m.log.Warn("a transaction is past a cap; the producer must abort it", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "cap", why)
	m.release(t)
	t.state = stateAbortable
}
