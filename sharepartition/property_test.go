package sharepartition

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
)

// model is the share-partition as the issue states it, record by record,
// with none of Partition's machinery: what every interleaving is checked
// against.
type model struct {
	cfg        Config
	spso, speo int64
	recs       map[int64]*mrec
	accepted   map[int64]int // times a record was accepted
	archived   map[int64]bool
}

type mrec struct {
	state    RecordState
	count    int16
	holder   string
	deadline int64
}

func newModel(cfg Config, spso int64) *model {
	return &model{cfg: cfg, spso: spso, speo: spso - 1, recs: map[int64]*mrec{}, accepted: map[int64]int{}, archived: map[int64]bool{}}
}

func (m *model) finish(off int64, r *mrec) {
	r.holder, r.deadline = "", 0
	if int(r.count) >= m.cfg.DeliveryLimit {
		m.archive(off, r)
	} else {
		r.state = Available
	}
}

func (m *model) archive(off int64, r *mrec) {
	r.state = Archived
	m.archived[off] = true
}

func (m *model) expire(now int64) {
	for off := m.spso; off <= m.speo; off++ {
		if r := m.recs[off]; r.state == Acquired && r.deadline <= now {
			m.finish(off, r)
		}
	}
	m.settle()
}

func (m *model) settle() {
	for m.spso <= m.speo && (m.recs[m.spso].state == Acknowledged || m.recs[m.spso].state == Archived) {
		delete(m.recs, m.spso)
		m.spso++
	}
}

func (m *model) acquire(member string, first, last int64, max int, now int64) []AcquiredRange {
	m.expire(now)
	var out []AcquiredRange
	n := 0
	for off := first; off <= last && n < max; off++ {
		if off < m.spso {
			continue
		}
		var r *mrec
		switch {
		case off <= m.speo:
			r = m.recs[off]
			if r.state != Available {
				continue
			}
			if int(r.count) >= m.cfg.DeliveryLimit {
				m.archive(off, r)
				continue
			}
		case off == m.speo+1 && off < m.spso+int64(m.cfg.MaxLocks):
			r = &mrec{}
			m.recs[off] = r
			m.speo = off
		default:
			off = last // nothing past here may be acquired
			continue
		}
		if r.holder != "" {
			panic(fmt.Sprintf("model: offset %d handed out while %s holds it", off, r.holder))
		}
		lastAttempt := m.cfg.DeliveryLimit > 2 && int(r.count) == m.cfg.DeliveryLimit-1
		if lastAttempt && n > 0 {
			break
		}
		r.state, r.holder, r.deadline = Acquired, member, now+m.cfg.LockDuration.Milliseconds()
		r.count++
		n++
		if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == r.count {
			out[k].Last = off
		} else {
			out = append(out, AcquiredRange{off, off, r.count})
		}
		if lastAttempt {
			break
		}
	}
	m.settle()
	return out
}

// ack applies one single-type batch; ok is whether Kafka accepts it.
func (m *model) ack(member string, first, last int64, t AckType, now int64) (ok bool) {
	m.expire(now)
	if last < m.spso {
		return true
	}
	for off := max(first, m.spso); off <= last; off++ {
		r, in := m.recs[off]
		if !in || r.state != Acquired || r.holder != member {
			return false
		}
	}
	for off := max(first, m.spso); off <= last; off++ {
		r := m.recs[off]
		switch t {
		case Accept:
			r.state, r.holder, r.deadline = Acknowledged, "", 0
			m.accepted[off]++
		case Release:
			m.finish(off, r)
		default:
			r.holder, r.deadline = "", 0
			m.archive(off, r)
		}
	}
	m.settle()
	return true
}

func (m *model) releaseMember(member string, now int64) {
	m.expire(now)
	for off := m.spso; off <= m.speo; off++ {
		if r := m.recs[off]; r.state == Acquired && r.holder == member {
			m.finish(off, r)
		}
	}
	m.settle()
}

// sameAs fails unless p holds exactly the model's records.
func (m *model) sameAs(p *Partition) error {
	if p.SPSO() != m.spso || p.SPEO() != m.speo {
		return fmt.Errorf("spso/speo %d/%d, model %d/%d", p.SPSO(), p.SPEO(), m.spso, m.speo)
	}
	for off := m.spso; off <= m.speo; off++ {
		r := m.recs[off]
		st, c, h, _ := p.State(off)
		if st != r.state || c != r.count || h != r.holder {
			return fmt.Errorf("offset %d: %v/%d/%q, model %v/%d/%q", off, st, c, h, r.state, r.count, r.holder)
		}
	}
	return nil
}

// TestPropertyAgainstModel drives random interleavings of acquire,
// accept, release, reject, lock expiry, member loss and node restarts
// through two or three nodes' handles on one KV, and checks every step
// against the model: the same records acquired with the same delivery
// counts (the model refuses to hand out a locked record), the same
// acknowledgements refused, SPSO never moving back, a reloaded state equal
// to the one before. Then consumers keep acknowledging until the log is
// consumed: every record ends accepted exactly once or archived, never
// both.
func TestPropertyAgainstModel(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		if err := runProperty(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runProperty(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ctx := context.Background()
	cfg := Config{LockDuration: 10 * time.Second, DeliveryLimit: 2 + rng.IntN(4), MaxLocks: 5 + rng.IntN(40)}
	start := int64(rng.IntN(100))
	logEnd := start + 50 + int64(rng.IntN(200))
	kv := memkv.New()
	nodes := make([]*Handle, 2+rng.IntN(2))
	for i := range nodes {
		nodes[i] = NewHandle(key, cfg, fixedInit(start))
	}
	m := newModel(cfg, start)
	members := []string{"m1", "m2", "m3"}
	now := t0
	lastSPSO := start
	step := func(desc string) error {
		// The row is the truth; a node's cache may lag it until its next write.
		h := NewHandle(key, cfg, fixedInit(0))
		var err error
		m.expire(now.UnixMilli())
		h.View(ctx, kv, func(p *Partition) {
			p.Sweep(now)
			if e := m.sameAs(p); e != nil {
				err = fmt.Errorf("after %s: %v", desc, e)
			}
			if p.SPSO() < lastSPSO {
				err = fmt.Errorf("after %s: spso moved back %d -> %d", desc, lastSPSO, p.SPSO())
			}
			lastSPSO = p.SPSO()
		})
		return err
	}
	lastWriter := 0 // whose cache is the row, as of its last write
	for i := range 400 {
		hi := rng.IntN(len(nodes))
		h := nodes[hi]
		writes := h.Writes()
		member := members[rng.IntN(len(members))]
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		if rng.IntN(40) == 0 {
			now = now.Add(cfg.LockDuration) // every lock held now expires
		}
		var desc string
		switch op := rng.IntN(10); {
		case op < 4:
			first := m.spso - 3 + int64(rng.IntN(int(m.speo-m.spso)+5))
			first = max(min(first, m.speo+1), 0)
			last := min(first+int64(rng.IntN(20)), logEnd-1)
			n := 1 + rng.IntN(15)
			desc = fmt.Sprintf("%d: acquire %s %d..%d max %d", i, member, first, last, n)
			var got []AcquiredRange
			if err := h.Update(ctx, kv, func(p *Partition) error {
				got = p.Acquire(member, first, last, n, now)
				return nil
			}); err != nil {
				return fmt.Errorf("%s: %v", desc, err)
			}
			want := m.acquire(member, first, last, n, now.UnixMilli())
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s: got %v, model %v", desc, got, want)
			}
		case op < 8:
			first := max(m.spso-2+int64(rng.IntN(int(m.speo-m.spso)+4)), 0)
			last := first + int64(rng.IntN(6))
			typ := []AckType{Accept, Accept, Release, Reject}[rng.IntN(4)]
			desc = fmt.Sprintf("%d: ack %s %d..%d type %d", i, member, first, last, typ)
			err := acknowledge(h, kv, member, ack(first, last, typ), now)
			if ok := m.ack(member, first, last, typ, now.UnixMilli()); ok != (err == nil) {
				return fmt.Errorf("%s: got %v, model accepts %v", desc, err, ok)
			}
		case op == 8:
			desc = fmt.Sprintf("%d: %s leaves", i, member)
			if err := h.Update(ctx, kv, func(p *Partition) error {
				p.ReleaseMember(member, now)
				return nil
			}); err != nil {
				return fmt.Errorf("%s: %v", desc, err)
			}
			m.releaseMember(member, now.UnixMilli())
		default:
			k := rng.IntN(len(nodes))
			desc = fmt.Sprintf("%d: node %d restarts", i, k)
			var before *Partition
			nodes[lastWriter].View(ctx, kv, func(p *Partition) { p.Sweep(now); before = p.Clone() })
			nodes[k] = NewHandle(key, cfg, fixedInit(0))
			hi, lastWriter = k, k
			var same bool
			nodes[k].View(ctx, kv, func(p *Partition) { p.Sweep(now); same = Equal(before, p) })
			if !same {
				return fmt.Errorf("%s: reloaded state differs", desc)
			}
		}
		if nodes[hi].Writes() != writes {
			lastWriter = hi
		}
		if err := step(desc); err != nil {
			return err
		}
	}
	// Consumers keep acknowledging: one in ten released once more.
	for round := 0; m.spso < logEnd; round++ {
		if round > 10*int(logEnd) {
			return fmt.Errorf("log not consumed: spso %d of %d", m.spso, logEnd)
		}
		now = now.Add(cfg.LockDuration) // what the first phase left locked expires
		member := members[round%len(members)]
		h := nodes[round%len(nodes)]
		var next int64
		h.View(ctx, kv, func(p *Partition) { next = p.NextFetchOffset(now) })
		var got []AcquiredRange
		if err := h.Update(ctx, kv, func(p *Partition) error {
			got = p.Acquire(member, next, logEnd-1, 10, now)
			return nil
		}); err != nil {
			return err
		}
		if want := m.acquire(member, next, logEnd-1, 10, now.UnixMilli()); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("drain: got %v, model %v", got, want)
		}
		for _, r := range got {
			typ := Accept
			if rng.IntN(10) == 0 {
				typ = Release
			}
			if err := acknowledge(h, kv, member, ack(r.First, r.Last, typ), now); err != nil {
				return fmt.Errorf("drain ack %v: %v", r, err)
			}
			m.ack(member, r.First, r.Last, typ, now.UnixMilli())
		}
		if err := step("drain"); err != nil {
			return err
		}
	}
	for off := start; off < logEnd; off++ {
		a, z := m.accepted[off], m.archived[off]
		if a > 1 || (a == 1) == z {
			return fmt.Errorf("offset %d accepted %d times, archived %v", off, a, z)
		}
	}
	return nil
}
