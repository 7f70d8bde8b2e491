package txn

import (
	"context"
	"github.com/queen-mq/queen-kafka/internal/codegrid"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
)

// TxnOffsetCommit answers a TxnOffsetCommit v0–v3: consumer offsets staged
// beside the transaction's records, written by EndTxn(commit) in the same
// call, so that a consume-transform-produce loop's output and input
// positions commit together. Nothing is written here. v3's generation,
// member id and group instance id are checked by the group as OffsetCommit
// checks them (Kafka's validateOffsetCommit: a static member is matched by
// its instance id, and a member id that instance has since rejoined under
// is FENCED_INSTANCE_ID; an unknown member UNKNOWN_MEMBER_ID; another
// generation ILLEGAL_GENERATION). A group not added by AddOffsetsToTxn is
// added, and a transaction opened, as Kafka's group coordinator takes the
// commit either way. Past MaxOffsets the partitions over the cap are
// INVALID_COMMIT_OFFSET_SIZE and the transaction is abortable.
func (m *Manager) TxnOffsetCommit(ctx context.Context, cl Client, req *kmsg.TxnOffsetCommitRequest, served PartitionCheck) *kmsg.TxnOffsetCommitResponse {
	return answerOffsets(ctx, req, served, func(codes codegrid.Grid) int16 {
		return m.stageOffsets(ctx, cl, req, codes)
	})
}

func (m *Manager) stageOffsets(ctx context.Context, cl Client, req *kmsg.TxnOffsetCommitRequest, codes codegrid.Grid) int16 {
	fenced := fencedCode(req.Version >= 3)
	t, code := m.held(ctx, cl, req.TransactionalID, req.ProducerID, req.ProducerEpoch, fenced)
	if t == nil {
		return code
	}
	defer t.mu.Unlock()
	if code := t.writable(); code != 0 {
		return code
	}
	code, ptype := m.cfg.Groups.TxnCommitCheck(m.groupClient(cl), req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version)
	if code != 0 {
		return code
	}
	if t.state == stateEmpty {
		if code := m.begin(ctx, cl, t, m.clock.Now(), fenced); code != 0 {
			return code
		}
	}
	t.took(cl)
	g := t.group(req.Group)
	g.protocolType = ptype
	now := m.now()
	over := false
	for i, rt := range req.Topics {
		for j, p := range rt.Partitions {
			if codes[i][j] != 0 {
				continue
			}
			key, md, code := offsetEntry(req.Group, rt.Topic, p)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			if _, again := t.offsetKeys[key]; !again {
				// A new key costs one op of the rider, and a group's first
				// offset one more for its index row.
				cost := 1
				if g.offsets == 0 {
					cost++
				}
				if 1+t.indexOps()+t.offsets+cost > riderOps {
					codes[i][j], over = kerr.InvalidCommitOffsetSize.Code, true
					continue
				}
			}
			if err := t.stage.SetOffset(ctx, key, coordinator.OffsetWrite(key, p.Offset, md, now)); err != nil {
				m.log.Warn("staging a transactional offset failed", "transactional_id", t.key.ID, "err", err)
				codes[i][j] = kerr.CoordinatorNotAvailable.Code
				continue
			}
			if _, again := t.offsetKeys[key]; !again {
				if t.offsetKeys == nil {
					t.offsetKeys = make(map[string]bool)
				}
				t.offsetKeys[key] = true
				m.pending.add(t.key.Identity, req.Group, rt.Topic, p.Partition)
				t.offsets++
				g.offsets++
			}
		}
	}
	if over {
		// The transaction cannot commit now, so nothing of this request
		// was staged either.
		m.poison(t, "more than 62 offsets (less one per further group)")
		return kerr.OperationNotAttempted.Code
	}
	return 0
}

// answerOffsets answers req: the check no transaction state changes
// (precheckOffsets), then stage, which sets the code of each partition it
// refuses in codes and returns the code every other one gets (0 for none).
func answerOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, served PartitionCheck, stage func(codes codegrid.Grid) int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := codegrid.New(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) int { return len(t.Partitions) })
	precheckOffsets(ctx, req, served, codes)
	if code := stage(codes); code != 0 {
		codes.Fill(code)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// precheckOffsets refuses what no transaction state changes: each
// partition not served. Membership, static or not, is the group's to
// judge (Groups.TxnCommitCheck), not this.
func precheckOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, served PartitionCheck, codes codegrid.Grid) {
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			codes[i][j] = served(ctx, t.Topic, p.Partition)
		}
	}
}

// offsetEntry is one partition's offset key and metadata, or the code it
// is refused with.
func offsetEntry(group, topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) (key, md string, code int16) {
	key, code = coordinator.OffsetKey(group, topic, p.Partition)
	if p.Metadata != nil {
		md = *p.Metadata
	}
	switch {
	case code != 0:
		return "", "", code
	case len(md) > coordinator.MaxMetadataBytes:
		return "", "", kerr.OffsetMetadataTooLarge.Code
	}
	return key, md, 0
}
