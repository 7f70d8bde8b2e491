package coordinator

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// OffsetFetch answers an OffsetFetch v1-9 at any node: the answer is the
// store's, the same everywhere, so it is never gated on ownership. Topics
// null (v2+) is every committed partition of the group. require_stable
// (v7+) is Kafka's (KIP-447): a partition with an offset staged by a
// transaction that has not ended (Config.Unstable) is UNSTABLE_OFFSET_COMMIT,
// offset -1, per partition at every version, so that a member taking it
// over retries until that transaction ends; without require_stable the
// last committed offset is answered, as Kafka does. v8 asks
// for several groups at once, each answered on its own; v9's member id and
// epoch are checked against a consumer-protocol group's member
// (ConsumerGroups.ValidateFetch: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) and,
// as Kafka's classic groups do, not checked for a classic group.
func (c *Coordinator) OffsetFetch(ctx context.Context, cl Client, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	kv := c.kvFor(cl)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []kmsg.OffsetFetchRequestTopic
			for _, t := range rg.Topics {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = t.Topic, t.Partitions
				topics = append(topics, rt)
			}
			if req.Version >= 9 && c.cfg.Consumer != nil {
				if held, code := c.cfg.Consumer.ValidateFetch(ctx, cl.Identity, cl.KV, rg.Group, rg.MemberID, rg.MemberEpoch); held && code != 0 {
					resp.Groups = append(resp.Groups, groupAnswer(rg.Group, nil, code))
					continue
				}
			}
			got, code := c.fetchGroup(ctx, cl, kv, rg.Group, topics, rg.Topics == nil, req.RequireStable)
			resp.Groups = append(resp.Groups, groupAnswer(rg.Group, got, code))
		}
		return resp
	}
	all := req.Topics == nil && req.Version >= 2
	got, code := c.fetchGroup(ctx, cl, kv, req.Group, req.Topics, all, req.Version >= 7 && req.RequireStable)
	if code == 0 {
		resp.Topics = got
		return resp
	}
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	if all {
		return resp
	}
	// Below v2 there is no group-level code: Kafka puts it on every
	// partition (and keeps doing so up to v7).
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := missingPartition(p)
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// groupAnswer is one group of a v8+ answer: its offsets, or its code and
// no topics.
func groupAnswer(group string, topics []kmsg.OffsetFetchResponseTopic, code int16) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = group, code
	if code != 0 {
		return g
	}
	for _, t := range topics {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = t.Topic
		for _, p := range t.Partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			gt.Partitions = append(gt.Partitions, gp)
		}
		g.Topics = append(g.Topics, gt)
	}
	return g
}

// fetchGroup reads group's committed offsets of topics, or of every
// partition when all, and returns them or the code refusing the group;
// stable marks the partitions an open transaction holds an offset of.
//
// The open transactions are read before the committed offsets, never
// after: a transaction's commit writes its offsets in the same step that
// ends it (and single mode forgets its stage only after), so a transaction
// not open at the first read has its offsets in the store by the second.
// Read the other way round, a commit landing between the two reads is
// answered neither unstable nor committed but the offset before it (none,
// -1, for a group's first commit, on which a consumer applies
// auto.offset.reset), and the member copies the committed inputs again.
func (c *Coordinator) fetchGroup(ctx context.Context, cl Client, kv KV, group string, topics []kmsg.OffsetFetchRequestTopic, all, stable bool) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if code := c.notConsumer(ctx, cl, group); code != 0 {
		return nil, code
	}
	if !stable || c.cfg.Unstable == nil {
		return c.fetchCommitted(ctx, kv, group, topics, all)
	}
	if !validGroupID(group, true) {
		return nil, kerr.InvalidGroupID.Code
	}
	pending, err := c.cfg.Unstable.PendingOffsets(ctx, cl.Identity, kv, group)
	if err != nil {
		c.log.Warn("offset fetch: reading the open transactions' offsets failed", "group", group, "err", err)
		return nil, kvCode(err)
	}
	got, code := c.fetchCommitted(ctx, kv, group, topics, all)
	if code != 0 || len(pending) == 0 {
		return got, code
	}
	for i := range got {
		for j := range got[i].Partitions {
			rp := &got[i].Partitions[j]
			if pending[TopicPartition{got[i].Topic, rp.Partition}] {
				*rp = missingPartition(rp.Partition)
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			}
		}
	}
	return got, 0
}

// fetchCommitted is fetchGroup's committed offsets.
func (c *Coordinator) fetchCommitted(ctx context.Context, kv KV, group string, topics []kmsg.OffsetFetchRequestTopic, all bool) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if !validGroupID(group, true) {
		return nil, kerr.InvalidGroupID.Code
	}
	if all {
		got, err := c.fetchAll(ctx, kv, group)
		if err != nil {
			c.log.Warn("offset fetch failed", "group", group, "err", err)
			return nil, kvCode(err)
		}
		return got, 0
	}
	var keys []string
	seen := map[string]bool{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if k, code := OffsetKey(group, t.Topic, p); code == 0 && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	rows, err := c.readKeys(ctx, kv, keys)
	if err != nil {
		c.log.Warn("offset fetch failed", "group", group, "err", err)
		return nil, kvCode(err)
	}
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := missingPartition(p)
			if k, code := OffsetKey(group, t.Topic, p); code == 0 {
				if row, ok := rows[k]; ok {
					c.fill(&rp, row)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, 0
}

// missingPartition is Kafka's "no committed offset": -1 and no metadata.
func missingPartition(p int32) kmsg.OffsetFetchResponseTopicPartition {
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	rp.Partition = p
	rp.Offset = -1
	rp.LeaderEpoch = -1
	empty := ""
	rp.Metadata = &empty
	return rp
}

func (c *Coordinator) fill(rp *kmsg.OffsetFetchResponseTopicPartition, row queen.KVRow) {
	var v offsetValue
	if err := json.Unmarshal(row.Value, &v); err != nil {
		// Only the facade writes this family; an unreadable row is logged
		// and answered as no offset rather than a guess.
		c.log.Error("unreadable committed offset row", "key", row.Key, "err", err)
		return
	}
	rp.Offset = v.Offset
	md := v.Metadata
	rp.Metadata = &md
}

// fetchAll reads every committed offset of group by prefix.
func (c *Coordinator) fetchAll(ctx context.Context, kv KV, group string) ([]kmsg.OffsetFetchResponseTopic, error) {
	prefix := queen.GroupOffsetPrefix(group)
	if len(prefix) > queen.MaxKeyBytes {
		return nil, nil // no key of this group fits the store
	}
	rows, err := c.readPrefix(ctx, kv, prefix, readKeysPerCall, false)
	if err != nil {
		return nil, err
	}
	byTopic := map[string][]kmsg.OffsetFetchResponseTopicPartition{}
	for _, row := range rows {
		g, topic, part, ok := queen.ParseGroupOffsetKey(row.Key)
		if !ok || g != group {
			continue
		}
		rp := missingPartition(part)
		c.fill(&rp, row)
		byTopic[topic] = append(byTopic[topic], rp)
	}
	names := make([]string, 0, len(byTopic))
	for t := range byTopic {
		names = append(names, t)
	}
	sort.Strings(names)
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(names))
	for _, t := range names {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t
		rt.Partitions = byTopic[t]
		sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
		out = append(out, rt)
	}
	return out, nil
}
