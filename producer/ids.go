package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/queen-mq/queen-kafka/queen"
)

// Producer ids are unique across facade nodes and restarts: each node
// reserves a block of them by a compare-and-set on one KV row and hands them
// out from memory. A restart abandons the rest of its block, which costs
// nothing but numbers.
const (
	// IDBlock is how many ids one reservation takes.
	IDBlock          = 1000
	producerIDTries  = 8 // lost races before giving up (each attempt is one call)
	maxProducerIDVal = 1<<62 - IDBlock
)

// KV is the slice of queen.Client the allocator needs.
type KV interface {
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
}

// IDs hands out producer ids, per scope (connection identity: each
// tenant's KV holds its own counter), unique across nodes and restarts.
type IDs struct {
	mu     sync.Mutex
	blocks map[string]*idBlock
}

type idBlock struct {
	next, end int64
	version   int64 // the row version last seen, the next reservation's expect
}

// NewIDs returns an allocator holding no block yet.
func NewIDs() *IDs { return &IDs{blocks: make(map[string]*idBlock)} }

// idRow is the value of queen.ProducerIDsKey: the first id no node has
// reserved.
type idRow struct {
	Next *int64 `json:"next"`
}

// Next returns a fresh producer id for scope, reserving a new block through
// kv when the current one is spent. An error is the reservation's Queen
// failure, wrapped.
func (a *IDs) Next(ctx context.Context, scope string, kv KV) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.blocks[scope]
	if b == nil {
		b = &idBlock{}
		a.blocks[scope] = b
	}
	if b.next >= b.end {
		if err := b.reserve(ctx, kv); err != nil {
			return 0, err
		}
	}
	id := b.next
	b.next++
	return id, nil
}

// reserve claims [N, N+block) by writing next=N+block with expect = the row
// version it was read at. The first attempt guesses the version last seen
// (0, absent, on a fresh node); a lost race answers the current row, which
// the next attempt uses, so each attempt is one call.
func (b *idBlock) reserve(ctx context.Context, kv KV) error {
	var start int64
	if b.version != 0 {
		start = b.end // the row said so when we last wrote it
	}
	for try := 0; try < producerIDTries; try++ {
		if start < 0 || start > maxProducerIDVal {
			return fmt.Errorf("producer id counter %s is at %d, out of range", queen.ProducerIDsKey, start)
		}
		expect := b.version
		value := []byte(`{"next":` + strconv.FormatInt(start+IDBlock, 10) + `}`)
		res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: queen.ProducerIDsKey, Value: value, Forever: true, Expect: &expect}})
		if err != nil {
			return fmt.Errorf("reserve producer ids: %w", err)
		}
		r := res[0]
		if r.Applied {
			b.next, b.end, b.version = start, start+IDBlock, r.Version
			return nil
		}
		// Lost: the verdict carries the live row (version 0 when absent).
		b.version = r.Version
		start = 0
		if r.Version != 0 {
			var row idRow
			if err := json.Unmarshal(r.Value, &row); err != nil || row.Next == nil {
				return fmt.Errorf("producer id counter %s holds %s, not {\"next\":N}", queen.ProducerIDsKey, string(r.Value))
			}
			start = *row.Next
		}
	}
	return errors.New("reserve producer ids: lost the compare-and-set too many times in a row")
}
