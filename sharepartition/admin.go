package sharepartition

import (
	"context"
	"fmt"

	"github.com/queen-mq/queen-kafka/queen"
)

// Admin calls' page sizes: a row holds at most a window's ranges, so 64
// rows stay far below the 4 MiB read budget; deletes fit one call.
const (
	describePage  = 64
	maxOpsPerCall = 256
)

// Summary is one share-partition as DescribeShareGroupOffsets reports it.
// Kafka's lag is the high watermark minus SPSO minus DeliveryComplete.
type Summary struct {
	Topic            string
	Partition        int32
	SPSO             int64
	SPEO             int64
	InFlight         int   // offsets SPSO..SPEO
	DeliveryComplete int64 // of them, acknowledged or archived
}

func summarize(topic string, partition int32, p *Partition) Summary {
	s := Summary{Topic: topic, Partition: partition, SPSO: p.SPSO(), SPEO: p.SPEO(), InFlight: p.InFlight()}
	for i := range p.recs {
		if st := p.recs[i].state; st == Acknowledged || st == Archived {
			s.DeliveryComplete++
		}
	}
	return s
}

// Describe reads every share-partition state of group (those initialized:
// Kafka answers the others' start offset -1).
func Describe(ctx context.Context, kv KV, group string) ([]Summary, error) {
	prefix := queen.ShareStatePrefix(group)
	var out []Summary
	after := ""
	for {
		res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: describePage, After: after}})
		if err != nil {
			return nil, fmt.Errorf("share state getPrefix: %w", err)
		}
		if len(res) != 1 {
			return nil, fmt.Errorf("share state getPrefix: %d results", len(res))
		}
		for _, row := range res[0].Rows {
			g, topic, part, ok := queen.ParseShareStateKey(row.Key)
			if !ok || g != group {
				continue
			}
			p, err := Decode(row.Value, DefaultConfig())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", row.Key, err)
			}
			out = append(out, summarize(topic, part, p))
		}
		r := res[0]
		if !r.Truncated {
			return out, nil
		}
		if r.NextAfter == nil || *r.NextAfter <= after {
			return nil, &queen.Error{Kind: queen.KindProtocol, Route: "POST /api/v1/kv", Message: "getPrefix page truncated without a cursor that advances"}
		}
		after = *r.NextAfter
	}
}

// Alter sets each share-partition's SPSO, dropping its in-flight records
// (AlterShareGroupOffsets: the caller has checked the group is empty, as
// Kafka requires). The puts are unconditional: a node caching the old
// state loses its next compare-and-set and reads the new one.
func Alter(ctx context.Context, kv KV, offsets map[Key]int64) error {
	ops := make([]queen.KVOp, 0, min(len(offsets), maxOpsPerCall))
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := kv.KV(ctx, ops)
		ops = ops[:0]
		if err != nil {
			return fmt.Errorf("share state put: %w", err)
		}
		return nil
	}
	for k, spso := range offsets {
		if spso < 0 {
			return invalidRequest("start offset %d for %s-%d is negative", spso, k.Topic, k.Partition)
		}
		ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: k.kvKey(), Value: New(DefaultConfig(), spso).Encode(), Forever: true})
		if len(ops) == maxOpsPerCall {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Delete removes share-partition states (DeleteShareGroupOffsets; the
// caller has checked the group is empty): the next fetch initializes each
// afresh from share.auto.offset.reset.
func Delete(ctx context.Context, kv KV, keys []Key) error {
	for start := 0; start < len(keys); start += maxOpsPerCall {
		chunk := keys[start:min(start+maxOpsPerCall, len(keys))]
		ops := make([]queen.KVOp, len(chunk))
		for i, k := range chunk {
			ops[i] = queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: k.kvKey()}
		}
		if _, err := kv.KV(ctx, ops); err != nil {
			return fmt.Errorf("share state delete: %w", err)
		}
	}
	return nil
}

// DeleteGroup removes every share-partition state of group (DeleteGroups
// of a share group).
func DeleteGroup(ctx context.Context, kv KV, group string) error {
	sums, err := Describe(ctx, kv, group)
	if err != nil {
		return err
	}
	keys := make([]Key, len(sums))
	for i, s := range sums {
		keys[i] = Key{Group: group, Topic: s.Topic, Partition: s.Partition}
	}
	return Delete(ctx, kv, keys)
}
