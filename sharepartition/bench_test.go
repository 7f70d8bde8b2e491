package sharepartition

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
)

// BenchmarkAcquireAck is the state machine alone: a member acquires a
// batch and accepts it in one acknowledgement batch, SPSO moving along.
func BenchmarkAcquireAck(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			p := New(DefaultConfig(), 0)
			now := t0
			b.ReportAllocs()
			var off int64
			for b.Loop() {
				got := p.Acquire("m1", off, off+int64(batch)-1, batch, now)
				if err := p.Acknowledge("m1", ack(got[0].First, got[len(got)-1].Last, Accept), now); err != nil {
					b.Fatal(err)
				}
				off += int64(batch)
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkAcquireAckKV adds the row: one compare-and-set put for the
// ShareFetch that acquires and one for the ShareAcknowledge, with three
// members' acquisitions in flight. kvwrites/record is the KV cost of an
// acknowledged record.
func BenchmarkAcquireAckKV(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			kv := memkv.New()
			h := NewHandle(key, DefaultConfig(), fixedInit(0))
			ctx := context.Background()
			members := []string{"m1", "m2", "m3"}
			var next int64
			records := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				m := members[i%3]
				var got []AcquiredRange
				if err := h.Update(ctx, kv, func(p *Partition) error {
					got = p.Acquire(m, next, next+int64(batch)-1, batch, t0)
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				next = got[len(got)-1].Last + 1
				if i < 2 {
					continue // keep two other acquisitions in flight
				}
				// Accept the acquisition made two requests ago.
				first := next - 3*int64(batch)
				if err := acknowledge(h, kv, members[(i-2)%3], ack(first, first+int64(batch)-1, Accept), t0); err != nil {
					b.Fatal(err)
				}
				records += batch
			}
			_, writes := kv.Counts()
			b.ReportMetric(float64(writes)/float64(max(records, 1)), "kvwrites/record")
		})
	}
}

// BenchmarkEncodedBytes is the row's size for a full default window
// (2,000 records) acquired by fetches of 50 records among five members,
// with one acquisition in ten acknowledged out of order and one record in
// fifty released.
func BenchmarkEncodedBytes(b *testing.B) {
	p := New(DefaultConfig(), 1_000_000)
	now := t0
	for i := 0; p.InFlight() < DefaultMaxLocks; i++ {
		m := fmt.Sprintf("member-%022d", i%5)
		got := p.Acquire(m, p.SPEO()+1, p.SPEO()+50, 50, now.Add(time.Duration(i)*time.Millisecond))
		if len(got) == 0 {
			break
		}
		first := got[0].First
		if i%10 == 3 {
			p.Acknowledge(m, ack(first, first+49, Accept), now)
		} else if i%2 == 0 {
			p.Acknowledge(m, ack(first+7, first+7, Release), now)
		}
	}
	var n int
	b.ReportAllocs()
	for b.Loop() {
		n = len(p.Encode())
	}
	b.ReportMetric(float64(n), "bytes/window")
	b.ReportMetric(float64(n)/float64(p.InFlight()), "bytes/record")
}
