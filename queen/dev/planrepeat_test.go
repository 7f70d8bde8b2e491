package dev

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// Property: a push's items are stored or answered as duplicates exactly as
// if every (queue, partition) kept the set of the transactionIds it stored
// (an id stored earlier in the same request, else one stored by an earlier
// push inside the dedup window, is a duplicate, answered with that
// record's offset): whatever the order of the ids, numbered ones counting
// up (the facade's), going back, jumping, repeating, of other stems, or
// not numbered at all, and however the partitions interleave.
func TestPushRepeatsLikeASet(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		e := newEnv(t, Options{})
		parts := []string{"a", "b"}
		id := func() string {
			switch rng.IntN(10) {
			case 0:
				return ""
			case 1:
				return fmt.Sprintf("free-%d", rng.IntN(6))
			case 2:
				return fmt.Sprintf("kafka:2:0:%d", rng.IntN(30))
			default:
				return fmt.Sprintf("kafka:1:0:%d", rng.IntN(30))
			}
		}
		// stored[part][txID] is the offset of the record holding it.
		stored := map[string]map[string]int64{}
		next := map[string]int64{}
		for push := range 3 {
			n := 1 + rng.IntN(25)
			items := make([]queen.PushItem, n)
			seqs := map[string]int{}
			for i := range items {
				part := parts[rng.IntN(len(parts))]
				if i > 0 && rng.IntN(4) > 0 {
					part = items[i-1].Partition // mostly a partition at a time
				}
				tx := id()
				if rng.IntN(3) > 0 { // mostly counting up, as a producer's
					tx = fmt.Sprintf("kafka:1:0:%d", seqs[part]+push*40)
					seqs[part] += 1 + rng.IntN(2)
				}
				items[i] = queen.PushItem{Queue: "q", Partition: part, Payload: json.RawMessage(`1`), TransactionID: tx}
			}
			res, err := e.qc.Push(ctx(t), items)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range items {
				if stored[it.Partition] == nil {
					stored[it.Partition] = map[string]int64{}
				}
				off, dup := stored[it.Partition][it.TransactionID]
				if it.TransactionID == "" {
					dup = false
				}
				if !dup {
					off = next[it.Partition]
					next[it.Partition]++
					if it.TransactionID != "" {
						stored[it.Partition][it.TransactionID] = off
					}
				}
				got := res[i]
				if got.Offset == nil || (got.Status == "duplicate") != dup || *got.Offset != off {
					t.Fatalf("seed %d, push %d, item %d (%s %q): got %s at %v, want duplicate=%v at %d",
						seed, push, i, it.Partition, it.TransactionID, got.Status, got.Offset, dup, off)
				}
			}
		}
	}
}
