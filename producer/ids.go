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
//
// Each scope holds the block it hands ids out of and, reserved ahead of
// need, the next one: when the current block is half spent a reservation
// starts in the background, so that a KV that is slow or hangs (a black
// hole) costs an InitProducerId nothing while a reserved id is left. Only a
// scope with no id left waits, and only for its own scope's reservation:
// no lock is held across a KV call, so one tenant's stuck reservation never
// stalls another's InitProducerId.
type IDs struct {
	mu     sync.Mutex // guards scopes only
	scopes map[string]*scopeIDs
}

// scopeIDs is one scope's blocks. mu is never held across a KV call.
type scopeIDs struct {
	mu          sync.Mutex
	cur, spare  idSpan
	last        idBlock      // the counter as this node last reserved it
	reservation *reservation // non-nil while one is in flight
}

// idSpan is [next, end): ids not yet handed out.
type idSpan struct{ next, end int64 }

func (s idSpan) left() int64 { return s.end - s.next }

// reservation is one block being reserved, and everyone waiting for it.
type reservation struct {
	done chan struct{}
	err  error
}

type idBlock struct {
	end     int64 // the end of the block last reserved
	version int64 // the row version last seen, the next reservation's expect
}

// NewIDs returns an allocator holding no block yet.
func NewIDs() *IDs { return &IDs{scopes: make(map[string]*scopeIDs)} }

// Reserved is how many producer ids this node holds across every scope,
// the current and the spare block, which it can hand out with no KV call.
func (a *IDs) Reserved() int64 {
	a.mu.Lock()
	scopes := make([]*scopeIDs, 0, len(a.scopes))
	for _, s := range a.scopes {
		scopes = append(scopes, s)
	}
	a.mu.Unlock()
	var n int64
	for _, s := range scopes {
		s.mu.Lock()
		n += s.cur.left() + s.spare.left()
		s.mu.Unlock()
	}
	return n
}

// idRow is the value of queen.ProducerIDsKey: the first id no node has
// reserved.
type idRow struct {
	Next *int64 `json:"next"`
}

func (a *IDs) scope(scope string) *scopeIDs {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.scopes[scope]
	if s == nil {
		s = &scopeIDs{}
		a.scopes[scope] = s
	}
	return s
}

// Next returns a fresh producer id for scope. It answers from the reserved
// blocks when an id is left, starting the next block's reservation through
// kv when the current one is half spent; with none left it waits for the
// scope's reservation or for ctx. An error is the reservation's Queen
// failure, wrapped.
func (a *IDs) Next(ctx context.Context, scope string, kv KV) (int64, error) {
	s := a.scope(scope)
	for {
		s.mu.Lock()
		if s.cur.left() == 0 {
			s.cur, s.spare = s.spare, idSpan{}
		}
		if s.cur.left() > 0 {
			id := s.cur.next
			s.cur.next++
			if s.cur.left() < IDBlock/2 && s.spare.left() == 0 && s.reservation == nil {
				// Ahead of need: nobody waits for it, and its failure is
				// only retried by the next caller.
				s.startLocked(context.WithoutCancel(ctx), kv)
			}
			s.mu.Unlock()
			return id, nil
		}
		r := s.reservation
		if r == nil {
			r = s.startLocked(context.WithoutCancel(ctx), kv)
		}
		s.mu.Unlock()
		select {
		case <-r.done:
			if r.err != nil {
				return 0, r.err
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("reserve producer ids: %w", ctx.Err())
		}
	}
}

// startLocked begins the scope's next reservation on its own goroutine,
// bounded by the KV client's own budget rather than by any one caller, so
// that a caller giving up does not waste the block for the others. The
// caller holds s.mu.
func (s *scopeIDs) startLocked(ctx context.Context, kv KV) *reservation {
	r := &reservation{done: make(chan struct{})}
	s.reservation = r
	last := s.last
	go func() {
		start, err := last.reserve(ctx, kv)
		s.mu.Lock()
		if err == nil {
			span := idSpan{next: start, end: start + IDBlock}
			if s.cur.left() == 0 {
				s.cur = span
			} else {
				s.spare = span
			}
		}
		s.last = last
		s.reservation = nil
		r.err = err
		s.mu.Unlock()
		close(r.done)
	}()
	return r
}

// reserve claims [N, N+block) by writing next=N+block with expect = the row
// version it was read at, and returns N. The first attempt guesses the
// version last seen (0, absent, on a fresh node); a lost race answers the
// current row, which the next attempt uses, so each attempt is one call.
func (b *idBlock) reserve(ctx context.Context, kv KV) (int64, error) {
	var start int64
	if b.version != 0 {
		start = b.end // the row said so when we last wrote it
	}
	for try := 0; try < producerIDTries; try++ {
		if start < 0 || start > maxProducerIDVal {
			return 0, fmt.Errorf("producer id counter %s is at %d, out of range", queen.ProducerIDsKey, start)
		}
		expect := b.version
		value := []byte(`{"next":` + strconv.FormatInt(start+IDBlock, 10) + `}`)
		res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: queen.ProducerIDsKey, Value: value, Forever: true, Expect: &expect}})
		if err != nil {
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
		r := res[0]
		if r.Applied {
			b.end, b.version = start+IDBlock, r.Version
			return start, nil
		}
		// Lost: the verdict carries the live row (version 0 when absent).
		b.version = r.Version
		start = 0
		if r.Version != 0 {
			var row idRow
			if err := json.Unmarshal(r.Value, &row); err != nil || row.Next == nil {
				return 0, fmt.Errorf("producer id counter %s holds %s, not {\"next\":N}", queen.ProducerIDsKey, string(r.Value))
			}
			start = *row.Next
		}
	}
	return 0, errors.New("reserve producer ids: lost the compare-and-set too many times in a row")
}
