package fetchwatch

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// pending is one call the fake reader holds until the test answers it.
type pending struct {
	req queen.FetchRequest
	ctx context.Context
	ans chan answer
}

type answer struct {
	rs  []queen.FetchResult
	err error
}

// reader is a fake Queen fetch route: every call waits for the test.
type reader struct{ calls chan *pending }

func newReader() *reader { return &reader{calls: make(chan *pending, 64)} }

func (r *reader) Fetch(ctx context.Context, req queen.FetchRequest) ([]queen.FetchResult, error) {
	p := &pending{req: req, ctx: ctx, ans: make(chan answer, 1)}
	r.calls <- p
	select {
	case a := <-p.ans:
		return a.rs, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next is the next call made, within a second.
func (r *reader) next(t *testing.T) *pending {
	t.Helper()
	select {
	case p := <-r.calls:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no call was parked")
		return nil
	}
}

// none asserts that no call is made for a moment.
func (r *reader) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-r.calls:
		t.Fatalf("an unexpected call of %d entries from %d", len(p.req.Entries), p.req.Entries[0].Offset)
	case <-time.After(50 * time.Millisecond):
	}
}

// answer answers p: nothing anywhere (each entry caught up at its offset),
// except the records given by partition name.
func (p *pending) answer(recs map[string]int) { p.ans <- answer{rs: p.results(recs)} }

// results is answer's results, for a test to alter before sending them.
func (p *pending) results(recs map[string]int) []queen.FetchResult {
	rs := make([]queen.FetchResult, len(p.req.Entries))
	for i, e := range p.req.Entries {
		rs[i] = queen.FetchResult{Queue: e.Queue, Partition: e.Partition, HighWatermark: e.Offset}
		for j := 0; j < recs[e.Partition]; j++ {
			rs[i].Records = append(rs[i].Records, queen.FetchRecord{Offset: e.Offset + int64(j), Payload: []byte(`1`)})
		}
		rs[i].HighWatermark += int64(recs[e.Partition])
	}
	return rs
}

func (p *pending) cancelled(t *testing.T) {
	t.Helper()
	select {
	case <-p.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not cancelled")
	}
}

// session is n partitions of topic t, slot i for partition i, all at offset
// off.
func session(n int, off int64) []fetchsession.Partition {
	ps := make([]fetchsession.Partition, n)
	for i := range ps {
		ps[i] = fetchsession.Partition{Key: fetchsession.Key{Topic: "t", Partition: int32(i)}, FetchOffset: off, MaxBytes: 1 << 20, Slot: int32(i)}
	}
	return ps
}

// roundOf matches every partition of ps in a new round and returns it with
// what it matched.
func roundOf(t *testing.T, w *Watch, ps []fetchsession.Partition) (*Round, []Part) {
	t.Helper()
	r := w.Begin()
	require.NotNil(t, r)
	parts := make([]Part, len(ps))
	for i := range ps {
		parts[i] = r.Match(&ps[i], i, "t")
	}
	return r, parts
}

// parked runs a round that finds every partition of ps caught up at its
// offset and parks them all; the round is left open.
func parked(t *testing.T, w *Watch, ps []fetchsession.Partition) *Round {
	t.Helper()
	r, _ := roundOf(t, w, ps)
	coldAll(r, ps)
	require.True(t, r.Park())
	return r
}

// coldAll learns every partition of ps caught up at its offset.
func coldAll(r *Round, ps []fetchsession.Partition) {
	for i := range ps {
		r.Learn(&ps[i], Outcome{Next: ps[i].FetchOffset, HighWatermark: ps[i].FetchOffset})
	}
}

func newWatch(t *testing.T, r Reader, cfg Config) (*Watch, *testsupport.FakeClock) {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	cfg.Now = clk.Now
	if cfg.Calls == nil {
		cfg.Calls = NewCalls(0, 0)
	}
	w := New(context.Background(), r, cfg)
	t.Cleanup(w.Close)
	return w, clk
}

// TestParkedCallsCoverColdPartitions: partitions a fetch does not know are
// read (State Read); once learned caught up, they are parked in calls of
// Config.Group, in the fetch's order, waiting for a write (minBytes 1,
// maxWait Config.Wait), each entry asking its share of Config.CallBytes.
func TestParkedCallsCoverColdPartitions(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 256, CallBytes: 256 << 10, Wait: 7 * time.Second})
	ps := session(600, 5)
	r, parts := roundOf(t, w, ps)
	for i, p := range parts {
		require.Equal(t, Read, p.State, "partition %d is unknown", i)
		require.Equal(t, queen.FetchEntry{Queue: "t", Partition: strconv.Itoa(i), Offset: 5}, p.Entry)
	}
	coldAll(r, ps)
	require.True(t, r.Park())
	sizes := map[int]int{}
	for range 3 {
		c := rd.next(t)
		require.Equal(t, 1, c.req.MinBytes)
		require.Equal(t, 7000, c.req.MaxWaitMs)
		sizes[len(c.req.Entries)]++
		for j, e := range c.req.Entries {
			require.Equal(t, int64(5), e.Offset)
			require.Equal(t, (256<<10)/len(c.req.Entries), e.MaxBytes)
			if j > 0 {
				prev, _ := strconv.Atoi(c.req.Entries[j-1].Partition)
				cur, _ := strconv.Atoi(e.Partition)
				require.Less(t, prev, cur, "entries in the fetch's order")
			}
		}
	}
	require.Equal(t, map[int]int{256: 2, 88: 1}, sizes)
	rd.none(t)
	require.Equal(t, 3, w.cfg.Calls.Parked())
	r.End()

	// The next fetch at the same offsets: everything is quiet, nothing is
	// asked again.
	r, parts = roundOf(t, w, ps)
	for _, p := range parts {
		require.Equal(t, Quiet, p.State)
	}
	require.True(t, r.Park())
	rd.none(t)
	r.End()
}

// TestWaitHandsOverWhatAParkedCallRead: a write to one partition answers
// its group's call; the waiting round gets the records (its place in the
// fetch, read from the fetch's offset), and the group parks again at once
// where the client will ask next (the high watermark), so the next fetch
// finds it quiet.
func TestWaitHandsOverWhatAParkedCallRead(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	ps := session(8, 0)
	r := parked(t, w, ps)
	c := rd.next(t)
	if other := rd.next(t); other.req.Entries[0].Partition == "4" {
		c = other // the group of partitions 4-7
	}

	c.answer(map[string]int{"6": 2})
	hits, failed := r.Wait(context.Background(), time.Now().Add(5*time.Second))
	require.False(t, failed)
	require.Len(t, hits, 1)
	require.Equal(t, 6, hits[0].Idx)
	require.Equal(t, int64(0), hits[0].Entry.Offset)
	require.Len(t, hits[0].Result.Records, 2)

	again := rd.next(t)
	require.Equal(t, []string{"4", "5", "6", "7"}, partitionsOf(again))
	require.Equal(t, int64(2), again.req.Entries[2].Offset, "parked where the client asks next")
	r.Learn(&ps[6], Outcome{Next: 2, HighWatermark: 2})
	require.True(t, r.Park())
	rd.none(t)
	r.End()

	ps[6].FetchOffset = 2
	r, parts := roundOf(t, w, ps)
	for _, p := range parts {
		require.Equal(t, Quiet, p.State)
	}
	require.True(t, r.Park())
	rd.none(t)
	r.End()
}

func partitionsOf(p *pending) []string {
	var out []string
	for _, e := range p.req.Entries {
		out = append(out, e.Partition)
	}
	return out
}

// TestReadyBetweenFetches: a call that reads records while no fetch waits
// keeps them for the next fetch, which takes them as Ready; kept past
// Config.Fresh they are read again instead.
func TestReadyBetweenFetches(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4, Fresh: time.Second})
	ps := session(4, 10)
	r := parked(t, w, ps)
	r.End()
	c := rd.next(t)
	c.answer(map[string]int{"1": 1})
	rd.next(t) // parked again at once, partition 1 at 11

	r, parts := roundOf(t, w, ps)
	require.Equal(t, Ready, parts[1].State)
	require.Equal(t, int64(10), parts[1].Result.Records[0].Offset)
	require.Equal(t, int64(10), parts[1].Entry.Offset)
	require.Equal(t, Quiet, parts[0].State)
	r.End()

	// The records were not answered (no Learn): the client is still at 10,
	// the call parked at 11 is of no use to it. Read again.
	r, parts = roundOf(t, w, ps)
	require.Equal(t, Read, parts[1].State)
	r.End()

	// Kept too long: read again.
	w2, clk2 := newWatch(t, rd, Config{Group: 4, Fresh: time.Second})
	r = parked(t, w2, ps)
	r.End()
	rd.next(t).answer(map[string]int{"2": 1})
	rd.next(t)
	clk2.Advance(2 * time.Second)
	r, parts = roundOf(t, w2, ps)
	require.Equal(t, Read, parts[2].State)
	r.End()
}

// TestClientMovedAPartition: a fetch at another offset than the one a
// partition is parked at (a seek) reads it, and the call parked with it is
// cancelled; parked again once learned.
func TestClientMovedAPartition(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	ps := session(4, 3)
	r := parked(t, w, ps)
	r.End()
	c := rd.next(t)

	ps[2].FetchOffset = 0
	r, parts := roundOf(t, w, ps)
	require.Equal(t, Read, parts[2].State)
	require.Equal(t, int64(0), parts[2].Entry.Offset)
	c.cancelled(t)
	r.Learn(&ps[2], Outcome{Next: 3, HighWatermark: 3}) // answered 0..2
	require.True(t, r.Park())
	again := rd.next(t)
	require.Equal(t, int64(3), again.req.Entries[2].Offset)
	r.End()
}

// TestFailedCallIsReadNext: a call that fails ends the wait at once
// (failed), is not parked again in that round, and its partitions are read
// by the next fetch, which meets the failure as an answer.
func TestFailedCallIsReadNext(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	ps := session(4, 0)
	r := parked(t, w, ps)
	rd.next(t).ans <- answer{err: errors.New("queen: 503")}
	hits, failed := r.Wait(context.Background(), time.Now().Add(5*time.Second))
	require.Empty(t, hits)
	require.True(t, failed)
	require.True(t, r.Park())
	rd.none(t)
	r.End()

	r, parts := roundOf(t, w, ps)
	for _, p := range parts {
		require.Equal(t, Read, p.State)
	}
	r.End()
}

// TestDroppedPartitionsAndClose: partitions no fetch names stay watched
// for Config.Keep (a client may leave one out for a while and take it
// back), then leave the watch (a call of only such partitions is
// cancelled); Close cancels every call and gives back its place in the
// node's bound.
func TestDroppedPartitionsAndClose(t *testing.T) {
	rd := newReader()
	calls := NewCalls(10, 0)
	w, clk := newWatch(t, rd, Config{Group: 4, Calls: calls, Keep: 10 * time.Second})
	ps := session(8, 0)
	r := parked(t, w, ps)
	a, b := rd.next(t), rd.next(t)
	if a.req.Entries[0].Partition != "0" {
		a, b = b, a
	}
	r.End()

	r, _ = roundOf(t, w, ps[:4]) // partitions 4-7 left out
	require.True(t, r.Park())
	r.End()
	select {
	case <-b.ctx.Done():
		t.Fatal("a partition left out a moment was dropped")
	default:
	}
	r, parts := roundOf(t, w, ps) // and back: still watched
	for _, p := range parts {
		require.Equal(t, Quiet, p.State)
	}
	r.End()

	clk.Advance(11 * time.Second)
	r, _ = roundOf(t, w, ps[:4]) // left out past Keep: forgotten
	require.True(t, r.Park())
	b.cancelled(t)
	r.End()
	require.Eventually(t, func() bool { return calls.Parked() == 1 }, 5*time.Second, time.Millisecond)

	w.Close()
	a.cancelled(t)
	require.Eventually(t, func() bool { return calls.Parked() == 0 }, 5*time.Second, time.Millisecond)
	require.Nil(t, w.Begin(), "a closed watch runs no round")
}

// TestNodeBoundRefusesAPark: past its owner's share of the node's bound (a
// quarter) a group is not parked: Park says so and Unparked names its
// partitions, for the fetch to wait on another way.
func TestNodeBoundRefusesAPark(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4, Calls: NewCalls(8, 0)})
	ps := session(12, 0)
	r, _ := roundOf(t, w, ps)
	coldAll(r, ps)
	require.False(t, r.Park())
	rd.next(t)
	rd.next(t)
	rd.none(t)
	un := r.Unparked()
	require.Len(t, un, 4)
	require.Equal(t, 8, un[0].Idx)
	require.Equal(t, "8", un[0].Entry.Partition)
	r.End()
}

// TestOwnersShareTheBound: each owner holds at most a quarter of the
// node's parked calls, and the node's bound holds across owners; a call
// given back is another's to take.
func TestOwnersShareTheBound(t *testing.T) {
	c := NewCalls(8, 0)
	for _, owner := range []string{"a", "b", "c", "d"} {
		require.True(t, c.take(owner))
		require.True(t, c.take(owner))
		require.False(t, c.take(owner), "%s past its quarter", owner)
	}
	require.Equal(t, 8, c.Parked())
	require.False(t, c.take("e"), "the node's bound")
	c.give("a")
	require.True(t, c.take("e"))
	require.Equal(t, 8, c.Parked())
	require.Equal(t, 8, c.Limit())

	// A share past the bound (every client one owner) is the whole bound.
	one := NewCalls(8, 1<<30)
	for range 8 {
		require.True(t, one.take(""))
	}
	require.False(t, one.take(""), "the node's bound")
	require.Equal(t, 8, one.Share())
}

// TestIdleWatchStopsAsking: a call that answers nothing is parked again
// while the session is fetched, and not once no fetch came for Config.Wait.
func TestIdleWatchStopsAsking(t *testing.T) {
	rd := newReader()
	w, clk := newWatch(t, rd, Config{Group: 4, Wait: 10 * time.Second})
	ps := session(4, 0)
	r := parked(t, w, ps)
	r.End()
	rd.next(t).answer(nil) // the wait ran out
	third := rd.next(t)    // asked again: the session was fetched just now
	clk.Advance(11 * time.Second)
	third.answer(nil)
	rd.none(t)

	// The next fetch reads it again (nothing watched it meanwhile) and
	// parks it again.
	r, parts := roundOf(t, w, ps)
	require.Equal(t, Read, parts[0].State)
	coldAll(r, ps)
	require.True(t, r.Park())
	rd.next(t)
	r.End()
}

// TestUnwatchedColdPartitionsAreRead: a group that cannot be parked (one
// of its partitions is not cold) leaves its cold partitions unwatched, so
// each fetch reads them: a write to one of them is not missed while its
// neighbour stays busy.
func TestUnwatchedColdPartitionsAreRead(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	ps := session(4, 0)
	r, _ := roundOf(t, w, ps)
	for i := range ps {
		if i == 0 {
			r.Learn(&ps[i], Outcome{Next: 0, HighWatermark: 9}) // records waiting past the budget
			continue
		}
		r.Learn(&ps[i], Outcome{Next: 0, HighWatermark: 0})
	}
	require.True(t, r.Park())
	rd.none(t)
	r.End()

	r, parts := roundOf(t, w, ps)
	for i, p := range parts {
		require.Equal(t, Read, p.State, "partition %d is watched by no call", i)
	}
	r.End()
}

// TestFragmentedGroupsRegroup: partitions that come one fetch at a time
// make groups of one (a parked call is never widened); past two groups more
// than needed, the watch cancels them and regroups.
func TestFragmentedGroupsRegroup(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	var ps []fetchsession.Partition
	var live []*pending
	for i := range 6 {
		ps = append(ps, fetchsession.Partition{Key: fetchsession.Key{Topic: "t", Partition: int32(i)}, Slot: int32(i)})
		r, _ := roundOf(t, w, ps)
		coldAll(r, ps)
		require.True(t, r.Park())
		r.End()
		if i < 5 {
			c := rd.next(t)
			require.Len(t, c.req.Entries, 1)
			live = append(live, c)
		}
	}
	// Five groups of one for six partitions, where two would do: regrouped.
	for _, c := range live {
		c.cancelled(t)
	}
	a, b := rd.next(t), rd.next(t)
	require.ElementsMatch(t, []int{4, 2}, []int{len(a.req.Entries), len(b.req.Entries)})
	rd.none(t)
}

// TestConcurrentRounds: under -race, a round waiting while calls answer and
// re-park, and a second Begin refused while one runs.
func TestConcurrentRounds(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 8})
	ps := session(64, 0)
	r := parked(t, w, ps)
	require.Nil(t, w.Begin(), "one round at a time")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case c := <-rd.calls:
				c.answer(map[string]int{c.req.Entries[i%len(c.req.Entries)].Partition: 1})
			case <-stop:
				return
			}
		}
	})
	got := 0
	for got < 10 {
		hits, _ := r.Wait(context.Background(), time.Now().Add(5*time.Second))
		for _, h := range hits {
			r.Learn(&ps[h.Idx], Outcome{Next: h.Result.HighWatermark, HighWatermark: h.Result.HighWatermark})
			ps[h.Idx].FetchOffset = h.Result.HighWatermark
		}
		got += len(hits)
		r.Park()
	}
	r.End()
	w.Close()
	close(stop)
	wg.Wait()
}

// TestMatchAll: the whole fetch matched under one lock: what is not quiet,
// in the fetch's order; a partition with no queue is not named to the
// round, and leaves the watch.
func TestMatchAll(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 8})
	ps := session(6, 4)
	r := w.Begin()
	qs := r.Queues(len(ps))
	for i := range qs {
		qs[i] = "t"
	}
	qs[2] = "" // refused
	ms := r.MatchAll(ps, qs)
	require.Len(t, ms, 5)
	for j, want := range []int{0, 1, 3, 4, 5} {
		require.Equal(t, want, ms[j].Idx)
		require.Equal(t, Read, ms[j].State)
	}
	for _, m := range ms {
		r.Learn(&ps[m.Idx], Outcome{Next: 4, HighWatermark: 4})
	}
	require.True(t, r.Park())
	require.Len(t, rd.next(t).req.Entries, 5, "the refused partition is not watched")
	r.End()

	r = w.Begin()
	qs = r.Queues(len(ps))
	for i := range qs {
		qs[i] = "t"
	}
	qs[2] = ""
	require.Empty(t, r.MatchAll(ps, qs), "every partition named is parked: nothing to do")
	r.End()
}

// TestAssignGivesSessionSlots: a sessionless client's partitions get slots
// by key: kept while named, a forgotten one's slot reused with a new
// generation, and a fetch naming a partition twice refused.
func TestAssignGivesSessionSlots(t *testing.T) {
	w, clk := newWatch(t, newReader(), Config{Keep: 10 * time.Second})
	key := func(p int32) fetchsession.Partition {
		return fetchsession.Partition{Key: fetchsession.Key{Topic: "t", Partition: p}}
	}
	assign := func(ps ...fetchsession.Partition) []fetchsession.Partition {
		t.Helper()
		r := w.Begin()
		require.True(t, r.Assign(ps))
		r.End()
		return ps
	}
	first := assign(key(0), key(1), key(2))
	again := assign(key(2), key(0), key(1))
	require.Equal(t, first[0].Slot, again[1].Slot)
	require.Equal(t, first[2].Slot, again[0].Slot)
	require.Equal(t, first[2].SlotGen, again[0].SlotGen)

	// 1 is no longer named: kept for Keep, then freed (after the new ones
	// are placed, as a session adds before it forgets), and the next new
	// one, 4, takes its slot, another generation.
	assign(key(0), key(2))
	require.Equal(t, first[1].Slot, assign(key(0), key(1), key(2))[1].Slot, "left out a moment: kept")
	assign(key(0), key(2))
	clk.Advance(11 * time.Second)
	assign(key(0), key(2), key(3))
	fourth := assign(key(0), key(2), key(3), key(4))
	require.Equal(t, first[1].Slot, fourth[3].Slot)
	require.NotEqual(t, first[1].SlotGen, fourth[3].SlotGen)

	r := w.Begin()
	require.False(t, r.Assign([]fetchsession.Partition{key(0), key(0)}), "a partition named twice")
	r.End()
}

// TestKeptPartitionDoesNotHoldItsGroup: a partition no fetch names any
// more (kept for Config.Keep) whose read failed does not keep its group
// from being parked: the call leaves it out, and the others stay watched.
func TestKeptPartitionDoesNotHoldItsGroup(t *testing.T) {
	rd := newReader()
	w, _ := newWatch(t, rd, Config{Group: 4})
	ps := session(4, 0)
	r := parked(t, w, ps)
	r.End()
	c := rd.next(t)
	rs := c.results(nil)
	rs[3].Error = queen.FetchErrUnknownTopic // its topic went away
	c.ans <- answer{rs: rs}
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.members[3].res != nil
	}, 5*time.Second, time.Millisecond)

	r, parts := roundOf(t, w, ps[:3]) // the refused partition is no longer named
	for i, p := range parts {
		require.Equal(t, Read, p.State, "partition %d: its group's call ended", i)
	}
	coldAll(r, ps[:3])
	require.True(t, r.Park())
	again := rd.next(t)
	require.Equal(t, []string{"0", "1", "2"}, partitionsOf(again), "parked without the failed one")
	r.End()

	r, parts = roundOf(t, w, ps[:3])
	for _, p := range parts {
		require.Equal(t, Quiet, p.State)
	}
	r.End()
}
