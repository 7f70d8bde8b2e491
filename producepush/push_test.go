package producepush

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestPushBodyHintIsWhatIsRendered: a push's buffer is sized by the bytes
// its items render into it, not by their envelopes, which are sent from
// their own memory. Sized by the envelopes, one producer's 1 KiB records
// took push buffers ten times what they held (issue 20: 15-19 MB of the
// facade's 55 MB heap under the produce benchmark).
func TestPushBodyHintIsWhatIsRendered(t *testing.T) {
	value := bytes.Repeat([]byte("v"), 1024)
	var env []byte
	var ends []int
	var parts []*Part
	for pi := range 6 {
		p := &Part{Topic: "bench-topic", Partition: int32(pi)}
		from := len(ends)
		start := len(env)
		for r := range 100 + pi {
			env = envelope.Append(env, &envelope.Record{Key: []byte(fmt.Sprint(r)), Value: value[:min(r*10, len(value))], Timestamp: 1})
			ends = append(ends, len(env)-start)
		}
		p.Items = [2]int{from, len(ends)}
		if pi%2 == 0 {
			for i := p.Items[0]; i < p.Items[1]; i++ {
				p.Keys = append(p.Keys, fmt.Sprintf("kafka:123:0:%d", i))
			}
		}
		parts = append(parts, p)
	}
	// Each part's envelopes start its own slice, as package node's
	// encodeParts leaves them.
	at := 0
	for _, p := range parts {
		n := ends[p.Items[1]-1]
		p.Env = env[at : at+n]
		at += n
	}
	hint := pushBodyHint(parts, ends)
	push := queen.NewPushBatch(hint)
	base := push.Size()
	addParts(push, parts, ends)
	rendered := push.Size() - base
	if hint < rendered || hint > rendered+len(parts) {
		t.Fatalf("hint %d bytes for a body of %d rendered (%d bytes of envelopes)", hint, rendered, len(env))
	}
	for i, p := range parts {
		if want := p.Items[1] - p.Items[0]; p.pushed[1]-p.pushed[0] != want || (i > 0 && p.pushed[0] != parts[i-1].pushed[1]) {
			t.Fatalf("part %d pushed as items %v, want %d after the previous part's", i, p.pushed, want)
		}
	}
}

// parts is a group of random parts: reqs requests, each up to four parts
// of two topics' first six partitions, each of up to max items.
func randomParts(rng *rand.Rand, reqs, max int) ([]Part, []int) {
	var parts []Part
	var ends []int
	for r := range reqs {
		for range 1 + rng.IntN(4) {
			p := Part{Topic: []string{"a", "b"}[rng.IntN(2)], Partition: int32(rng.IntN(6)), Req: r}
			p.Items[0] = len(ends)
			for i := range 1 + rng.IntN(max) {
				ends = append(ends, i+1) // one-byte envelopes
			}
			p.Items[1] = len(ends)
			p.Env = make([]byte, p.Items[1]-p.Items[0])
			parts = append(parts, p)
		}
	}
	return parts, ends
}

// TestShardPartsProperty: the shards hold every part once, each shard in
// group order, every part of one partition in one shard, as many shards as
// the group's size and partitions allow and never more than MaxShards.
func TestShardPartsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	for range 2000 {
		parts, _ := randomParts(rng, 1+rng.IntN(5), 1+rng.IntN(400))
		written := make([]*Part, len(parts))
		count := 0
		keys := map[topicPartition]bool{}
		for i := range parts {
			written[i] = &parts[i]
			count += parts[i].Items[1] - parts[i].Items[0]
			keys[topicPartition{parts[i].Topic, parts[i].Partition}] = true
		}
		shards := shardParts(written, count)
		want := max(1, min(MaxShards, len(keys), count/minShardItems))
		require.Len(t, shards, want, "%d items over %d partitions", count, len(keys))
		shardOf := map[topicPartition]int{}
		seen := map[*Part]bool{}
		for s, shard := range shards {
			last := -1
			for _, p := range shard {
				at := slices.Index(written, p)
				require.Greater(t, at, last, "shard %d out of group order", s)
				last = at
				require.False(t, seen[p], "a part in two shards")
				seen[p] = true
				k := topicPartition{p.Topic, p.Partition}
				if i, ok := shardOf[k]; ok {
					require.Equal(t, i, s, "partition %v split across shards", k)
				}
				shardOf[k] = s
			}
		}
		require.Len(t, seen, len(written), "every part in a shard")
	}
}

// fakeQueen answers every push queued at offsets counted across pushes, or
// with err, or 413 when a push holds more than limit items.
type fakeQueen struct {
	mu     sync.Mutex
	limit  int
	status string
	err    error
	next   int64
	pushes []int // items of each push answered
}

func (q *fakeQueen) PushBatch(_ context.Context, b *queen.PushBatch) ([]queen.PushResult, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return nil, q.err
	}
	if q.limit > 0 && b.Len() > q.limit {
		return nil, &queen.Error{Kind: queen.KindTooLarge, Route: "POST /api/v1/push", Status: 413}
	}
	q.pushes = append(q.pushes, b.Len())
	rs := make([]queen.PushResult, b.Len())
	for i := range rs {
		o := q.next
		q.next++
		rs[i] = queen.PushResult{Index: i, Status: q.status, Offset: &o}
	}
	return rs, nil
}

// TestPushOutcomes: each part is answered at its first item's offset, a
// group over Queen's body ceiling is pushed request by request in order, a
// push Queen's dedup window answered whole is Duplicate, and a failed call
// is every part's outcome with a 429's throttle.
func TestPushOutcomes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	group := func() ([]Part, []int) {
		rng := rand.New(rand.NewPCG(1, 2))
		return randomParts(rng, 3, 20)
	}
	items := func(p Part) int { return p.Items[1] - p.Items[0] }

	parts, ends := group()
	q := &fakeQueen{status: queen.StatusQueued}
	require.NoError(t, Push(context.Background(), q, log, parts, ends))
	require.Equal(t, []int{len(ends)}, q.pushes, "a small group is one push")
	for _, p := range parts {
		require.Equal(t, int64(p.Items[0]), p.Outcome.Base, "at its first item's offset")
		require.Zero(t, p.Outcome.Code)
		require.False(t, p.Outcome.Duplicate)
	}

	parts, ends = group()
	perReq := make([]int, 3)
	for _, p := range parts {
		perReq[p.Req] += items(p)
	}
	q = &fakeQueen{status: queen.StatusDuplicate, limit: slices.Max(perReq)}
	require.NoError(t, Push(context.Background(), q, log, parts, ends))
	require.Equal(t, perReq, q.pushes, "over the ceiling: one push per request, in order")
	for _, p := range parts {
		require.Equal(t, int64(p.Items[0]), p.Outcome.Base)
		require.True(t, p.Outcome.Duplicate, "answered duplicate whole")
	}

	parts, ends = group()
	q = &fakeQueen{err: &queen.Error{Kind: queen.KindThrottled, Route: "POST /api/v1/push", Status: 429, RetryAfter: 2 * time.Second}}
	require.NoError(t, Push(context.Background(), q, log, parts, ends))
	for _, p := range parts {
		require.Equal(t, int64(-1), p.Outcome.Base)
		require.NotZero(t, p.Outcome.Code)
		require.Equal(t, int32(2000), p.Throttle)
	}
}

// TestPushShardsConcurrently: a group large enough is written as several
// pushes, every part answered at offsets contiguous within its push.
func TestPushShardsConcurrently(t *testing.T) {
	parts, ends := randomParts(rand.New(rand.NewPCG(5, 6)), 4, 400)
	q := &fakeQueen{status: queen.StatusQueued}
	require.NoError(t, Push(context.Background(), q, slog.New(slog.DiscardHandler), parts, ends))
	require.Greater(t, len(q.pushes), 1, "pushed as shards")
	total := 0
	for _, n := range q.pushes {
		total += n
	}
	require.Equal(t, len(ends), total, "every item pushed once")
	for _, p := range parts {
		require.Zero(t, p.Outcome.Code)
		require.GreaterOrEqual(t, p.Outcome.Base, int64(0))
	}
}
