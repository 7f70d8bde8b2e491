package dev

import (
	"fmt"
)

// op is one state change. Every mutation goes through an op's apply, both
// live (under Broker.mu, right before the op is handed to the WAL) and on
// replay, so the log can never describe a state the live path did not reach.
// Ops record outcomes (offsets, versions, timestamps), never requests, so
// replay needs no clock and no decisions.
type op interface {
	apply(s *state) error
	encode(e *encoder)
}

// Op kinds on disk. Never renumber: old logs must keep replaying.
const (
	kindQueueSet    = 1
	kindQueueDelete = 2
	kindRecords     = 3
	kindKVSet       = 4
	kindKVSeq       = 5
	kindLogStart    = 6
)

// opQueueSet creates a queue (a new id means a new queue) or sets its options.
type opQueueSet struct {
	tenant, name, id string
	created          int64
	opts             queueOptions
}

func (o *opQueueSet) apply(s *state) error {
	t := s.tenant(o.tenant)
	q := t.queues[o.name]
	if q == nil || q.id != o.id {
		if q != nil {
			dropQueueWaiters(q)
		}
		q = &queue{name: o.name, id: o.id, created: o.created, parts: map[string]*partition{}, waiters: map[string]map[*waiter]struct{}{}}
		t.queues[o.name] = q
	}
	q.opts = o.opts
	s.mutations++
	return nil
}

type opQueueDelete struct{ tenant, name string }

func (o *opQueueDelete) apply(s *state) error {
	t := s.tenant(o.tenant)
	if q := t.queues[o.name]; q != nil {
		delete(t.queues, o.name)
		dropQueueWaiters(q)
	}
	s.mutations++
	return nil
}

// dropQueueWaiters wakes every fetch parked on q so that it re-reads and
// finds the queue gone.
func dropQueueWaiters(q *queue) {
	for _, ws := range q.waiters {
		wakeAll(ws)
	}
	for _, p := range q.parts {
		wakeAll(p.waiters)
	}
}

// opRecords appends records stored by one request to one partition, at
// offsets base, base+1, … and with one commit time.
type opRecords struct {
	tenant, queue, part string
	base                int64
	ts                  int64
	recs                []record
}

func (o *opRecords) apply(s *state) error {
	q := s.tenant(o.tenant).queues[o.queue]
	if q == nil {
		return fmt.Errorf("records for missing queue %q", o.queue)
	}
	p := q.parts[o.part]
	if p == nil {
		p = &partition{name: o.part, base: o.base, lso: o.base, waiters: map[*waiter]struct{}{}}
		q.parts[o.part] = p
		wakeAll(q.waiters[o.part])
		delete(q.waiters, o.part) // they register on p when they read again
	}
	if p.hwm() != o.base {
		return fmt.Errorf("records for %s/%s at %d, log ends at %d", o.queue, o.part, o.base, p.hwm())
	}
	p.recs = append(p.recs, o.recs...)
	if o.ts > p.lastTS {
		p.lastTS = o.ts
	}
	for i := range o.recs {
		r := &o.recs[i]
		p.bytes += int64(len(r.payload))
		if r.txID == "" {
			continue
		}
		if p.dedup == nil {
			p.dedup = map[string]dedupEntry{}
		}
		// The newest record wins: a transactionId is stored again only once
		// its previous record left the dedup window.
		p.dedup[r.txID] = dedupEntry{offset: o.base + int64(i), ts: o.ts, msgID: r.msgID}
	}
	wakeAll(p.waiters)
	s.mutations++
	return nil
}

// opKVSet stores row under (tenant, ns, key); a nil row deletes the key.
type opKVSet struct {
	tenant, ns, key string
	row             *kvRow
}

func (o *opKVSet) apply(s *state) error {
	sp := s.tenant(o.tenant).space(o.ns)
	sp.set(o.key, o.row)
	if o.row != nil && o.row.version > s.kvSeq {
		s.kvSeq = o.row.version
	}
	s.mutations++
	return nil
}

// opKVSeq persists the version sequence, so a version is never reissued
// after a restart even when the row that carried it is gone.
type opKVSeq struct{ seq int64 }

func (o *opKVSeq) apply(s *state) error {
	if o.seq > s.kvSeq {
		s.kvSeq = o.seq
	}
	return nil
}

// opLogStart raises a partition's log start (retention); offsets below it
// are forgotten, never renumbered.
type opLogStart struct {
	tenant, queue, part string
	lso                 int64
}

func (o *opLogStart) apply(s *state) error {
	q := s.tenant(o.tenant).queues[o.queue]
	if q == nil {
		return nil
	}
	p := q.parts[o.part]
	if p == nil || o.lso <= p.lso {
		return nil
	}
	if o.lso > p.hwm() {
		return fmt.Errorf("log start %d beyond end %d of %s/%s", o.lso, p.hwm(), o.queue, o.part)
	}
	for off := p.lso; off < o.lso; off++ {
		p.bytes -= int64(len(p.at(off).payload))
	}
	p.lso = o.lso
	// Always copy: a fetch may be rendering a slice of the old array outside
	// the lock, and the old array's dead payloads become collectable.
	p.recs = append([]record(nil), p.recs[p.lso-p.base:]...)
	p.base = p.lso
	s.mutations++
	return nil
}
