package producepush

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
)

// Pusher is the one Queen call a push makes (*queen.Client's).
type Pusher interface {
	PushBatch(ctx context.Context, b *queen.PushBatch) ([]queen.PushResult, error)
}

// Part is one partition of a request, a batch to be written: its
// envelopes and keys in, its outcome out.
type Part struct {
	Topic     string
	Partition int32
	Env       []byte   // its envelopes, item i ending at ends[i] (Push's)
	Items     [2]int   // [first, end) of its envelopes' ends
	Keys      []string // its records' Queen transactionIds, nil for none
	Req       int      // the index in its group of the request it belongs to

	// Outcome is what its push answered; Throttle is what a 429 on its
	// push carried.
	Outcome  producer.Outcome
	Throttle int32

	pushed [2]int // [first, end) of its items in the push, when written
}

type topicPartition struct {
	topic     string
	partition int32
}

const (
	// MaxShards bounds the concurrent pushes of one group.
	MaxShards = 4
	// minShardItems keeps small groups in one push, where a second call
	// would cost more than it overlaps.
	minShardItems = 256
)

// Push writes parts (in group order) and records each part's outcome.
// Every batch of one partition, and so every chain of idempotent batches,
// stays in one push, in group order; a group touching several partitions
// is written by up to MaxShards concurrent pushes. One push at a time per
// connection left Queen idle while the facade decoded, and the facade idle
// while Queen stored. log is the connection's, for failed calls. A
// canceled call is returned.
func Push(ctx context.Context, q Pusher, log *slog.Logger, parts []Part, ends []int) error {
	written := make([]*Part, len(parts))
	count := 0
	for i := range parts {
		written[i] = &parts[i]
		count += parts[i].Items[1] - parts[i].Items[0]
	}
	if count == 0 {
		return nil
	}
	shards := shardParts(written, count)
	if len(shards) == 1 {
		return pushShard(ctx, q, log, shards[0], ends)
	}
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i := 1; i < len(shards); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("push panic: %v", r)
				}
			}()
			errs[i] = pushShard(ctx, q, log, shards[i], ends)
		}()
	}
	errs[0] = pushShard(ctx, q, log, shards[0], ends)
	wg.Wait()
	return errors.Join(errs...)
}

// shardParts splits written (in group order) into pushes holding whole
// partitions, balanced by item count, each in group order.
func shardParts(written []*Part, count int) [][]*Part {
	load := make(map[topicPartition]int)
	var keys []topicPartition
	for _, p := range written {
		k := topicPartition{p.Topic, p.Partition}
		if _, ok := load[k]; !ok {
			keys = append(keys, k)
		}
		load[k] += p.Items[1] - p.Items[0]
	}
	n := min(MaxShards, len(keys), count/minShardItems)
	if n <= 1 {
		return [][]*Part{written}
	}
	// Largest partitions first, each to the lightest push so far.
	slices.SortStableFunc(keys, func(a, b topicPartition) int { return cmp.Compare(load[b], load[a]) })
	sums := make([]int, n)
	shardOf := make(map[topicPartition]int, len(keys))
	for _, k := range keys {
		i := slices.Index(sums, slices.Min(sums))
		shardOf[k] = i
		sums[i] += load[k]
	}
	shards := make([][]*Part, n)
	for _, p := range written {
		i := shardOf[topicPartition{p.Topic, p.Partition}]
		shards[i] = append(shards[i], p)
	}
	return shards
}

// pushByRequest pushes parts (in group order) as one push per request, one
// after another, so that each partition's chain stays in order.
func pushByRequest(ctx context.Context, q Pusher, log *slog.Logger, parts []*Part, ends []int) error {
	for len(parts) > 0 {
		n := 1
		for n < len(parts) && parts[n].Req == parts[0].Req {
			n++
		}
		if err := pushShard(ctx, q, log, parts[:n], ends); err != nil {
			return err
		}
		parts = parts[n:]
	}
	return nil
}

// pushShard pushes the envelopes of parts as one call and records each
// part's outcome; a failed call is every part's outcome, with the throttle
// a 429 carries. A canceled call is returned.
func pushShard(ctx context.Context, q Pusher, log *slog.Logger, parts []*Part, ends []int) error {
	push := queen.NewPushBatch(pushBodyHint(parts, ends))
	addParts(push, parts, ends)
	results, err := q.PushBatch(ctx, push)
	if err != nil && queen.KindOf(err) == queen.KindTooLarge && parts[0].Req != parts[len(parts)-1].Req {
		// Over Queen's body ceiling (QUEEN_MAX_BODY_BYTES, which may be
		// set below the facade's coalescing bound) together: each request
		// is pushed on its own, in group order, and answered as it would
		// be alone.
		return pushByRequest(ctx, q, log, parts, ends)
	}
	if err != nil {
		faults.Log(log, "push", err)
		code, throttle, msg, fatal := faults.Produce(err)
		if fatal != nil {
			return fatal
		}
		for _, p := range parts {
			p.Outcome = producer.Outcome{Base: -1, Code: code, Msg: msg}
			p.Throttle = throttle
		}
		return nil
	}
	for _, p := range parts {
		rs := results[p.pushed[0]:p.pushed[1]]
		base, code, msg := faults.PartitionOutcome(rs)
		p.Outcome = producer.Outcome{Base: base, Code: code, Msg: msg, Duplicate: code == 0 && allDuplicate(rs)}
	}
	return nil
}

// eachItem calls f with every item of p in push order: its partition's
// name, its envelope and its Queen transactionId ("" for none).
func eachItem(p *Part, ends []int, f func(partition string, env []byte, key string)) {
	part := strconv.FormatInt(int64(p.Partition), 10)
	start := 0
	for i := p.Items[0]; i < p.Items[1]; i++ {
		key := ""
		if p.Keys != nil {
			key = p.Keys[i-p.Items[0]]
		}
		f(part, p.Env[start:ends[i]], key)
		start = ends[i]
	}
}

// pushBodyHint is the body the push of parts renders: the envelopes it
// sends from their own memory are not copied into it.
func pushBodyHint(parts []*Part, ends []int) int {
	size := 0
	for _, p := range parts {
		eachItem(p, ends, func(partition string, env []byte, key string) {
			size += queen.ItemBodyBytes(p.Topic, partition, len(env), key)
		})
	}
	return size
}

// addParts adds the items of parts to push, and notes each part's items
// in it (pushed).
func addParts(push *queen.PushBatch, parts []*Part, ends []int) {
	for _, p := range parts {
		from := push.Len()
		eachItem(p, ends, func(partition string, env []byte, key string) {
			push.Add(p.Topic, partition, env, key)
		})
		p.pushed = [2]int{from, push.Len()}
	}
}

// allDuplicate reports a batch Queen's dedup window answered whole: every
// record was stored by an earlier push (its Keys), so this push stored
// nothing and the offsets are the original's.
func allDuplicate(rs []queen.PushResult) bool {
	for _, r := range rs {
		if r.Status != queen.StatusDuplicate {
			return false
		}
	}
	return len(rs) > 0
}
