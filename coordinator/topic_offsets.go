package coordinator

import (
	"context"
	"fmt"
	"strings"

	"github.com/queen-mq/queen-kafka/queen"
)

// A sweep's first look under each group: sweepPrefixesPerCall getPrefix ops
// of sweepPageLimit keys each, within the contract's 1024 keys per call
// (§7.3: a getPrefix counts its limit, clamped to 1..1000).
const (
	sweepKeysPerCall     = 1024
	sweepPageLimit       = 16
	sweepPrefixesPerCall = sweepKeysPerCall / sweepPageLimit
)

// DeleteTopicOffsets removes every committed offset of topic from every
// group the store's qk:groups: index names, and returns how many it
// removed. Apache Kafka drops a deleted topic's offsets from its groups;
// without the same sweep here, a topic deleted and created again under its
// old name — a new queue whose partitions restart at offset 0 — resumes an
// old group at its old positions and skips the new topic's first records
// without a word.
//
// The deletes carry no fence: this is an administrator's removal, not a
// group's write, and in cluster mode the node serving DeleteTopics is rarely
// every group's owner. A member still committing to the deleted topic can
// write a row back, as it could against Kafka once the topic is recreated.
func (c *Coordinator) DeleteTopicOffsets(ctx context.Context, cl Client, topic string) (int, error) {
	kv := c.kvFor(cl)
	index, err := c.readPrefix(ctx, kv, queen.PrefixGroups, indexPageLimit, true)
	if err != nil {
		return 0, fmt.Errorf("offsets of deleted topic %q: %w", topic, err)
	}
	prefixes := make([]string, 0, len(index))
	for _, row := range index {
		id, ok := queen.Unesc(strings.TrimPrefix(row.Key, queen.PrefixGroups))
		if !ok || !storable(id) {
			continue
		}
		// A prefix that leaves no room for a partition number has no key under it.
		if p := queen.GroupOffsetPrefix(id) + queen.Esc(topic) + ":"; len(p) < queen.MaxKeyBytes {
			prefixes = append(prefixes, p)
		}
	}
	keys, err := c.keysUnder(ctx, kv, prefixes)
	if err != nil {
		return 0, fmt.Errorf("offsets of deleted topic %q: %w", topic, err)
	}
	for start := 0; start < len(keys); start += maxOpsPerCall {
		chunk := keys[start:min(start+maxOpsPerCall, len(keys))]
		ops := make([]queen.KVOp, len(chunk))
		for i, k := range chunk {
			ops[i] = deleteOp(k)
		}
		if _, err := kv.KV(ctx, ops); err != nil {
			return start, fmt.Errorf("offsets of deleted topic %q: kv delete: %w", topic, err)
		}
	}
	return len(keys), nil
}

// keysUnder lists the keys under each prefix: one small getPrefix op per
// prefix, as many per call as the contract's key budget allows (a getPrefix
// counts its limit against the 1024 keys of a call), and a prefix whose
// first page came back truncated is paged through on its own. A group
// rarely holds more than a few partitions of one topic, so the small first
// page is usually the only one.
func (c *Coordinator) keysUnder(ctx context.Context, kv KV, prefixes []string) ([]string, error) {
	var keys []string
	for start := 0; start < len(prefixes); start += sweepPrefixesPerCall {
		chunk := prefixes[start:min(start+sweepPrefixesPerCall, len(prefixes))]
		ops := make([]queen.KVOp, len(chunk))
		for i, p := range chunk {
			ops[i] = queen.KVOp{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: p, Limit: sweepPageLimit, KeysOnly: true}
		}
		res, err := kv.KV(ctx, ops)
		if err != nil {
			return nil, fmt.Errorf("kv getPrefix: %w", err)
		}
		for i, r := range res {
			rows := r.Rows
			if r.Truncated {
				if rows, err = c.readPrefix(ctx, kv, chunk[i], readKeysPerCall, true); err != nil {
					return nil, err
				}
			}
			for _, row := range rows {
				keys = append(keys, row.Key)
			}
		}
	}
	return keys, nil
}
