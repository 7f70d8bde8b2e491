package sharefetch

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/sharepartition"
	"github.com/queen-mq/queen-kafka/sharesession"
)

// Acknowledge serves a ShareAcknowledge into resp: the session step (never
// epoch 0), the membership check, then each partition's acknowledgements
// as one fenced write, answered with its own code; epoch -1 then closes
// the session and releases what the member still holds in it.
func (s *Server) Acknowledge(ctx context.Context, c Conn, topics Topics, req *kmsg.ShareAcknowledgeRequest, resp *kmsg.ShareAcknowledgeResponse) error {
	group, member := deref(req.GroupID), deref(req.MemberID)
	if code := s.checkIDs(group, member); code != 0 {
		resp.ErrorCode = code
		return nil
	}
	kv := c.Queen()
	key := sharesession.Key{Group: group, Member: member}
	if code := s.sessions.Acknowledge(key, req.ShareSessionEpoch); code != 0 {
		resp.ErrorCode = code
		return nil
	}
	if req.ShareSessionEpoch != sharesession.FinalEpoch {
		if code := s.member(ctx, kv, group, member); code != 0 {
			resp.ErrorCode = code
			return nil
		}
	}
	cfg, reset, err := s.cfg.Configs.Share(ctx, kv, group)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return nil
	}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration.Milliseconds())
	}
	r := &request{s: s, c: c, kv: kv, member: member, cfg: cfg, reset: reset}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.ShareAcknowledgeResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
	}
	var answers []*kmsg.ShareAcknowledgeResponseTopicPartition
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			a := &resp.Topics[i].Partitions[j]
			*a = kmsg.NewShareAcknowledgeResponseTopicPartition()
			a.Partition = rp.Partition
			answers = append(answers, a)
			acks := make([]sharepartition.AckBatch, 0, len(rp.AcknowledgementBatches))
			for _, b := range rp.AcknowledgementBatches {
				acks = append(acks, ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes))
			}
			pt := &part{sp: sharesession.Partition{TopicID: rt.TopicID, Partition: rp.Partition}, acks: acks, pending: true}
			if renews(acks) && !req.IsRenewAck {
				pt.refuseAcks(kerr.InvalidRequest.Code)
			}
			r.parts = append(r.parts, pt)
		}
	}
	refused := make([]int16, len(r.parts))
	if err := r.resolve(ctx, group, topics, func(p *part, code int16) {
		for i, q := range r.parts {
			if q == p {
				refused[i] = code
			}
		}
	}); err != nil {
		return err
	}
	for i, p := range r.parts {
		if refused[i] != 0 {
			answers[i].ErrorCode = refused[i]
			continue
		}
		p.applyAcks(ctx, r)
		answers[i].ErrorCode = p.ackCode
		if p.e != nil {
			s.observe(p.e, p.refused)
		}
	}
	if req.ShareSessionEpoch == sharesession.FinalEpoch {
		s.release(ctx, c, key, s.sessions.Close(key))
	}
	return nil
}

// renews reports a RENEW among acks (allowed only with is_renew_ack).
func renews(acks []sharepartition.AckBatch) bool {
	for _, b := range acks {
		if slices.Contains(b.Types, sharepartition.Renew) {
			return true
		}
	}
	return false
}

// refuseAcks answers p's acknowledgements code without applying them.
func (p *part) refuseAcks(code int16) {
	p.pending = false
	p.ackCode, p.refused, p.answered = code, len(p.acks), true
	if p.resp != nil {
		p.resp.AcknowledgeErrorCode = code
	}
}

// applyAcks applies p's acknowledgements on their own (nothing was read
// for p, or p is not fetched) as one write.
func (p *part) applyAcks(ctx context.Context, r *request) {
	if !p.pending {
		return
	}
	p.pending = false
	if p.e == nil {
		// Its topic could not be checked (a throttled catalogue read):
		// nothing applied, and never answered success.
		p.refuseAcks(kerr.UnknownServerError.Code)
		return
	}
	p.setAck(p.e.h.Acknowledge(ctx, r.kv, r.member, p.acks, r.s.cfg.Now()))
}

// setAck records the acknowledgements' outcome.
func (p *part) setAck(err error) {
	p.ackCode = 0
	if err != nil {
		p.ackCode = codeOf(err)
		p.refused = len(p.acks)
	}
	if p.resp != nil {
		p.resp.AcknowledgeErrorCode = p.ackCode
		if msg := err; msg != nil {
			var se *sharepartition.Error
			if errors.As(err, &se) {
				m := se.Message
				p.resp.AcknowledgeErrorMessage = &m
			}
		}
	}
	p.answered = true
}

func ackBatch(first, last int64, types []int8) sharepartition.AckBatch {
	b := sharepartition.AckBatch{First: first, Last: last, Types: make([]sharepartition.AckType, len(types))}
	for i, t := range types {
		b.Types[i] = sharepartition.AckType(t)
	}
	return b
}

func fetchAcks(bs []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []sharepartition.AckBatch {
	out := make([]sharepartition.AckBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes))
	}
	return out
}

// appendAcquired appends a, cut into ranges of at most size records
// (size 0: whole), as the answer's AcquiredRecords.
func appendAcquired(dst []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, a sharepartition.AcquiredRange, size int) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	for first := a.First; first <= a.Last; {
		last := a.Last
		if size > 0 {
			last = min(last, first+int64(size)-1)
		}
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = first, last, a.DeliveryCount
		dst = append(dst, ar)
		first = last + 1
	}
	return dst
}

// layoutFetch lays resp out for ps: a topic entry per run of one topic's
// partitions.
func layoutFetch(resp *kmsg.ShareFetchResponse, ps []sharesession.Partition) {
	resp.Topics = resp.Topics[:0]
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].TopicID == ps[i].TopicID {
			j++
		}
		st := kmsg.NewShareFetchResponseTopic()
		st.TopicID = ps[i].TopicID
		st.Partitions = make([]kmsg.ShareFetchResponseTopicPartition, j-i)
		for k := range st.Partitions {
			st.Partitions[k] = kmsg.NewShareFetchResponseTopicPartition()
			st.Partitions[k].Partition = ps[i+k].Partition
			st.Partitions[k].CurrentLeader.LeaderID, st.Partitions[k].CurrentLeader.LeaderEpoch = -1, -1
		}
		resp.Topics = append(resp.Topics, st)
		i = j
	}
}

// trimFetch leaves in resp only the partitions with records, an error or
// an acknowledgement answer (parts are resp's partitions in order).
func trimFetch(resp *kmsg.ShareFetchResponse, parts []*part) {
	k := 0
	topics := resp.Topics[:0]
	for _, st := range resp.Topics {
		kept := st.Partitions[:0]
		for _, sp := range st.Partitions {
			p := parts[k]
			k++
			if p.answered || sp.ErrorCode != 0 || sp.AcknowledgeErrorCode != 0 || len(sp.AcquiredRecords) > 0 {
				kept = append(kept, sp)
			}
		}
		if len(kept) > 0 {
			st.Partitions = kept
			topics = append(topics, st)
		}
	}
	resp.Topics = topics
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
