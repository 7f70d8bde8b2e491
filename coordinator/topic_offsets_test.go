package coordinator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// A deleted topic's offsets leave every group (Kafka drops them too), and
// nothing else does: not another topic whose name starts the same, not
// another topic of the same group, not a group whose name needs escaping.
func TestDeleteTopicOffsetsSweepsEveryGroup(t *testing.T) {
	h := newHarness(t, nil)
	wide := map[int32]int64{}
	for p := int32(0); p < 300; p++ { // more than one getPrefix page
		wide[p] = int64(p) + 1
	}
	h.commit(commitReq("g1", "", -1, "orders", map[int32]int64{0: 5, 1: 6}))
	h.commit(commitReq("g1", "", -1, "audit", map[int32]int64{0: 9}))
	h.commit(commitReq("g2", "", -1, "orders", wide))
	h.commit(commitReq("g3", "", -1, "orders2", map[int32]int64{0: 3}))
	h.commit(commitReq("a:b c", "", -1, "orders", map[int32]int64{7: 70}))
	// Enough groups that one getPrefix per group at a generous page size
	// would pass the contract's 1024 keys per call.
	for i := range 100 {
		h.commit(commitReq(fmt.Sprintf("many-%03d", i), "", -1, "orders", map[int32]int64{int32(i % 4): 1}))
	}

	calls := h.kv.callCount()
	n, err := h.c.DeleteTopicOffsets(t.Context(), h.cl, "orders")
	if err != nil || n != 2+300+1+100 {
		t.Fatalf("removed %d, %v", n, err)
	}
	sweep := h.kv.callsSince(calls)
	for _, g := range []string{"g1", "g2", "a:b c"} {
		if k := h.kv.count(queen.GroupOffsetPrefix(g) + "orders:"); k != 0 {
			t.Fatalf("%s keeps %d offsets of the deleted topic", g, k)
		}
	}
	if f := h.fetch("g1", "audit", 0); f.Topics[0].Partitions[0].Offset != 9 {
		t.Fatalf("another topic of the group lost its offset: %+v", f.Topics[0].Partitions[0])
	}
	if f := h.fetch("g3", "orders2", 0); f.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("a topic sharing the name's prefix lost its offset: %+v", f.Topics[0].Partitions[0])
	}
	if f := h.fetch("g2", "orders", 0, 299); f.Topics[0].Partitions[0].Offset != -1 || f.Topics[0].Partitions[1].Offset != -1 {
		t.Fatalf("fetch after the sweep: %+v", f.Topics[0].Partitions)
	}
	for _, call := range sweep {
		if len(call) > maxOpsPerCall {
			t.Fatalf("%d ops in one call", len(call))
		}
		keys := 0
		for _, op := range call {
			switch op.Op {
			case queen.OpGetPrefix:
				keys += op.Limit
			case queen.OpGetMany:
				keys += len(op.Keys)
			default:
				keys++
			}
		}
		if keys > 1024 {
			t.Fatalf("%d keys in one call", keys)
		}
		seen := map[string]bool{}
		for _, op := range call {
			if op.NS != queen.Namespace || !strings.HasPrefix(op.Key+op.Prefix, "qk:") {
				t.Fatalf("op outside the facade's keys: %+v", op)
			}
			if op.Op == queen.OpDelete && seen[op.Key] {
				t.Fatalf("two writes of %s in one call", op.Key)
			}
			seen[op.Key] = true
		}
	}
	// Nothing left to remove is not an error.
	if n, err := h.c.DeleteTopicOffsets(t.Context(), h.cl, "orders"); err != nil || n != 0 {
		t.Fatalf("second sweep: %d, %v", n, err)
	}
}
