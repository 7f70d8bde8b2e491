package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// openTxnRow stands for the transaction coordinator's record that a
// transaction holding an offset of orders[0] is open; its commit deletes it
// in the same write that stores the offset, as a Queen transaction does.
const openTxnRow = "qk:test:open"

// rowUnstable is an Unstable reading openTxnRow through the fetch's own KV.
type rowUnstable struct{}

func (rowUnstable) PendingOffsets(ctx context.Context, _ string, kv KV, _ string) (map[TopicPartition]bool, error) {
	res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{openTxnRow}}})
	if err != nil {
		return nil, err
	}
	if len(res[0].Rows) == 0 {
		return nil, nil
	}
	return map[TopicPartition]bool{{Topic: "orders", Partition: 0}: true}, nil
}

// OffsetFetch with require_stable (KIP-447) over a transaction whose
// commit lands at any point of the fetch — before its first read of the
// store, between two, after the last — answers the committed offset or
// UNSTABLE_OFFSET_COMMIT, never the offset before the commit. A group's
// first transactional commit landing between the reads was answered -1 with
// no error when the committed offsets were read before the open
// transactions: librdkafka then applied auto.offset.reset (earliest) and
// the worker copied again what it had committed (TestChaosTxn, seed
// 1796482195013512203).
func TestOffsetFetchStableAcrossACommitLanding(t *testing.T) {
	key, _ := OffsetKey("g", "orders", 0)
	for landAfter := 0; landAfter <= 2; landAfter++ {
		h := newHarness(t, func(c *Config) { c.Unstable = rowUnstable{} })
		ctx := context.Background()
		if _, err := h.kv.inner.KV(ctx, []queen.KVOp{putOp(openTxnRow, map[string]bool{"open": true})}); err != nil {
			t.Fatal(err)
		}
		calls := 0
		h.kv.setFail(func([]queen.KVOp) error {
			if calls == landAfter {
				// The commit lands: the offset and the end of the
				// transaction in one write.
				if _, err := h.kv.inner.KV(ctx, []queen.KVOp{OffsetWrite(key, 40, "", 0), deleteOp(openTxnRow)}); err != nil {
					t.Fatal(err)
				}
			}
			calls++
			return nil
		})
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group, r.RequireStable = 7, "g", true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0}
		r.Topics = append(r.Topics, rt)
		p := h.c.OffsetFetch(ctx, h.cl, r).Topics[0].Partitions[0]
		h.kv.setFail(nil)
		switch {
		case p.ErrorCode == 0 && p.Offset == 40:
		case p.ErrorCode == kerr.UnstableOffsetCommit.Code && p.Offset == -1:
		default:
			t.Errorf("commit landing after the fetch's read %d: answered offset %d, code %d; want 40, or UNSTABLE_OFFSET_COMMIT", landAfter, p.Offset, p.ErrorCode)
		}
	}
}
