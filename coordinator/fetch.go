package coordinator

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// OffsetFetch answers an OffsetFetch v1-7 at any node: the answer is the
// store's, the same everywhere, so it is never gated on ownership. Topics
// null (v2+) is every committed partition of the group. require_stable is
// honoured by construction: an offset reaches the store only when it is
// committed, so nothing returned is ever UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) OffsetFetch(ctx context.Context, cl Client, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	fail := func(code int16) *kmsg.OffsetFetchResponse {
		if req.Version >= 2 {
			resp.ErrorCode = code
		}
		// Below v2 there is no group-level code: Kafka puts it on every
		// partition.
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
	if !validGroupID(req.Group, true) {
		return fail(kerr.InvalidGroupID.Code)
	}
	kv := c.kvFor(cl)
	if req.Topics == nil && req.Version >= 2 {
		topics, err := c.fetchAll(ctx, kv, req.Group)
		if err != nil {
			c.log.Warn("offset fetch failed", "group", req.Group, "err", err)
			resp.ErrorCode = kvCode(err)
			return resp
		}
		resp.Topics = topics
		return resp
	}

	var keys []string
	seen := map[string]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if k, code := OffsetKey(req.Group, t.Topic, p); code == 0 && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	rows, err := c.readKeys(ctx, kv, keys)
	if err != nil {
		c.log.Warn("offset fetch failed", "group", req.Group, "err", err)
		return fail(kvCode(err))
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := missingPartition(p)
			if k, code := OffsetKey(req.Group, t.Topic, p); code == 0 {
				if row, ok := rows[k]; ok {
					c.fill(&rp, row)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
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
