package dev

import (
	"context"
	"time"
)

// record is one record a push stores (as planned, before it is written).
type record struct {
	payload []byte // JSON exactly as pushed
	msgID   string
	txID    string // the dedup key the client sent; "" means msgID
	ts      int64  // commit time, unix microseconds
}

// partition is the in-memory metadata of one (queue, partition) log; its
// records live in the store. Records below lso have been retired by
// retention (lso ≤ hwm). The fields but waiters and dedupFloor are also
// stored (kind p), in the same batch as every change to them.
type partition struct {
	name    string
	hwm     int64 // next offset
	lso     int64
	bytes   int64 // payload bytes of retained records
	lastTS  int64
	waiters map[*waiter]struct{} // parked fetches naming this partition
	// dedupFloor is the lowest offset whose dedup-age entry the sweep may
	// still find (memory only: after a boot the sweep starts at 0 once).
	dedupFloor int64
	// runTops is, per transactionId stem, the last dedup run stored here
	// (dedup.go): a push whose numbers come after it (a producer's next
	// records) is known new without reading the store. Memory only, under
	// Broker.mu; a stem missing is looked up.
	runTops map[string]runTop
}

type dedupEntry struct {
	offset int64
	ts     int64
	msgID  string
}

type queue struct {
	name    string
	id      string
	created int64 // unix milliseconds
	opts    queueOptions
	parts   map[string]*partition
	// waiters are parked fetches naming a partition of this queue that does
	// not exist yet, by the partition's name: they are woken when it is
	// created (or the queue is deleted). Keyed by name, a write that creates
	// one partition wakes the fetches that named it, not every fetch parked
	// on a partition of the queue not written yet: a consumer of 10,000
	// mostly unwritten partitions would otherwise re-read all of them at
	// every first write to any.
	waiters map[string]map[*waiter]struct{}
}

func newQueue(name, id string, created int64, opts queueOptions) *queue {
	return &queue{name: name, id: id, created: created, opts: opts, parts: map[string]*partition{}, waiters: map[string]map[*waiter]struct{}{}}
}

type tenant struct {
	name   string
	queues map[string]*queue
}

// kvRow is one KV row as stored (kind k).
type kvRow struct {
	value   []byte
	version int64
	expires int64 // unix microseconds, 0 = forever
	updated int64 // unix microseconds
}

func (r *kvRow) live(now int64) bool { return r != nil && (r.expires == 0 || now < r.expires) }

// waiter is a parked fetch; a write to any partition it names signals ch.
type waiter struct {
	ch chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// parking is a long poll's wait between two looks at its answer; the timer
// is made on its first wait, so an answer found at once costs none.
type parking struct{ timer *time.Timer }

// wait blocks until wt is woken, min(left, recheckInterval) passes or
// closing closes; false when the request ended first.
func (p *parking) wait(ctx context.Context, wt *waiter, left time.Duration, closing <-chan struct{}) bool {
	if p.timer == nil {
		p.timer = time.NewTimer(min(left, recheckInterval))
	} else {
		p.timer.Reset(min(left, recheckInterval))
	}
	select {
	case <-wt.ch:
	case <-p.timer.C:
	case <-closing:
	case <-ctx.Done():
		return false
	}
	return true
}

func (p *parking) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

func wakeAll(set map[*waiter]struct{}) {
	for w := range set {
		w.wake()
	}
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

// state is the in-memory metadata, small whatever is stored: tenants,
// queues and partitions, plus the KV version counter; guarded by Broker.mu.
// It is loaded at boot by a scan of the metadata kinds (q, p, m), never of
// records or KV rows.
type state struct {
	tenants map[string]*tenant
	kvSeq   int64 // last KV version issued, store-wide
	// mutations counts every applied change; tests use it to prove that a
	// refused request wrote nothing.
	mutations uint64
}

func newState() *state { return &state{tenants: map[string]*tenant{}} }

func (s *state) tenant(name string) *tenant {
	t := s.tenants[name]
	if t == nil {
		t = &tenant{name: name, queues: map[string]*queue{}}
		s.tenants[name] = t
	}
	return t
}
