package fetchsession

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// clock is a settable Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Unix(1_800_000_000, 0)} }
func part(topic string, p int32, off int64) Partition {
	return Partition{Key: Key{Topic: topic, Partition: p}, FetchOffset: off, MaxBytes: 1 << 20}
}

func parts(topic string, n int) []Partition {
	ps := make([]Partition, n)
	for i := range ps {
		ps[i] = part(topic, int32(i), 0)
	}
	return ps
}

// unslotted is ps without their slots (which TestSlots checks).
func unslotted(ps []Partition) []Partition {
	out := make([]Partition, len(ps))
	for i, p := range ps {
		p.Slot, p.SlotGen = 0, 0
		out[i] = p
	}
	return out
}

func keys(ps []Partition) []Key {
	ks := make([]Key, len(ps))
	for i := range ps {
		ks[i] = ps[i].Key
	}
	return ks
}

// open opens a session of ps for owner and answers its full fetch with
// high watermark 0 everywhere.
func open(t *testing.T, c *Cache, owner string, ps ...Partition) *Fetch {
	t.Helper()
	f := c.Begin(Request{Owner: owner, Epoch: InitialEpoch, Partitions: ps})
	require.Equal(t, Full, f.Kind)
	require.Zero(t, f.Error)
	require.Positive(t, f.ID)
	f.Answer(make([]Result, len(f.Partitions)))
	return f
}

func TestSessionlessAndFull(t *testing.T) {
	c := New(Config{})
	ps := parts("t", 3)
	f := c.Begin(Request{ID: 0, Epoch: FinalEpoch, Partitions: ps})
	require.Equal(t, Sessionless, f.Kind)
	require.Zero(t, f.ID)
	require.Equal(t, ps, f.Partitions)
	require.Equal(t, []bool{true, true, true}, f.Answer(make([]Result, 3)))
	require.Zero(t, c.Stats().Sessions)

	f = c.Begin(Request{Epoch: InitialEpoch, Partitions: ps})
	require.Equal(t, Full, f.Kind)
	require.Positive(t, f.ID)
	require.Equal(t, ps, f.Partitions)
	require.Equal(t, []bool{true, true, true}, f.Answer(make([]Result, 3)), "a full fetch answers every partition")
	st := c.Stats()
	require.Equal(t, 1, st.Sessions)
	require.Equal(t, 3, st.Partitions)
	require.Equal(t, uint64(1), st.Full)
	require.Equal(t, uint64(1), st.Sessionless)
}

func TestIncrementalEpochsAndForgotten(t *testing.T) {
	c := New(Config{})
	f := open(t, c, "", parts("t", 3)...)
	id := f.ID

	// Epoch 1 adds a partition, moves one's offset, forgets another.
	f = c.Begin(Request{ID: id, Epoch: 1, Partitions: []Partition{part("t", 1, 7), part("u", 0, 0)}, Forgotten: []Key{{Topic: "t", Partition: 2}}})
	require.Equal(t, Incremental, f.Kind)
	require.Zero(t, f.Error)
	require.Equal(t, id, f.ID)
	require.Equal(t, []Partition{part("t", 0, 0), part("t", 1, 7), part("u", 0, 0)}, unslotted(f.Partitions))
	require.Equal(t, 3, c.Stats().Partitions)

	// The same epoch again (a duplicate request) is refused, as is a skipped one.
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code, c.Begin(Request{ID: id, Epoch: 1}).Error)
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code, c.Begin(Request{ID: id, Epoch: 3}).Error)
	f = c.Begin(Request{ID: id, Epoch: 2})
	require.Zero(t, f.Error)
	require.Len(t, f.Partitions, 3, "an empty incremental request fetches the whole session")

	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{ID: id + 1, Epoch: 1}).Error)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{ID: 0, Epoch: 1}).Error)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{Owner: "other", ID: id, Epoch: 3}).Error, "another owner cannot use the session")
	require.Equal(t, kerr.FetchSessionTopicIDError.Code, c.Begin(Request{ID: id, Epoch: 3, UsesIDs: true}).Error)
	st := c.Stats()
	require.Equal(t, uint64(2), st.InvalidEpoch)
	require.Equal(t, uint64(3), st.NotFound)
	require.Equal(t, uint64(1), st.TopicIDError)
	require.Equal(t, uint64(2), st.Incremental)

	// Another owner cannot close it either; its owner can.
	c.Begin(Request{Owner: "other", ID: id, Epoch: FinalEpoch})
	require.Zero(t, c.Begin(Request{ID: id, Epoch: 3}).Error)
	c.Begin(Request{ID: id, Epoch: FinalEpoch})
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{ID: id, Epoch: 4}).Error)
	require.Zero(t, c.Stats().Sessions)
	require.Zero(t, c.Stats().Partitions)

	// Epoch 0 with an id closes that session and opens another.
	f = open(t, c, "", parts("t", 2)...)
	g := c.Begin(Request{ID: f.ID, Epoch: InitialEpoch, Partitions: parts("t", 1)})
	require.NotEqual(t, f.ID, g.ID)
	require.Equal(t, 1, c.Stats().Sessions)
	require.Equal(t, 1, c.Stats().Partitions)
}

func TestNextEpoch(t *testing.T) {
	require.Equal(t, int32(1), NextEpoch(0))
	require.Equal(t, int32(8), NextEpoch(7))
	require.Equal(t, int32(1), NextEpoch(math.MaxInt32), "wraps to 1, never to 0")
	require.Equal(t, FinalEpoch, NextEpoch(-1))
}

func TestIncrementalOmitsWhatIsUnchanged(t *testing.T) {
	c := New(Config{})
	ps := parts("t", 5)
	f := c.Begin(Request{Epoch: InitialEpoch, Partitions: ps})
	f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}})
	id := f.ID

	f = c.Begin(Request{ID: id, Epoch: 1})
	require.Equal(t, keys(ps), keys(f.Partitions))
	carry := f.Answer([]Result{
		{HighWatermark: 10},                    // nothing new
		{HighWatermark: 11, Records: true},     // records
		{HighWatermark: 12},                    // the high watermark moved
		{HighWatermark: 10, LogStartOffset: 3}, // the log start moved
		{Error: kerr.OffsetOutOfRange.Code},    // an error
	})
	require.Equal(t, []bool{false, true, true, true, true}, carry)

	// Answered partitions went to the back, in order.
	f = c.Begin(Request{ID: id, Epoch: 2})
	require.Equal(t, []Key{ps[0].Key, ps[1].Key, ps[2].Key, ps[3].Key, ps[4].Key}, keys(f.Partitions))
	carry = f.Answer([]Result{
		{HighWatermark: 10},                    // t-0: still nothing
		{HighWatermark: 11},                    // t-1: as last answered
		{HighWatermark: 12},                    // t-2: as last answered
		{HighWatermark: 10, LogStartOffset: 3}, // t-3: as last answered
		{HighWatermark: 10},                    // t-4: the error is gone: answered again
	})
	require.Equal(t, []bool{false, false, false, false, true}, carry)

	// A partition that keeps failing is answered every time, and moves to
	// the back each time.
	f = c.Begin(Request{ID: id, Epoch: 3})
	carry = f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 11}, {Error: kerr.UnknownTopicOrPartition.Code}, {HighWatermark: 10, LogStartOffset: 3}, {HighWatermark: 10}})
	require.Equal(t, []bool{false, false, true, false, false}, carry)
	f = c.Begin(Request{ID: id, Epoch: 4})
	require.Equal(t, []Key{ps[0].Key, ps[1].Key, ps[3].Key, ps[4].Key, ps[2].Key}, keys(f.Partitions))
	carry = f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 11}, {HighWatermark: 10, LogStartOffset: 3}, {HighWatermark: 10}, {Error: kerr.UnknownTopicOrPartition.Code}})
	require.Equal(t, []bool{false, false, false, false, true}, carry)

	// An unread partition is omitted and leaves what was answered alone:
	// read again with its old bounds, it is still not answered.
	f = c.Begin(Request{ID: id, Epoch: 5})
	rs := make([]Result, 5)
	for i := range rs {
		rs[i] = Result{HighWatermark: -1, LogStartOffset: -1, Unread: true}
	}
	require.Equal(t, []bool{false, false, false, false, false}, f.Answer(rs))
	f = c.Begin(Request{ID: id, Epoch: 6})
	require.Equal(t, []bool{false, false, false, false, true},
		f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 11}, {HighWatermark: 10, LogStartOffset: 3}, {HighWatermark: 10}, {Error: kerr.UnknownTopicOrPartition.Code}}))
}

func TestEvictionFollowsKafka(t *testing.T) {
	clk := newClock()
	c := New(Config{Slots: 2, EvictAfter: time.Minute, Now: clk.now})
	a := open(t, c, "", parts("a", 5)...)
	clk.advance(time.Second)
	b := open(t, c, "", parts("b", 3)...)

	// Full, and both young: nobody is evicted, whatever the size. The
	// fetch is answered in full without a session.
	clk.advance(time.Second)
	f := c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("c", 100)})
	require.Equal(t, Full, f.Kind)
	require.Zero(t, f.ID)
	require.Len(t, f.Answer(make([]Result, 100)), 100)
	require.Equal(t, 2, c.Stats().Sessions)
	require.Zero(t, c.Stats().Evictions)

	// Old enough, used recently: the smallest (b) goes, but only for a
	// strictly larger newcomer.
	clk.advance(time.Minute)
	require.Zero(t, c.Begin(Request{ID: a.ID, Epoch: 1}).Error)
	require.Zero(t, c.Begin(Request{ID: b.ID, Epoch: 1}).Error)
	require.Zero(t, c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("c", 3)}).ID, "as large as the smallest: no eviction")
	d := c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("d", 4)})
	require.Positive(t, d.ID)
	require.Equal(t, uint64(1), c.Stats().Evictions)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{ID: b.ID, Epoch: 2}).Error, "b was evicted")
	require.Zero(t, c.Begin(Request{ID: a.ID, Epoch: 2}).Error)
	require.Equal(t, 9, c.Stats().Partitions)

	// d is young and a is not: a newcomer larger than d still cannot evict
	// it, and a is larger. Once a is unused for longer than EvictAfter it
	// is stale, and goes for anybody, however small.
	require.Zero(t, c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("e", 5)}).ID)
	clk.advance(time.Minute + time.Second)
	require.Zero(t, c.Begin(Request{ID: d.ID, Epoch: 1}).Error)
	e := c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("e", 1)})
	require.Positive(t, e.ID)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, c.Begin(Request{ID: a.ID, Epoch: 3}).Error, "a was stale")
	require.Equal(t, uint64(2), c.Stats().Evictions)
	require.Equal(t, 2, c.Stats().Sessions)
	require.Equal(t, 5, c.Stats().Partitions)
}

func TestPartitionBound(t *testing.T) {
	c := New(Config{MaxPartitions: 10})
	a := open(t, c, "", parts("a", 6)...)
	require.Zero(t, c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("b", 5)}).ID, "past the partition bound: no session")
	b := open(t, c, "", parts("b", 4)...)
	require.Equal(t, 10, c.Stats().Partitions)

	// b growing past the bound is closed; its client starts over.
	f := c.Begin(Request{ID: b.ID, Epoch: 1, Partitions: []Partition{part("b", 9, 0)}})
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, f.Error)
	require.Equal(t, 1, c.Stats().Sessions)
	require.Equal(t, 6, c.Stats().Partitions)
	// a shrinking and growing inside it is fine.
	f = c.Begin(Request{ID: a.ID, Epoch: 1, Partitions: parts("c", 4), Forgotten: keys(parts("a", 3))})
	require.Zero(t, f.Error)
	require.Len(t, f.Partitions, 7)
	require.Equal(t, 7, c.Stats().Partitions)
}

func TestTopicIDSessions(t *testing.T) {
	c := New(Config{})
	id := [16]byte{1}
	p := Partition{Key: Key{ID: id, Partition: 0}}
	f := c.Begin(Request{Epoch: InitialEpoch, UsesIDs: true, Partitions: []Partition{p}})
	require.Positive(t, f.ID)
	require.Equal(t, kerr.FetchSessionTopicIDError.Code, c.Begin(Request{ID: f.ID, Epoch: 1}).Error, "fetched by name")
	g := c.Begin(Request{ID: f.ID, Epoch: 1, UsesIDs: true, Forgotten: []Key{{ID: id, Partition: 0}}})
	require.Zero(t, g.Error)
	require.Empty(t, g.Partitions)
}

// TestConcurrentSessions: clients fetching their own sessions at once, a
// cache bounded below their number, and scrapes in between; run under
// -race. Every refusal is one a client can recover from, and the bounds
// hold throughout.
func TestConcurrentSessions(t *testing.T) {
	// A clock a second on at every read: sessions age past EvictAfter while
	// in use, so evictions race the fetches too.
	var ticks atomic.Int64
	now := func() time.Time { return time.Unix(1_800_000_000+ticks.Add(1), 0) }
	c := New(Config{Slots: 8, MaxPartitions: 100, EvictAfter: 30 * time.Second, Now: now})
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := parts("t"+strconv.Itoa(g), 5)
			var id, epoch int32
			for i := 0; i < 200; i++ {
				f := c.Begin(Request{ID: id, Epoch: epoch, Partitions: ps})
				switch f.Error {
				case 0:
				case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
					id, epoch = 0, InitialEpoch // start over, as a client does
					continue
				default:
					t.Errorf("unexpected refusal %d", f.Error)
					return
				}
				f.Answer(make([]Result, len(f.Partitions)))
				if f.ID == 0 {
					id, epoch = 0, InitialEpoch // no slot: try again next time
					continue
				}
				id, epoch = f.ID, NextEpoch(epoch)
				st := c.Stats()
				if st.Sessions > 8 || st.Partitions > 100 {
					t.Errorf("bounds broken: %+v", st)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	require.LessOrEqual(t, st.Sessions, 8)
	require.Equal(t, st.Sessions*5, st.Partitions)
	require.Positive(t, st.Evictions)
	require.Positive(t, st.Incremental)
}

// TestDistinct: a partition named more than once is read once, at the
// place it was first named with what it asked last (Kafka's map of a
// fetch's partitions); a request naming each once is returned as it is,
// in the usual orders (ascending, or rotated as librdkafka sends) without
// building a map.
func TestDistinct(t *testing.T) {
	p := func(topic string, part int32, offset int64) Partition {
		return Partition{Key: Key{Topic: topic, Partition: part}, FetchOffset: offset}
	}
	byID := func(id byte, part int32) Partition { return Partition{Key: Key{ID: [16]byte{id}, Partition: part}} }
	for _, tc := range []struct {
		name    string
		in, out []Partition
		same    bool // no repeat proved without a map: in itself
	}{
		{name: "empty", same: true},
		{name: "ascending", in: []Partition{p("a", 0, 0), p("a", 1, 0), p("b", 0, 0)}, same: true},
		{name: "rotated", in: []Partition{p("a", 2, 0), p("a", 3, 0), p("a", 0, 0), p("a", 1, 0)}, same: true},
		{name: "by id", in: []Partition{byID(1, 0), byID(2, 0), byID(1, 1)}, out: []Partition{byID(1, 0), byID(2, 0), byID(1, 1)}},
		{name: "a topic in two runs", in: []Partition{p("a", 1, 0), p("b", 0, 0), p("a", 0, 0)}, out: []Partition{p("a", 1, 0), p("b", 0, 0), p("a", 0, 0)}},
		{name: "one partition over and over", in: []Partition{p("a", 0, 1), p("a", 0, 2), p("a", 0, 3)}, out: []Partition{p("a", 0, 3)}},
		{name: "rotated past its start", in: []Partition{p("a", 2, 0), p("a", 3, 0), p("a", 0, 0), p("a", 2, 7)}, out: []Partition{p("a", 2, 7), p("a", 3, 0), p("a", 0, 0)}},
		{name: "wrapped twice", in: []Partition{p("a", 1, 0), p("a", 0, 0), p("a", 1, 5), p("a", 0, 6)}, out: []Partition{p("a", 1, 5), p("a", 0, 6)}},
		{name: "repeated across runs", in: []Partition{p("a", 0, 1), p("b", 0, 0), p("a", 0, 9), p("b", 1, 0)}, out: []Partition{p("a", 0, 9), p("b", 0, 0), p("b", 1, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Distinct(tc.in)
			if tc.same {
				require.Equal(t, tc.in, got)
				if len(tc.in) > 0 {
					require.Same(t, &tc.in[0], &got[0], "no copy when nothing repeats")
				}
				return
			}
			require.Equal(t, tc.out, got)
		})
	}
}

// TestFullFetchNamesEachPartitionOnce: a full fetch naming a partition
// twice opens a session of one partition and is answered once for it.
func TestFullFetchNamesEachPartitionOnce(t *testing.T) {
	c := New(Config{})
	f := c.Begin(Request{Epoch: InitialEpoch, Partitions: []Partition{
		{Key: Key{Topic: "a"}, FetchOffset: 1}, {Key: Key{Topic: "a", Partition: 1}}, {Key: Key{Topic: "a"}, FetchOffset: 4},
	}})
	require.Len(t, f.Partitions, 2)
	require.Equal(t, int64(4), f.Partitions[0].FetchOffset, "what it asked last")
	require.Equal(t, 2, c.Stats().Partitions)
}
