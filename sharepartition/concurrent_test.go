package sharepartition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
)

// TestConcurrentNodesShareOnePartition: three nodes' handles, two members
// on each, fetch and accept concurrently from one partition through one
// KV. No record is handed to two members (every acknowledgement of an
// acquired record succeeds, so no lock was taken over) and every record
// is accepted exactly once.
func TestConcurrentNodesShareOnePartition(t *testing.T) {
	const logEnd = 3000
	kv := memkv.New()
	ctx := context.Background()
	var (
		mu       sync.Mutex
		accepted = map[int64]string{}
		wg       sync.WaitGroup
		failure  error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	for node := range 3 {
		h := NewHandle(key, DefaultConfig(), fixedInit(0))
		for c := range 2 {
			member := fmt.Sprintf("n%d-m%d", node, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for spins := 0; spins < 100_000; spins++ {
					next, err := h.NextFetchOffset(ctx, kv, t0)
					if err != nil {
						fail(err)
						return
					}
					if next >= logEnd {
						return
					}
					got, _, err := h.Fetch(ctx, kv, member, nil, next, next, logEnd-1, 37, t0)
					if errors.Is(err, ErrContended) {
						continue
					}
					if err != nil {
						fail(err)
						return
					}
					for _, r := range got {
						err := h.Acknowledge(ctx, kv, member, ack(r.First, r.Last, Accept), t0)
						for try := 0; errors.Is(err, ErrContended) && try < 1000; try++ {
							// Not applied: the records stay ours; try again.
							err = h.Acknowledge(ctx, kv, member, ack(r.First, r.Last, Accept), t0)
						}
						if err != nil {
							fail(fmt.Errorf("%s ack %v: %v", member, r, err))
							return
						}
						mu.Lock()
						for off := r.First; off <= r.Last; off++ {
							if prev, dup := accepted[off]; dup {
								mu.Unlock()
								fail(fmt.Errorf("offset %d accepted by %s and %s", off, prev, member))
								return
							}
							accepted[off] = member
						}
						mu.Unlock()
					}
				}
				fail(fmt.Errorf("%s: no progress", member))
			}()
		}
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	if len(accepted) != logEnd {
		t.Fatalf("%d of %d records accepted", len(accepted), logEnd)
	}
}
