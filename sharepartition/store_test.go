package sharepartition

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/twmb/franz-go/pkg/kerr"
)

var key = Key{Group: "share", Topic: "orders", Partition: 3}

type fakeLog struct{ start, end, atTime int64 }

func (l fakeLog) StartOffset(context.Context) (int64, error) { return l.start, nil }
func (l fakeLog) EndOffset(context.Context) (int64, error)   { return l.end, nil }
func (l fakeLog) OffsetForTime(_ context.Context, ms int64) (int64, bool, error) {
	return l.atTime, l.atTime >= 0, nil
}

func fixedInit(spso int64) Initializer {
	return func(context.Context) (int64, error) { return spso, nil }
}

// acquire and acknowledge as a ShareFetch handler would: one Update each.
func acquire(t *testing.T, h *Handle, kv KV, member string, first, last int64, n int, now time.Time) []AcquiredRange {
	t.Helper()
	var got []AcquiredRange
	if err := h.Update(context.Background(), kv, func(p *Partition) error {
		got = p.Acquire(member, first, last, n, now)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func acknowledge(h *Handle, kv KV, member string, b []AckBatch, now time.Time) error {
	return h.Update(context.Background(), kv, func(p *Partition) error { return p.Acknowledge(member, b, now) })
}

func TestHandleInitializesOnceAndWritesOncePerRequest(t *testing.T) {
	kv := memkv.New()
	h := NewHandle(key, testConfig(), fixedInit(40))
	got := acquire(t, h, kv, "m1", 40, 49, 10, t0)
	if !reflect.DeepEqual(got, []AcquiredRange{{40, 49, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	_, w0 := kv.Counts()
	// A request acknowledging ten records in two batches is one write.
	err := acknowledge(h, kv, "m1", []AckBatch{{40, 44, one(Accept)}, {45, 49, []AckType{1, 2, 1, 3, 1}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, w1 := kv.Counts(); w1-w0 != 1 {
		t.Fatalf("%d writes for one acknowledgement request", w1-w0)
	}
	// A restarted node reads the same state.
	h2 := NewHandle(key, testConfig(), fixedInit(0))
	var spso int64
	var same bool
	h.View(context.Background(), kv, func(p *Partition) {
		h2.View(context.Background(), kv, func(q *Partition) { same, spso = Equal(p, q), q.SPSO() })
	})
	if !same || spso != 46 {
		t.Fatalf("reloaded state differs (spso %d)", spso)
	}
}

func TestHandleLostCASRerunsOnTheWinnersState(t *testing.T) {
	kv := memkv.New()
	a := NewHandle(key, testConfig(), fixedInit(0))
	b := NewHandle(key, testConfig(), fixedInit(0))
	acquire(t, a, kv, "m1", 0, 4, 5, t0)
	acquire(t, b, kv, "m2", 0, 9, 10, t0) // b loads a's row: gets 5..9
	// a's cache is stale: it believes 5..9 are new and takes them for m3,
	// loses the compare-and-set, and acquires from b's row instead.
	got := acquire(t, a, kv, "m3", 0, 14, 10, t0)
	if !reflect.DeepEqual(got, []AcquiredRange{{10, 14, 1}}) {
		t.Fatalf("stale node acquired %v: a record would be delivered twice inside its lock", got)
	}
}

func TestHandleStaleCacheDoesNotRefuseAnEntitledAck(t *testing.T) {
	kv := memkv.New()
	a := NewHandle(key, testConfig(), fixedInit(0))
	b := NewHandle(key, testConfig(), fixedInit(0))
	a.View(context.Background(), kv, func(*Partition) {}) // a caches the empty row
	acquire(t, b, kv, "m1", 0, 4, 5, t0)
	// m1's acknowledgement reaches a, whose cache never saw the acquisition.
	if err := acknowledge(a, kv, "m1", ack(0, 4, Accept), t0); err != nil {
		t.Fatalf("stale cache refused: %v", err)
	}
	// And a stale node finds records to acquire that its cache lacks.
	acquire(t, b, kv, "m1", 5, 9, 5, t0)
	if err := acknowledge(b, kv, "m1", ack(5, 6, Release), t0); err != nil {
		t.Fatal(err)
	}
	if got := acquire(t, a, kv, "m2", 5, 9, 5, t0); !reflect.DeepEqual(got, []AcquiredRange{{5, 6, 2}}) {
		t.Fatalf("got %v", got)
	}
}

func TestHandleContendedTwice(t *testing.T) {
	kv := memkv.New()
	a := NewHandle(key, testConfig(), fixedInit(0))
	b := NewHandle(key, testConfig(), fixedInit(0))
	acquire(t, a, kv, "m1", 0, 4, 5, t0)
	// Another node writes before each of a's two puts.
	var race func()
	n := 0
	race = func() {
		acquire(t, b, kv, "m2", 0, 100, 1, t0)
		if n++; n < 2 {
			kv.BeforeNextPut(race)
		}
	}
	kv.BeforeNextPut(race)
	err := acknowledge(a, kv, "m1", ack(0, 4, Accept), t0)
	if !errors.Is(err, ErrContended) || code(err) != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("got %v", err)
	}
	// Nothing was applied, and the next try (no race) is.
	if err := acknowledge(a, kv, "m1", ack(0, 4, Accept), t0); err != nil {
		t.Fatal(err)
	}
}

func TestHandleUnknownWriteOutcomeRereads(t *testing.T) {
	kv := memkv.New()
	h := NewHandle(key, testConfig(), fixedInit(0))
	acquire(t, h, kv, "m1", 0, 4, 5, t0)
	kv.FailNext(errors.New("connection reset"))
	if err := acknowledge(h, kv, "m1", ack(0, 4, Accept), t0); err == nil {
		t.Fatal("a failed write answered success")
	}
	// The cache was dropped: the row (records still acquired) is the truth.
	if err := acknowledge(h, kv, "m1", ack(0, 4, Accept), t0); err != nil {
		t.Fatal(err)
	}
}

func TestHandleReinitializesAfterDelete(t *testing.T) {
	kv := memkv.New()
	h := NewHandle(key, testConfig(), fixedInit(0))
	acquire(t, h, kv, "m1", 0, 4, 5, t0)
	if err := Delete(context.Background(), kv, []Key{key}); err != nil {
		t.Fatal(err)
	}
	h.init = fixedInit(20)
	if got := acquire(t, h, kv, "m1", 0, 24, 5, t0); !reflect.DeepEqual(got, []AcquiredRange{{20, 24, 1}}) {
		t.Fatalf("after delete: %v", got)
	}
}

func TestAdminDescribeAlterDelete(t *testing.T) {
	kv := memkv.New()
	ctx := context.Background()
	for p := range int32(3) {
		h := NewHandle(Key{"share", "orders", p}, testConfig(), fixedInit(10))
		acquire(t, h, kv, "m1", 10, 14, 5, t0)
		acknowledge(h, kv, "m1", ack(12, 13, Accept), t0)
	}
	other := NewHandle(Key{"share2", "orders", 0}, testConfig(), fixedInit(0))
	acquire(t, other, kv, "m1", 0, 0, 1, t0)
	sums, err := Describe(ctx, kv, "share")
	if err != nil || len(sums) != 3 {
		t.Fatalf("describe: %v %v", sums, err)
	}
	if want := (Summary{Topic: "orders", Partition: 1, SPSO: 10, SPEO: 14, InFlight: 5, DeliveryComplete: 2}); sums[1] != want {
		t.Fatalf("summary %+v want %+v", sums[1], want)
	}
	if err := Alter(ctx, kv, map[Key]int64{{"share", "orders", 1}: 99}); err != nil {
		t.Fatal(err)
	}
	if code(Alter(ctx, kv, map[Key]int64{{"share", "orders", 1}: -1})) != kerr.InvalidRequest.Code {
		t.Fatal("negative offset accepted")
	}
	sums, _ = Describe(ctx, kv, "share")
	if sums[1].SPSO != 99 || sums[1].InFlight != 0 {
		t.Fatalf("after alter %+v", sums[1])
	}
	if err := DeleteGroup(ctx, kv, "share"); err != nil {
		t.Fatal(err)
	}
	if sums, _ = Describe(ctx, kv, "share"); len(sums) != 0 {
		t.Fatalf("after delete: %v", sums)
	}
	if _, _, ok := kv.Row(queen.ShareStateKey("share2", "orders", 0)); !ok {
		t.Fatal("another group's state was deleted")
	}
}

func TestResetInitializer(t *testing.T) {
	log := fakeLog{start: 5, end: 50, atTime: 30}
	now := func() time.Time { return t0 }
	cases := map[string]int64{"latest": 50, "earliest": 5, "by_duration:PT1H": 30, "by_duration:P1DT2H3M4.5S": 30}
	for s, want := range cases {
		r, err := ParseReset(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := ResetInitializer(r, log, now)(context.Background()); got != want {
			t.Errorf("%s: %d want %d", s, got, want)
		}
	}
	r, _ := ParseReset("by_duration:PT1M")
	if got, _ := ResetInitializer(r, fakeLog{end: 50, atTime: -1}, now)(context.Background()); got != 50 {
		t.Errorf("no record that recent: %d want the log end", got)
	}
	if r, _ := ParseReset("by_duration:P1DT2H3M4.5S"); r.Duration != 26*time.Hour+3*time.Minute+4500*time.Millisecond {
		t.Errorf("duration %v", r.Duration)
	}
	for _, bad := range []string{"", "none", "by_duration:", "by_duration:P", "by_duration:PT", "by_duration:-PT1H",
		"by_duration:PT1S1H", "by_duration:P1.5D", "by_duration:1H", "by_duration:PTH", "by_duration:P1W"} {
		if _, err := ParseReset(bad); err == nil {
			t.Errorf("ParseReset(%q) accepted", bad)
		}
	}
}

func TestFetchAcknowledgesAndAcquiresInOneWrite(t *testing.T) {
	kv := memkv.New()
	ctx := context.Background()
	h := NewHandle(key, testConfig(), fixedInit(0))
	got, ackErr, err := h.Fetch(ctx, kv, "m1", nil, 0, 0, 9, 5, t0)
	if err != nil || ackErr != nil || !reflect.DeepEqual(got, []AcquiredRange{{0, 4, 1}}) {
		t.Fatalf("%v %v %v", got, ackErr, err)
	}
	_, w0 := kv.Counts()
	next, _ := h.NextFetchOffset(ctx, kv, t0)
	got, ackErr, err = h.Fetch(ctx, kv, "m1", ack(0, 4, Accept), next, next, 9, 5, t0)
	if err != nil || ackErr != nil || !reflect.DeepEqual(got, []AcquiredRange{{5, 9, 1}}) {
		t.Fatalf("%v %v %v", got, ackErr, err)
	}
	if _, w1 := kv.Counts(); w1-w0 != 1 {
		t.Fatalf("%d writes for one ShareFetch with acknowledgements", w1-w0)
	}
	// A refused acknowledgement does not stop the acquisition.
	got, ackErr, err = h.Fetch(ctx, kv, "m2", ack(5, 9, Accept), 10, 10, 12, 5, t0)
	if err != nil || code(ackErr) != kerr.InvalidRecordState.Code || !reflect.DeepEqual(got, []AcquiredRange{{10, 12, 1}}) {
		t.Fatalf("%v %v %v", got, ackErr, err)
	}
	if n, err := h.ReleaseMember(ctx, kv, "m1", t0); n != 5 || err != nil {
		t.Fatalf("released %d %v", n, err)
	}
	if err := h.Acknowledge(ctx, kv, "m2", ack(10, 12, Reject), t0); err != nil {
		t.Fatal(err)
	}
}

func TestHandleSweepAndStats(t *testing.T) {
	kv := memkv.New()
	h := NewHandle(key, testConfig(), fixedInit(0))
	if h.Sweep(t0) != 0 || h.Stats() != (Stats{}) {
		t.Fatal("an unloaded handle has state")
	}
	acquire(t, h, kv, "m1", 0, 4, 5, t0)
	if n := h.Sweep(t0.Add(time.Minute)); n != 5 || h.Stats().LockExpiries != 5 || h.Stats().Acquisitions != 5 {
		t.Fatalf("swept %d, stats %+v", n, h.Stats())
	}
}

func TestRowTooLargeIsRefusedWhole(t *testing.T) {
	kv := memkv.New()
	ctx := context.Background()
	cfg := testConfig()
	cfg.MaxLocks = MaxMaxLocks
	h := NewHandle(key, cfg, fixedInit(0))
	// Every record its own range: alternate accepted and held records
	// (accepted ones cannot merge with held neighbours; SPSO stays at 0).
	now := t0
	var off int64
	for i := 0; ; i++ {
		member := fmt.Sprintf("member-%030d", i%200)
		got, _, err := h.Fetch(ctx, kv, member, nil, off, off, off+1, 2, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break // the row is full: Fetch acquired nothing rather than fail
		}
		if err := h.Acknowledge(ctx, kv, member, ack(off+1, off+1, Accept), now); err != nil {
			t.Fatal(err)
		}
		off += 2
		now = now.Add(time.Millisecond)
	}
	if off < 1000 {
		t.Fatalf("row full after only %d records", off)
	}
	row, _, _ := kv.Row(key.kvKey())
	if len(row) > MaxRowBytes {
		t.Fatalf("row of %d bytes written", len(row))
	}
	// The refused acquisition left the cache equal to the row.
	var same bool
	fresh := NewHandle(key, cfg, fixedInit(0))
	h.View(ctx, kv, func(p *Partition) {
		fresh.View(ctx, kv, func(q *Partition) { same = Equal(p, q) })
	})
	if !same {
		t.Fatal("the cache kept a change the KV never got")
	}
	err := h.Update(ctx, kv, func(p *Partition) error {
		p.Acquire("member-x", off, off+5, 5, now)
		return nil
	})
	if !errors.Is(err, ErrRowTooLarge) || code(err) != kerr.UnknownServerError.Code {
		t.Fatalf("got %v", err)
	}
}

func TestFetchFromAStalePositionDoesNotSkipRecords(t *testing.T) {
	kv := memkv.New()
	ctx := context.Background()
	a := NewHandle(key, testConfig(), fixedInit(0))
	if _, _, err := a.Fetch(ctx, kv, "m1", nil, 0, 0, 9, 10, t0); err != nil {
		t.Fatal(err)
	}
	a.Acknowledge(ctx, kv, "m1", ack(0, 9, Accept), t0)
	// An admin rewinds the group to 3 (its members stopped); node a's
	// cache still says the next fetch offset is 10.
	if err := Alter(ctx, kv, map[Key]int64{key: 3}); err != nil {
		t.Fatal(err)
	}
	from, _ := a.NextFetchOffset(ctx, kv, t0)
	got, _, err := a.Fetch(ctx, kv, "m2", nil, from, from, from+4, 10, t0)
	if err != nil || got != nil {
		t.Fatalf("acquired %v (%v) past records the rewind made available", got, err)
	}
	from, _ = a.NextFetchOffset(ctx, kv, t0)
	if got, _, _ := a.Fetch(ctx, kv, "m2", nil, from, from, from+4, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{3, 7, 1}}) {
		t.Fatalf("from %d: %v", from, got)
	}
}
