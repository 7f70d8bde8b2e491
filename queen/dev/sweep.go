package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// sweepLimit bounds the entries one pass examines per kind and partition
// (retired records, aged dedup entries, expired KV rows), so a pass never
// holds the lock long; a pass that hit it runs again at once.
var sweepLimit = 4096

func (b *Broker) sweepLoop(interval time.Duration) {
	defer close(b.sweepDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.sweepStop:
			return
		case <-t.C:
			for i := 0; i < 64 && b.sweep(); i++ {
			}
		}
	}
}

// Sweep runs one background pass now: retention raises log starts of
// queues with retentionEnabled and retentionSeconds ≥ 1 past records older
// than that (offsets are never renumbered; the records are range-deleted),
// expired KV rows are removed, and dedup entries older than their queue's
// window are forgotten.
func (b *Broker) Sweep() { b.sweep() }

// sweep is one pass; it reports whether a limit cut it short.
func (b *Broker) sweep() bool {
	if !b.enter() {
		return false
	}
	defer b.leave()
	now := b.now().UnixMicro()
	more := b.sweepRetention(now)
	more = b.sweepDedup(now) || more
	return b.sweepKV(now) || more
}

// sweepTarget is one partition a pass looks at: what it saw under the lock
// and what it found in the store outside it.
type sweepTarget struct {
	t      *tenant
	q      *queue
	p      *partition
	lso    int64 // p.lso, or p.dedupFloor, when seen
	hwm    int64
	cutoff int64
	// found outside the lock
	next  int64 // new log start or dedup floor
	freed int64 // payload bytes below next (retention)
	dedup []dedupAged
}

// still reports whether the target's partition is the one it saw.
func (s *sweepTarget) still() bool { return s.t.queues[s.q.name] == s.q && s.q.parts[s.p.name] == s.p }

// targets collects, under b.mu, the partitions pick accepts.
func (b *Broker) targets(pick func(q *queue, p *partition) (from, cutoff int64, ok bool)) []*sweepTarget {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*sweepTarget
	for _, t := range b.st.tenants {
		for _, q := range t.queues {
			for _, p := range q.parts {
				if from, cutoff, ok := pick(q, p); ok {
					out = append(out, &sweepTarget{t: t, q: q, p: p, lso: from, hwm: p.hwm, cutoff: cutoff})
				}
			}
		}
	}
	return out
}

// commitSweep applies batch under the lock (build adds to it and returns
// what to change in memory) and waits for it like any request.
func (b *Broker) commitSweep(build func(batch *pebble.Batch) func()) {
	b.mu.Lock()
	batch := b.db.NewBatch()
	after := build(batch)
	pd := b.apply(batch, after)
	b.mu.Unlock()
	if err := pd.wait(); err != nil {
		b.log.Warn("queen-dev: sweep not stored", "err", err)
	}
}

func (b *Broker) sweepRetention(now int64) bool {
	targets := b.targets(func(q *queue, p *partition) (int64, int64, bool) {
		enabled, age := q.opts.retention()
		return p.lso, now - age, enabled && age >= 1e6 && p.lso < p.hwm
	})
	if len(targets) == 0 {
		return false
	}
	more := false
	err := b.withIter(kindBatch, func(it *pebble.Iterator) error {
		var recs []recordView
		for _, s := range targets {
			// Batches are in commit-time order, so the expired ones are a
			// prefix; a batch retires whole (its records share one time),
			// so the log start is always a batch's first offset.
			prefix := keyPrefix(kindBatch, s.q.id, s.p.name)
			s.next = s.lso
			n := 0
			for ok := it.SeekGE(appendOffset(prefix, s.lso)); ok; ok = it.Next() {
				first, in := offsetBelow(it.Key(), prefix, s.hwm)
				if !in {
					break
				}
				if n >= sweepLimit {
					more = true
					break
				}
				v, err := it.ValueAndErr()
				if err != nil {
					return err
				}
				var ts int64
				recs, ts, err = decodeBatch(recs[:0], v)
				if err != nil {
					return fmt.Errorf("records of %q from %d: %w", s.p.name, first, err)
				}
				if ts >= s.cutoff {
					break
				}
				for i := range recs {
					s.freed += int64(len(recs[i].payload))
				}
				s.next = first + int64(len(recs))
				n += len(recs)
			}
			if err := it.Error(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.log.Warn("queen-dev: retention sweep", "err", err)
		return false
	}
	b.commitSweep(func(batch *pebble.Batch) func() {
		var done []*sweepTarget
		for _, s := range targets {
			if s.next <= s.lso || !s.still() || s.p.lso != s.lso {
				continue
			}
			batch.DeleteRange(keyBatch(s.q.id, s.p.name, s.lso), keyBatch(s.q.id, s.p.name, s.next), nil)
			next := *s.p
			next.lso, next.bytes = s.next, next.bytes-s.freed
			batch.Set(keyPart(s.q.id, s.p.name), encodePart(&next), nil)
			done = append(done, s)
		}
		return func() {
			for _, s := range done {
				s.p.lso, s.p.bytes = s.next, s.p.bytes-s.freed
				b.st.mutations++
			}
		}
	})
	return more
}

func (b *Broker) sweepDedup(now int64) bool {
	targets := b.targets(func(q *queue, p *partition) (int64, int64, bool) {
		window := q.opts.dedupWindow()
		cutoff := now - window
		if window <= 0 {
			cutoff = now + 1 // the window is off: every entry is forgotten
		}
		return p.dedupFloor, cutoff, p.dedupFloor < p.hwm
	})
	if len(targets) == 0 {
		return false
	}
	more := false
	err := b.withIter(kindBatchAge, func(it *pebble.Iterator) error {
		for _, s := range targets {
			prefix := keyPrefix(kindBatchAge, s.q.id, s.p.name)
			s.next = s.hwm
			for ok := it.SeekGE(appendOffset(prefix, s.lso)); ok; ok = it.Next() {
				first, in := offsetBelow(it.Key(), prefix, s.hwm)
				if !in {
					break
				}
				if len(s.dedup) >= sweepLimit {
					more = true
					s.next = first
					break
				}
				kept := len(s.dedup)
				var ts int64
				var err error
				s.dedup, ts, err = decodeBatchAge(s.dedup, it.Value(), first)
				if err != nil {
					return fmt.Errorf("dedup entries of %q from %d: %w", s.p.name, first, err)
				}
				if ts >= s.cutoff {
					s.dedup = s.dedup[:kept]
					s.next = first
					break
				}
			}
			if err := it.Error(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.log.Warn("queen-dev: dedup sweep", "err", err)
		return false
	}
	b.commitSweep(func(batch *pebble.Batch) func() {
		var done []*sweepTarget
		for _, s := range targets {
			if s.next <= s.lso || !s.still() {
				continue
			}
			for i := range s.dedup {
				// Only a key still naming this batch's records: a newer
				// record with the same transactionId replaced it.
				s.dedup[i].forget(b.db, batch, s.q.id, s.p.name)
			}
			batch.DeleteRange(keyBatchAge(s.q.id, s.p.name, s.lso), keyBatchAge(s.q.id, s.p.name, s.next), nil)
			done = append(done, s)
		}
		return func() {
			for _, s := range done {
				s.p.dedupFloor = s.next
				s.p.runTops = nil // a run it forgot may be a stem's last
			}
		}
	})
	return more
}

func (b *Broker) sweepKV(now int64) bool {
	type expired struct {
		key, row []byte
		expires  int64
	}
	var found []expired
	upper := binary.BigEndian.AppendUint64([]byte{kindKVExpiry}, uint64(now)+1)
	more := false
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindKVExpiry}, UpperBound: upper})
	if err != nil {
		b.log.Warn("queen-dev: kv sweep", "err", err)
		return false
	}
	for ok := it.First(); ok; ok = it.Next() {
		if len(found) == sweepLimit {
			more = true
			break
		}
		k := it.Key()
		rest := k[9:]
		tn, rest, err1 := readLP(rest)
		ns, key, err2 := readLP(rest)
		if err := errors.Join(err1, err2); err != nil {
			continue
		}
		found = append(found, expired{key: append([]byte(nil), k...), row: keyKV(tn, ns, string(key)), expires: int64(binary.BigEndian.Uint64(k[1:9]))})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		b.log.Warn("queen-dev: kv sweep", "err", err)
		return false
	}
	if len(found) == 0 {
		return false
	}
	b.commitSweep(func(batch *pebble.Batch) func() {
		for _, f := range found {
			batch.Delete(f.key, nil)
			v, closer, err := b.db.Get(f.row)
			if err != nil {
				continue
			}
			row, err := decodeKV(v)
			closer.Close()
			if err == nil && row.expires == f.expires && !row.live(now) {
				batch.Delete(f.row, nil)
			}
		}
		return nil
	})
	return more
}

// withIter runs fn with an iterator over one kind's keys.
func (b *Broker) withIter(kind byte, fn func(it *pebble.Iterator) error) error {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
	if err != nil {
		return err
	}
	return errors.Join(fn(it), it.Close())
}
