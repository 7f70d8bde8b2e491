package fetchsession

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAnswerSome: an incremental fetch that read only some partitions
// carries those with news, leaves the unnamed ones as they were (unread),
// and moves the carried ones to the back.
func TestAnswerSome(t *testing.T) {
	c := New(Config{})
	ps := parts("t", 5)
	f := c.Begin(Request{Epoch: InitialEpoch, Partitions: ps})
	f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}})
	id := f.ID

	f = c.Begin(Request{ID: id, Epoch: 1})
	carry := f.AnswerSome([]int{1, 3, 4}, []Result{
		{HighWatermark: 11, Records: true}, // t-1: records
		{HighWatermark: 10},                // t-3: nothing new
		{Error: kerr.OffsetOutOfRange.Code},
	})
	require.Equal(t, []bool{true, false, true}, carry)

	f = c.Begin(Request{ID: id, Epoch: 2})
	require.Equal(t, []Key{ps[0].Key, ps[2].Key, ps[3].Key, ps[1].Key, ps[4].Key}, keys(f.Partitions))
	// Read in full now: t-0, t-2 unchanged since the full fetch (they were
	// not named, so nothing was recorded of them), t-1 as last answered,
	// t-4's error gone.
	carry = f.Answer([]Result{{HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 10}, {HighWatermark: 11}, {HighWatermark: 10}})
	require.Equal(t, []bool{false, false, false, false, true}, carry)

	// A full fetch carries whatever it names.
	g := c.Begin(Request{Epoch: InitialEpoch, Partitions: parts("u", 3)})
	require.Equal(t, []bool{true, true}, g.AnswerSome([]int{0, 2}, make([]Result, 2)))
}

// closer is an Attachment that counts its closes.
type closer struct{ n int }

func (c *closer) Close() { c.n++ }

// TestAttachmentClosedWithSession: whatever ends a session (its client
// closing it, reopening its id, eviction, outgrowing the bound) closes what
// the node attached to it, once; attaching to a session already gone, or
// replacing an attachment, closes the one left over.
func TestAttachmentClosedWithSession(t *testing.T) {
	clk := newClock()
	c := New(Config{Slots: 1, EvictAfter: time.Minute, MaxPartitions: 10, Now: clk.now})

	// Closed by its client (epoch -1).
	f := open(t, c, "", parts("a", 2)...)
	inc := c.Begin(Request{ID: f.ID, Epoch: 1})
	a := &closer{}
	inc.Attach(a)
	require.Same(t, a, inc.Attachment())
	c.Begin(Request{ID: f.ID, Epoch: FinalEpoch})
	require.Equal(t, 1, a.n)

	// Reopened at epoch 0 with its id.
	f = open(t, c, "", parts("b", 2)...)
	inc = c.Begin(Request{ID: f.ID, Epoch: 1})
	b := &closer{}
	inc.Attach(b)
	c.Begin(Request{ID: f.ID, Epoch: InitialEpoch, Partitions: parts("b", 2)})
	require.Equal(t, 1, b.n)

	// Evicted: unused past EvictAfter, a newcomer takes the one slot.
	for _, s := range c.sessions {
		c.remove(s)
	}
	f = open(t, c, "", parts("c", 2)...)
	inc = c.Begin(Request{ID: f.ID, Epoch: 1})
	cc := &closer{}
	inc.Attach(cc)
	clk.advance(2 * time.Minute)
	open(t, c, "", parts("d", 3)...)
	require.Equal(t, 1, cc.n)
	require.Equal(t, uint64(1), c.Stats().Evictions)

	// Attached after the session went: closed at once. Replaced: the old
	// one closed, the new one kept.
	late := &closer{}
	inc.Attach(late)
	require.Equal(t, 1, late.n)
	require.Nil(t, inc.Attachment())

	for _, s := range c.sessions {
		c.remove(s)
	}
	f = open(t, c, "", parts("e", 2)...)
	inc = c.Begin(Request{ID: f.ID, Epoch: 1})
	first, second := &closer{}, &closer{}
	inc.Attach(first)
	inc.Attach(second)
	require.Equal(t, 1, first.n)
	require.Zero(t, second.n)

	// Outgrown: an incremental fetch past MaxPartitions closes it.
	inc.Answer(make([]Result, len(inc.Partitions)))
	over := c.Begin(Request{ID: f.ID, Epoch: 2, Partitions: parts("f", 11)})
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, over.Error)
	require.Equal(t, 1, second.n)

	// A fetch without a session closes what it is given.
	none := &closer{}
	c.Begin(Request{Epoch: FinalEpoch, Partitions: parts("g", 1)}).Attach(none)
	require.Equal(t, 1, none.n)
}

// TestSlots: every partition of a session has a slot no other partition of
// it has; a forgotten partition's slot goes to the next one added, so slots
// stay below the number of partitions the session ever held at once (a
// request's additions are made before its forgotten partitions go, as in
// Kafka's FetchSession.update).
func TestSlots(t *testing.T) {
	c := New(Config{})
	f := open(t, c, "", parts("t", 4)...)
	slots := func(f *Fetch) map[Key]int32 {
		m := map[Key]int32{}
		seen := map[int32]bool{}
		for _, p := range f.Partitions {
			require.False(t, seen[p.Slot], "slot %d given twice", p.Slot)
			require.GreaterOrEqual(t, p.Slot, int32(0))
			seen[p.Slot] = true
			m[p.Key] = p.Slot
		}
		return m
	}
	inc := c.Begin(Request{ID: f.ID, Epoch: 1})
	before := slots(inc)
	require.Len(t, before, 4)
	inc.Answer(make([]Result, 4))

	inc = c.Begin(Request{ID: f.ID, Epoch: 2, Forgotten: []Key{{Topic: "t", Partition: 1}}, Partitions: []Partition{part("u", 0, 0)}})
	after := slots(inc)
	require.Len(t, after, 4)
	for k, s := range after {
		if k.Topic == "t" {
			require.Equal(t, before[k], s, "a partition keeps its slot")
		}
	}
	inc.Answer(make([]Result, 4))
	inc = c.Begin(Request{ID: f.ID, Epoch: 3, Forgotten: []Key{{Topic: "t", Partition: 2}}})
	inc.Answer(make([]Result, 3))
	inc = c.Begin(Request{ID: f.ID, Epoch: 4, Partitions: []Partition{part("u", 1, 0)}})
	got := slots(inc)
	require.Equal(t, before[Key{Topic: "t", Partition: 2}], got[Key{Topic: "u", Partition: 1}], "the forgotten partition's slot is reused")
	for _, p := range inc.Partitions {
		if p.Key == (Key{Topic: "u", Partition: 1}) {
			require.Equal(t, uint32(2), p.SlotGen, "its second partition: another generation")
		}
		if p.Key == (Key{Topic: "t", Partition: 0}) {
			require.Equal(t, uint32(1), p.SlotGen)
		}
	}
	for _, s := range got {
		require.Less(t, s, int32(5), "at most 5 were held at once: u-0 came before t-1 went")
	}
}

// TestIncrementalFetchReusesItsBuffer: a session's incremental fetches
// copy its partitions into one buffer, so a wide session fetched often
// does not allocate its width every time.
func TestIncrementalFetchReusesItsBuffer(t *testing.T) {
	c := New(Config{})
	f := open(t, c, "", parts("t", 10_000)...)
	epoch := int32(1)
	fetch := func() {
		inc := c.Begin(Request{ID: f.ID, Epoch: epoch})
		epoch++
		inc.AnswerSome([]int{7}, []Result{{HighWatermark: int64(epoch), Records: true}})
	}
	fetch()
	allocs := testing.AllocsPerRun(20, fetch)
	require.Less(t, allocs, 20.0, "an incremental fetch of 10,000 partitions allocates per fetch, not per partition")
}
