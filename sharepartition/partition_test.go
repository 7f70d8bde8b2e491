package sharepartition

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.UnixMilli(1_800_000_000_000)

func testConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryLimit: 3, MaxLocks: 100}
}

func one(t AckType) []AckType { return []AckType{t} }

func ack(first, last int64, t AckType) []AckBatch {
	return []AckBatch{{First: first, Last: last, Types: one(t)}}
}

func code(err error) int16 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func wantState(t *testing.T, p *Partition, off int64, st RecordState, count int16, member string) {
	t.Helper()
	gs, gc, gm, ok := p.State(off)
	if !ok || gs != st || gc != count || gm != member {
		t.Fatalf("offset %d: got %v count %d member %q (in flight %v), want %v count %d member %q", off, gs, gc, gm, ok, st, count, member)
	}
}

// The scenarios below follow Kafka's SharePartitionTest, in our words.
func TestAcquireNewRecords(t *testing.T) {
	p := New(testConfig(), 10)
	got := p.Acquire("m1", 10, 14, 500, t0)
	if want := []AcquiredRange{{10, 14, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v want %v", got, want)
	}
	if p.SPSO() != 10 || p.SPEO() != 14 || p.NextFetchOffset(t0) != 15 {
		t.Fatalf("spso %d speo %d next %d", p.SPSO(), p.SPEO(), p.NextFetchOffset(t0))
	}
	wantState(t, p, 12, Acquired, 1, "m1")
	if again := p.Acquire("m2", 10, 14, 500, t0); again != nil {
		t.Fatalf("acquired records another member holds: %v", again)
	}
}

func TestAcquireMaxRecordsAndWindow(t *testing.T) {
	p := New(testConfig(), 0)
	if got := p.Acquire("m1", 0, 9, 4, t0); !reflect.DeepEqual(got, []AcquiredRange{{0, 3, 1}}) {
		t.Fatalf("max records: %v", got)
	}
	// The window holds MaxLocks (100) offsets from SPSO, whatever their state.
	got := p.Acquire("m2", 4, 500, 1000, t0)
	if !reflect.DeepEqual(got, []AcquiredRange{{4, 99, 1}}) || p.CanAcquire(t0) {
		t.Fatalf("window: %v can acquire %v", got, p.CanAcquire(t0))
	}
	// Accepting the head moves SPSO and opens the window by as much.
	if err := p.Acknowledge("m1", ack(0, 3, Accept), t0); err != nil {
		t.Fatal(err)
	}
	if got := p.Acquire("m1", 100, 500, 1000, t0); !reflect.DeepEqual(got, []AcquiredRange{{100, 103, 1}}) {
		t.Fatalf("after the window moved: %v", got)
	}
}

func TestAcceptMovesSPSOOnlyPastContiguousPrefix(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 9, 10, t0)
	if err := p.Acknowledge("m1", ack(3, 5, Accept), t0); err != nil {
		t.Fatal(err)
	}
	if p.SPSO() != 0 {
		t.Fatalf("spso moved past unacknowledged records: %d", p.SPSO())
	}
	if err := p.Acknowledge("m1", ack(0, 2, Reject), t0); err != nil {
		t.Fatal(err)
	}
	if p.SPSO() != 6 || p.SPEO() != 9 {
		t.Fatalf("spso %d speo %d, want 6 9", p.SPSO(), p.SPEO())
	}
	if err := p.Acknowledge("m1", ack(6, 9, Accept), t0); err != nil {
		t.Fatal(err)
	}
	if p.SPSO() != 10 || p.InFlight() != 0 || p.NextFetchOffset(t0) != 10 {
		t.Fatalf("all done: spso %d in flight %d", p.SPSO(), p.InFlight())
	}
}

func TestReleaseRedeliversAtOnceWithCountKept(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 4, 10, t0)
	if err := p.Acknowledge("m1", ack(1, 2, Release), t0); err != nil {
		t.Fatal(err)
	}
	wantState(t, p, 1, Available, 1, "")
	if p.NextFetchOffset(t0) != 1 {
		t.Fatalf("next fetch %d", p.NextFetchOffset(t0))
	}
	got := p.Acquire("m2", 0, 7, 10, t0)
	if want := []AcquiredRange{{1, 2, 2}, {5, 7, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reacquired %v want %v", got, want)
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	p := New(testConfig(), 0) // limit 3
	now := t0
	for i := 1; i <= 3; i++ {
		got := p.Acquire("m1", 0, 0, 1, now)
		if !reflect.DeepEqual(got, []AcquiredRange{{0, 0, int16(i)}}) {
			t.Fatalf("delivery %d: %v", i, got)
		}
		if i < 3 {
			if err := p.Acknowledge("m1", ack(0, 0, Release), now); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The third delivery's lock expires: the limit is reached, so the
	// record is archived rather than made available.
	now = now.Add(31 * time.Second)
	if n := p.Sweep(now); n != 1 {
		t.Fatalf("expired %d", n)
	}
	if p.SPSO() != 1 || p.InFlight() != 0 {
		t.Fatalf("archived record still in flight: spso %d", p.SPSO())
	}
	if s := p.Stats(); s.Archived != 1 || s.LockExpiries != 1 || s.Deliveries[3] != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLockExpiryMakesAvailableAndRefusesLateAck(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 4, 10, t0)
	late := t0.Add(30 * time.Second) // the deadline itself is expired
	err := p.Acknowledge("m1", ack(0, 4, Accept), late)
	if code(err) != kerr.InvalidRecordState.Code {
		t.Fatalf("late ack: %v", err)
	}
	wantState(t, p, 0, Available, 1, "")
	if got := p.Acquire("m2", 0, 4, 10, late); !reflect.DeepEqual(got, []AcquiredRange{{0, 4, 2}}) {
		t.Fatalf("reacquired %v", got)
	}
}

func TestAcknowledgeRefusals(t *testing.T) {
	cases := []struct {
		name    string
		member  string
		batches []AckBatch
		code    int16
	}{
		{"another member's records", "m2", ack(0, 1, Accept), kerr.InvalidRecordState.Code},
		{"first after last", "m1", ack(3, 2, Accept), kerr.InvalidRequest.Code},
		{"types neither one nor per offset", "m1", []AckBatch{{0, 2, []AckType{1, 1}}}, kerr.InvalidRequest.Code},
		{"unknown type", "m1", ack(0, 0, 5), kerr.InvalidRequest.Code},
		{"overlapping batches", "m1", []AckBatch{{0, 2, one(Accept)}, {2, 3, one(Accept)}}, kerr.InvalidRequest.Code},
		{"out of order batches", "m1", []AckBatch{{3, 3, one(Accept)}, {0, 1, one(Accept)}}, kerr.InvalidRequest.Code},
		{"past the window", "m1", ack(10, 12, Accept), kerr.InvalidRequest.Code},
		{"straddling the window's end", "m1", ack(4, 12, Accept), kerr.InvalidRequest.Code},
		{"a record already accepted", "m1", ack(8, 8, Accept), kerr.InvalidRecordState.Code},
		{"valid batch then a bad one", "m1", []AckBatch{{0, 1, one(Accept)}, {6, 6, one(Accept)}}, kerr.InvalidRecordState.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig(), 0)
			p.Acquire("m1", 0, 5, 10, t0)
			p.Acquire("m2", 6, 6, 10, t0)
			p.Acquire("m1", 7, 9, 10, t0)
			if err := p.Acknowledge("m1", ack(8, 8, Accept), t0); err != nil {
				t.Fatal(err)
			}
			before := p.Clone()
			gen := p.Generation()
			if got := code(p.Acknowledge(c.member, c.batches, t0)); got != c.code {
				t.Fatalf("code %d want %d", got, c.code)
			}
			if !Equal(before, p) || p.Generation() != gen {
				t.Fatal("a refused acknowledgement changed the state")
			}
		})
	}
}

func TestAcknowledgePerOffsetTypesAndGaps(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 4, 10, t0)
	err := p.Acknowledge("m1", []AckBatch{{0, 4, []AckType{Accept, Gap, Release, Reject, Accept}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, p, 2, Available, 1, "")
	wantState(t, p, 3, Archived, 1, "")
	wantState(t, p, 4, Acknowledged, 1, "")
	if p.SPSO() != 2 {
		t.Fatalf("spso %d: accepted and gap records are both done", p.SPSO())
	}
}

func TestAcknowledgeBelowSPSOIsSkipped(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 4, 10, t0)
	if err := p.Acknowledge("m1", ack(0, 2, Accept), t0); err != nil {
		t.Fatal(err)
	}
	gen := p.Generation()
	if err := p.Acknowledge("m1", ack(0, 2, Accept), t0); err != nil {
		t.Fatalf("batch wholly below SPSO: %v", err)
	}
	if p.Generation() != gen {
		t.Fatal("a skipped batch changed the state")
	}
	// A batch straddling SPSO acknowledges the part above it.
	if err := p.Acknowledge("m1", ack(1, 4, Accept), t0); err != nil || p.SPSO() != 5 {
		t.Fatalf("straddling batch: %v spso %d", err, p.SPSO())
	}
}

func TestReleaseMember(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 2, 10, t0)
	p.Acquire("m2", 3, 5, 10, t0)
	if n := p.ReleaseMember("m1", t0); n != 3 {
		t.Fatalf("released %d", n)
	}
	wantState(t, p, 0, Available, 1, "")
	wantState(t, p, 3, Acquired, 1, "m2")
	if got := p.Acquire("m2", 0, 5, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{0, 2, 2}}) {
		t.Fatalf("reacquired %v", got)
	}
}

func TestAcquireSkipsOffsetsTheLogLacks(t *testing.T) {
	p := New(testConfig(), 0)
	// Nothing in flight and the log starts at 7: SPSO follows.
	if got := p.Acquire("m1", 7, 8, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{7, 8, 1}}) || p.SPSO() != 7 {
		t.Fatalf("acquired %v spso %d", got, p.SPSO())
	}
	// Records in flight and the read starts past SPEO+1: the hole is archived.
	if got := p.Acquire("m1", 12, 13, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{12, 13, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	wantState(t, p, 10, Archived, 0, "")
	if err := p.Acknowledge("m1", ack(7, 8, Accept), t0); err != nil || p.SPSO() != 12 {
		t.Fatalf("ack: %v spso %d", err, p.SPSO())
	}
}

func TestAdvanceLogStart(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", 0, 5, 10, t0)
	p.Acknowledge("m1", ack(0, 1, Release), t0)
	p.AdvanceLogStart(3, t0)
	// 0 and 1 were available: archived; 2 is held, so SPSO waits for it.
	if p.SPSO() != 2 || p.Stats().Archived != 2 {
		t.Fatalf("spso %d", p.SPSO())
	}
	p.Acknowledge("m1", ack(2, 5, Accept), t0)
	p.AdvanceLogStart(50, t0)
	if p.SPSO() != 50 || p.InFlight() != 0 {
		t.Fatalf("empty window follows the log start: %d", p.SPSO())
	}
}

func TestLoweredDeliveryLimitArchivesAtAcquire(t *testing.T) {
	cfg := testConfig()
	cfg.DeliveryLimit = 5
	p := New(cfg, 0)
	for range 3 {
		p.Acquire("m1", 0, 0, 1, t0)
		p.Acknowledge("m1", ack(0, 0, Release), t0)
	}
	cfg.DeliveryLimit = 2
	p.SetConfig(cfg)
	if got := p.Acquire("m1", 0, 1, 5, t0); !reflect.DeepEqual(got, []AcquiredRange{{1, 1, 1}}) || p.SPSO() != 1 {
		t.Fatalf("acquired %v spso %d", got, p.SPSO())
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{LockDuration: 0, DeliveryLimit: 5, MaxLocks: 2000},
		{LockDuration: time.Second, DeliveryLimit: 1, MaxLocks: 2000},
		{LockDuration: time.Second, DeliveryLimit: 11, MaxLocks: 2000},
		{LockDuration: time.Second, DeliveryLimit: 5, MaxLocks: 10001},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestAcknowledgeNothingInFlight(t *testing.T) {
	p := New(testConfig(), 5)
	if got := code(p.Acknowledge("m1", ack(5, 6, Accept), t0)); got != kerr.InvalidRecordState.Code {
		t.Fatalf("code %d", got)
	}
}

func TestLastAttemptDeliveredAlone(t *testing.T) {
	cfg := testConfig()
	cfg.DeliveryLimit = 4
	p := New(cfg, 0)
	p.Acquire("m1", 0, 5, 10, t0)
	for range 2 { // records 2 and 3 reach three deliveries
		p.Acknowledge("m1", ack(2, 3, Release), t0)
		p.Acquire("m1", 2, 3, 10, t0)
	}
	p.Acknowledge("m1", []AckBatch{{0, 5, []AckType{Release, Release, Release, Release, Release, Release}}}, t0)
	// 0..1 are on their second delivery; 2 is on its last: the fetch stops
	// before it, and the next one hands it out alone.
	if got := p.Acquire("m1", 0, 5, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{0, 1, 2}}) {
		t.Fatalf("first fetch %v", got)
	}
	if got := p.Acquire("m2", 0, 5, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{2, 2, 4}}) {
		t.Fatalf("second fetch %v", got)
	}
	if got := p.Acquire("m2", 0, 5, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{3, 3, 4}}) {
		t.Fatalf("third fetch %v", got)
	}
	if got := p.Acquire("m2", 0, 5, 10, t0); !reflect.DeepEqual(got, []AcquiredRange{{4, 5, 2}}) {
		t.Fatalf("fourth fetch %v", got)
	}
}

// TestRenew: a RENEW acknowledgement (KIP-1222) restarts the lock of a
// record its member holds, keeps it acquired with its delivery count, and
// survives the encoding; renewing what one does not hold is
// INVALID_RECORD_STATE, and a type past RENEW INVALID_REQUEST.
func TestRenew(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m", 0, 1, 10, t0)
	if err := p.Acknowledge("m", ack(0, 0, Renew), t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	q, err := Decode(p.Encode(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Partition{p, q} {
		x.Sweep(t0.Add(31 * time.Second))
		wantState(t, x, 0, Acquired, 1, "m")
		wantState(t, x, 1, Available, 1, "")
		x.Sweep(t0.Add(51 * time.Second))
		wantState(t, x, 0, Available, 1, "")
	}
	p.Acquire("m", 0, 0, 10, t0.Add(60*time.Second))
	if c := code(p.Acknowledge("other", ack(0, 0, Renew), t0.Add(61*time.Second))); c != kerr.InvalidRecordState.Code {
		t.Fatalf("renewing another's record: %d", c)
	}
	if c := code(p.Acknowledge("m", ack(0, 0, Renew+1), t0.Add(61*time.Second))); c != kerr.InvalidRequest.Code {
		t.Fatalf("type 5: %d", c)
	}
}
